"""Where the Faust ingest worker runs: its addresses, namespace and batching (``WorkerConfig``).

Plain configuration, kept apart from the worker itself (jobs/ingest/faust_worker.py:
the agent, the app and the commit discipline); ``input_partitions`` checks
the topics the worker needs before it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors import kafka_admin
from memstream.settings import IngestSettings, Settings
from schemas.topics import INPUT_TOPICS, OUTPUT_TOPICS, Topics

# The defaults of a bare construction: the settings' own (one place for them).
_INGEST = IngestSettings()
_TUNABLES = {"group_id", "batch_size", "batch_within_s"}


@dataclass(frozen=True)
class WorkerConfig:
    """What the worker needs; ``from_settings`` fills it from the settings object.

    The tunables are the settings' ``ingest`` section (memstream/settings.py
    documents them); a bare construction (tests) gets that section's defaults.
    """

    bootstrap: str
    data_dir: Path
    max_message_bytes: int
    namespace: str = ""
    group_id: str = _INGEST.group_id
    batch_size: int = _INGEST.batch_size
    batch_within_s: float = _INGEST.batch_within_s

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> WorkerConfig:
        """Addresses and tunables from the settings; ``overrides`` win."""
        params: dict[str, Any] = settings.ingest.model_dump(include=_TUNABLES)
        params.update(overrides)
        return cls(
            bootstrap=settings.kafka.bootstrap,
            data_dir=settings.state_dir / "faust",
            max_message_bytes=settings.kafka.max_message_bytes,
            **params,
        )

    @property
    def app_id(self) -> str:
        """The Faust app id: consumer group and changelog topic prefix."""
        return self.namespace + self.group_id

    @property
    def topics(self) -> Topics:
        """The topic names under this namespace."""
        return Topics(self.namespace)

    def topic(self, name: str) -> str:
        """The namespaced name of a topic."""
        return self.topics.name(name)


def input_partitions(config: WorkerConfig) -> int:
    """The common partition count of the input topics; fail clearly if a topic is missing."""
    wanted = [config.topic(t) for t in (*INPUT_TOPICS, *OUTPUT_TOPICS)]
    counts = kafka_admin.partition_counts(config.bootstrap, wanted)
    missing = [t for t in wanted if t not in counts]
    if missing:
        raise RuntimeError(
            f"missing topics on {config.bootstrap}: {', '.join(missing)} "
            "(`memstream infra up` creates the default ones)"
        )
    inputs = {counts[config.topic(t)] for t in INPUT_TOPICS}
    if len(inputs) != 1:
        # The table co-partitions with every input topic; unequal counts would
        # put a user's state on a partition another worker owns.
        raise RuntimeError(f"input topics must have equal partition counts, got {sorted(inputs)}")
    return inputs.pop()
