"""What bench_ingest.py reads back: output records with their times, and a job's events-in counter.

- ``read_stamped``: every record of some topics with its broker timestamp;
- ``Watcher``: a read_committed consumer in a thread noting when each output
  first becomes visible;
- ``processing_rate``: events/s from a job's ``memstream_ingest_events_in_total``
  counter (its Prometheus endpoint), for a job whose outputs come in bursts.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from connectors import kafka_admin
from connectors.kafka_io import consumer


@dataclass(frozen=True)
class Stamped:
    """A record with its position and broker/producer timestamp (ms)."""

    topic: str
    partition: int
    offset: int
    ts_ms: int
    value: bytes


def read_stamped(bootstrap: str, topics: Sequence[str]) -> list[Stamped]:
    """Every record of ``topics`` from the beginning to the current end."""
    return list(iter_stamped(bootstrap, topics))


def iter_stamped(bootstrap: str, topics: Sequence[str]) -> Iterator[Stamped]:
    """``read_stamped`` one record at a time (a long topic need not fit in memory)."""
    counts = kafka_admin.partition_counts(bootstrap, topics)
    reader = consumer(bootstrap, "bench-reader", **{"enable.partition.eof": True})
    reader.assign(
        [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in counts.items() for p in range(n)]
    )
    pending = {(t, p) for t, n in counts.items() for p in range(n)}
    try:
        while pending:
            msg = reader.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                pending.discard((str(msg.topic()), int(msg.partition() or 0)))
                continue
            if error is not None:
                raise RuntimeError(error.str())
            yield Stamped(
                str(msg.topic()),
                int(msg.partition() or 0),
                int(msg.offset() or 0),
                msg.timestamp()[1],
                msg.value() or b"",
            )
    finally:
        reader.close()


class Watcher:
    """A read_committed consumer polling the output topics in a thread: when each output is seen.

    What a sink sees: for the Flink job that is the checkpoint's transaction
    commit, not the append (a transactional record is appended, with its
    append time, long before it becomes readable).
    """

    def __init__(self, bootstrap: str, topics: Sequence[str], source: Callable[[str, bytes], Any]):
        """Start polling ``topics`` from the beginning; ``source`` names an output's source."""
        counts = kafka_admin.partition_counts(bootstrap, topics)
        self._reader = consumer(bootstrap, f"bench-watcher-{uuid.uuid4().hex[:8]}")
        self._reader.assign(
            [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in counts.items() for p in range(n)]
        )
        self._source = source
        self.first_seen_ms: dict[Any, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="bench-watcher", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        try:
            while not self._stop.is_set():
                msg = self._reader.poll(0.05)
                if msg is None or msg.error() is not None:
                    continue
                seen_ms = time.time_ns() // 1_000_000
                source = self._source(str(msg.topic()), msg.value() or b"")
                self.first_seen_ms.setdefault(source, seen_ms)
        finally:
            self._reader.close()

    def close(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join(timeout=10)


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def events_in(port: int) -> float | None:
    """The job's ``memstream_ingest_events_in_total`` over all topics (None: not serving yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as page:  # noqa: S310
            text = page.read().decode()
    except OSError:
        return None
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("memstream_ingest_events_in_total{")
    )


def processing_rate(port: int, events: int, timeout_s: float) -> float:
    """Events/s while the job works through ``events``, from its events-in counter.

    For the Flink job, whose outputs reach Kafka in bursts at checkpoints (the
    Python operator's bundles and the transactional sink), so output times
    cannot time its processing.
    """
    deadline = time.monotonic() + timeout_s
    first: tuple[float, float] | None = None
    while time.monotonic() < deadline:
        count = events_in(port)
        now = time.monotonic()
        if count:
            first = first or (now, count)
            if count >= events:
                return (count - first[1]) / max(now - first[0], 1e-3)
        time.sleep(0.2)
    raise RuntimeError(f"the job did not process {events} events in time")
