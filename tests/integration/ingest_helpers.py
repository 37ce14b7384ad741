"""Shared helpers of the ingest-engine tests: private topics, publishing, the worker, reading back.

Every helper takes a ``namespace`` (a prefix of every topic and of the
consumer group) so that a test's topics and offsets are its own. The worker
runs as a real subprocess (``python -m jobs.cli.worker``), the way an operator
runs it; the helpers watch it through Kafka only: committed offsets of its
group and the records on its output topics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer, Record, end_offsets, read_topic
from connectors.kafka_offsets import OffsetReader
from memstream.data import sample_dir
from schemas.deadletter import DeadLetter
from schemas.ops import MemoryOperation
from schemas.topics import ALL_TOPICS, CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS, Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = sample_dir()
GROUP_ID = "memstream-ingest"  # the worker's default group id (before the namespace)
# Private topics accept messages as large as the project's topics do
# (settings.kafka.max_message_bytes), so an oversized record reaches the worker.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# Loading spaCy, Flair, MiniLM and TransE plus joining the group took 20-95 s
# on the 2 shared cores (load ~12) and a batch of 8 turns up to 5 s; a worker
# that has not caught up within this is stuck.
CATCH_UP_TIMEOUT_S = 240.0
# MiniLM's batched forward pass pads to the longest text of the batch, which
# moves the last bits of a vector with the batch's composition; decisions
# (ids, values, versions, validity) must match exactly, vectors to this.
VECTOR_TOLERANCE = 1e-5
# The NLP libraries must never reach for a hub (docs/dependencies.md), in tests least of all.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

Message = tuple[str | None, bytes]  # (key, value)


def create_topics(bootstrap: str, namespace: str, partitions: int) -> None:
    """Create every memstream topic under ``namespace``."""
    config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    specs = [
        kafka_admin.TopicSpec(Topics(namespace).name(t), partitions, config) for t in ALL_TOPICS
    ]
    kafka_admin.ensure_topics(bootstrap, specs)


def delete_topics(bootstrap: str, namespace: str) -> None:
    """Delete the namespace's topics (the worker's changelog included) and consumer groups."""
    mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
    kafka_admin.delete_topics(bootstrap, mine)
    # The worker's, Flink's and the sink's groups share the prefix; left behind they
    # show up in `memstream lag` and on the dashboard forever.
    kafka_admin.delete_groups_with_prefix(bootstrap, namespace)


def out_of_bounds(topic: str) -> list[Message]:
    """Events of ``topic`` valid but for one value over its limit (issue 15's poison first).

    Each must become a schema_violation dead letter: before the bounds, the
    first one passed validation and stopped the Faust worker at the state's
    changelog write ("Integer exceeds 64-bit range").
    """
    line = (SAMPLE_DIR / f"{topic}.jsonl").read_bytes().splitlines()[0]
    event = json.loads(line) | {"tenant_id": "acme", "user_id": "mallory"}
    deep: object = 1
    for _ in range(5):  # one level deeper than a properties map may go
        deep = {"a": deep}
    changes: dict[str, list[object]] = {
        DIALOGUE_EVENTS: [
            {"turn_index": 18446744073709551616},
            {"turn_index": "3"},
            {"turn_index": True},
            {"schema_version": True},
            {"ts": 12345},
            {"ts": "1970-01-01T00:00:00Z"},
            {"metadata": {"nested": {"a": 1}}},
        ],
        USER_ACTIONS: [
            {"duration_ms": 2**63},
            {"properties": deep},
            {"ts": "2100-01-01T00:00:00Z"},
        ],
        CRM_WEBHOOKS: [
            {"changes": {f"f{i}": {"new": i} for i in range(257)}},
            {"changes": {"phone": {"new": "5" * 4097}}},
            {"ts": 12345},
        ],
    }[topic]
    return [
        ("acme:mallory", json.dumps(event | change | {"event_id": f"bound-{topic}-{i}"}).encode())
        for i, change in enumerate(changes)
    ]


# One shopper's actions for the behaviour window (issue 16): five views of one
# product (an interest from the third, a new version at each further view) and
# two searches that drift. The sample stream has no such user.
BEHAVIOUR_KEY = "acme:shopper-1"
BEHAVIOUR_VIEWS = 5


def behaviour_messages() -> list[Message]:
    """The shopper's actions, in time order within a day (one window)."""
    base = {"schema_version": 1, "tenant_id": "acme", "user_id": "shopper-1", "session_id": "w1"}
    events = [
        base
        | {
            "event_id": f"shop-view-{i}",
            "ts": f"2026-03-02T10:{10 * i:02d}:00Z",
            "action_type": "view",
            "target_id": "sku-nc-700",
            "duration_ms": 45_000,
            "properties": {"name": "Noise-cancelling earphones"},
        }
        for i in range(BEHAVIOUR_VIEWS)
    ]
    for i, query in enumerate(("wireless earphones", "noise-cancelling earphone reviews")):
        search = {"query": query}
        events.insert(
            2 + 3 * i,
            base
            | {
                "event_id": f"shop-search-{i}",
                "ts": f"2026-03-02T10:{10 * (1 + 3 * i) + 5:02d}:00Z",
                "action_type": "search",
                "properties": search,
            },
        )
    return [(BEHAVIOUR_KEY, json.dumps(event).encode()) for event in events]


def sample_messages(topic: str, limit: int | None = None) -> list[Message]:
    """The first ``limit`` events of the sample stream of ``topic``, keyed ``tenant:user``."""
    lines = (SAMPLE_DIR / f"{topic}.jsonl").read_bytes().splitlines()
    messages: list[Message] = []
    for line in lines[:limit]:
        event = json.loads(line)
        messages.append((f"{event['tenant_id']}:{event['user_id']}", line))
    return messages


def publish(bootstrap: str, topic: str, messages: Iterable[Message]) -> None:
    """Send ``messages`` to ``topic`` in order (murmur2 by key) and wait for every ack."""
    producer = KeyedProducer(
        bootstrap, client_id="memstream-test", max_message_bytes=MAX_MESSAGE_BYTES
    )
    for key, value in messages:
        producer.send(topic, value, key=key)
    producer.flush()


class Worker:
    """One ``memstream worker`` subprocess on a namespace, its output in a log file."""

    def __init__(self, namespace: str, log_path: Path, *extra_args: str) -> None:
        """Start the worker; ``extra_args`` are more ``memstream worker`` options."""
        self.namespace = namespace
        self.log_path = log_path
        self.extra_args = extra_args
        env = {**os.environ, **_OFFLINE_ENV}
        command = [sys.executable, "-m", "jobs.cli.worker", "--namespace", namespace]
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [*command, *extra_args], cwd=REPO_ROOT, env=env, stdout=log, stderr=log
            )

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a power cut."""
        self.process.kill()
        self.process.wait(timeout=30)

    def restart(self) -> Worker:
        """A new worker process with the same namespace, log file and options."""
        return Worker(self.namespace, self.log_path, *self.extra_args)

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait: the graceful stop; returns the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the worker's log, for assertion messages."""
        return self.log_path.read_text(errors="replace")[-chars:]


def committed(
    reader: OffsetReader, namespace: str, ends: Mapping[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """The worker group's committed offset for every position of ``ends`` (0 if none yet)."""
    positions = reader.committed(namespace + GROUP_ID)
    return {position: positions.get(position, 0) for position in ends}


def log_ends(bootstrap: str, topics: Sequence[str]) -> dict[tuple[str, int], int]:
    """The end offset of every partition of ``topics``."""
    return {(t, p): end for t in topics for p, end in end_offsets(bootstrap, t).items()}


def wait_caught_up(
    bootstrap: str, namespace: str, topics: Sequence[str], worker: Worker
) -> dict[tuple[str, int], int]:
    """Wait until the worker has committed the end of every partition of ``topics``."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    ends = log_ends(bootstrap, topics)
    reader = OffsetReader(bootstrap)
    while time.monotonic() < deadline:
        if not worker.alive():
            raise AssertionError(f"worker exited while catching up:\n{worker.log_tail()}")
        positions = committed(reader, namespace, ends)
        if positions == ends:
            return positions
        time.sleep(0.5)
    raise AssertionError(
        f"worker did not catch up within {CATCH_UP_TIMEOUT_S} s "
        f"(committed {committed(reader, namespace, ends)}, ends {ends}):\n"
        f"{worker.log_tail()}"
    )


@dataclass(frozen=True)
class Outputs:
    """Everything the worker produced on a namespace."""

    ops: list[Record]
    pending: list[Record]
    dead_letters: list[DeadLetter]

    def op_ids(self) -> set[str]:
        """Distinct op ids on ``memory.ops``."""
        return {parse_op(r).op_id for r in self.ops}


def parse_op(record: Record) -> MemoryOperation:
    """A ``memory.ops`` record as the model it must validate as."""
    return MemoryOperation.model_validate_json(record.value)


def read_outputs(bootstrap: str, namespace: str) -> Outputs:
    """Read the namespace's output topics to their end."""
    return Outputs(
        ops=read_topic(bootstrap, Topics(namespace).memory_ops),
        pending=read_topic(bootstrap, Topics(namespace).pending),
        dead_letters=[
            DeadLetter.model_validate_json(r.value)
            for r in read_topic(bootstrap, Topics(namespace).dlq)
        ],
    )


def same_op(left: str | bytes, right: str | bytes) -> bool:
    """Whether two serialised ops are the same decision, their vectors within VECTOR_TOLERANCE."""
    a, b = MemoryOperation.model_validate_json(left), MemoryOperation.model_validate_json(right)
    vectors_a, vectors_b = _vectors(a), _vectors(b)
    if len(vectors_a) != len(vectors_b):
        return False
    close = all(
        abs(x - y) <= VECTOR_TOLERANCE
        for va, vb in zip(vectors_a, vectors_b, strict=True)
        for x, y in zip(va, vb, strict=True)
    )
    return close and _decision(a) == _decision(b)


def _vectors(op: MemoryOperation) -> list[list[float]]:
    # MiniLM's floats move in the last digits with the batch a text is padded in.
    if op.episode is not None:
        return [op.episode.vector or []]
    encoding = op.record.encoding if op.record is not None else None
    if encoding is None:
        return []
    return [encoding.transe, encoding.text, encoding.combined, list(encoding.hashed.values())]


def _decision(op: MemoryOperation) -> dict[str, Any]:
    return op.model_dump(mode="json", exclude={"record": {"encoding"}, "episode": {"vector"}})
