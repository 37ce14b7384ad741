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
from memstream.settings import Settings
from schemas.topics import INPUT_TOPICS, OUTPUT_TOPICS, Topics


@dataclass(frozen=True)
class WorkerConfig:
    """What the worker needs; ``from_settings`` fills it from the settings object.

    The defaults below are the fallbacks of a bare construction (tests);
    ``from_settings`` takes them from the settings' ``ingest`` section.
    """

    bootstrap: str
    data_dir: Path
    max_message_bytes: int
    namespace: str = ""
    group_id: str = "memstream-ingest"
    # 64 turns fill one spaCy ``pipe`` batch and one MiniLM batch well (both
    # several times faster per item batched, pipelines/ingest.py); measured
    # here: 40 turns in 1.3-1.6 s on the 2 shared cores at load ~10, so a full
    # batch stays a few seconds, far inside every Kafka timeout.
    batch_size: int = 64
    # How long a partial batch waits for more records: bounds the added
    # latency at low rates (docs/architecture.md: p95 <= 800 ms end to end).
    batch_within_s: float = 0.02

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> WorkerConfig:
        """Addresses and tunables from the settings; ``overrides`` win."""
        ingest = settings.ingest
        params: dict[str, Any] = {
            "group_id": ingest.group_id,
            "batch_size": ingest.batch_size,
            "batch_within_s": ingest.batch_within_s,
        }
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
