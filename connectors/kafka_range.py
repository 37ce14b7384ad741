"""Bounded reads of a topic for replays: partition bounds, offsets by time, a range's records.

What ``memstream replay`` needs from Kafka and nothing more: the oldest
retained and the next offset of each partition, the first offset at or after a
timestamp, the timestamp of a partition's oldest retained record, and the
records of ``[start, end)`` ranges with their timestamps. Every read uses an
assigned consumer (no group membership, nothing committed), so a replay leaves
no trace on the cluster. Plain arguments (a bootstrap string), no settings;
every call has a time-out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from connectors import kafka_admin

# Same reasoning as kafka_admin.DEFAULT_TIMEOUT_S: a healthy broker answers
# well within it; a wrong address fails without hanging a CLI.
DEFAULT_TIMEOUT_S = 15.0
# Reading a range has a budget of its own: ~400 sample records take well under
# a second; a range that is not read within this means the broker is stuck.
READ_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class PartitionBounds:
    """The offsets one partition holds now: ``[log_start, log_end)``."""

    topic: str
    partition: int
    log_start: int  # oldest retained offset (> 0 once retention deleted records)
    log_end: int  # the offset the next record will get


@dataclass(frozen=True)
class TimedRecord:
    """One record of a range, with the timestamp Kafka keeps for it (CreateTime by default)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes


class RangeReader:
    """Reads bounds and ranges of the partitions of one cluster."""

    def __init__(self, bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s

    def _consumer(self) -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                # Required by librdkafka; never joined or committed: assign() only.
                "group.id": "memstream-replay",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                # A start that retention deleted after the replay checked the
                # bounds (a moment before) restarts at the oldest retained record.
                "auto.offset.reset": "earliest",
            }
        )

    def partition_counts(self, topics: Sequence[str]) -> dict[str, int]:
        """Partition count of each named topic that exists (missing ones are left out)."""
        return kafka_admin.partition_counts(self.bootstrap, topics, self.timeout_s)

    def bounds(self, topic: str, partitions: Sequence[int]) -> list[PartitionBounds]:
        """``[log_start, log_end)`` of each partition."""
        probe = self._consumer()
        try:
            found = []
            for p in partitions:
                low, high = probe.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=self.timeout_s
                )
                found.append(PartitionBounds(topic, p, int(low), int(high)))
            return found
        finally:
            probe.close()

    def offsets_for_time(
        self, topic: str, partitions: Sequence[int], at: datetime
    ) -> dict[int, int | None]:
        """Per partition, the first offset whose timestamp is at or after ``at`` (None: none)."""
        stamp = int(at.timestamp() * 1000)
        probe = self._consumer()
        try:
            answer = probe.offsets_for_times(
                [TopicPartition(topic, p, stamp) for p in partitions], timeout=self.timeout_s
            )
        finally:
            probe.close()
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in answer}

    def first_times(self, bounds: Sequence[PartitionBounds]) -> dict[int, datetime]:
        """The timestamp of the oldest retained record of each non-empty partition of one topic."""
        wanted = [b for b in bounds if b.log_end > b.log_start]
        found: dict[int, datetime] = {}
        oldest = [(b.topic, b.partition, b.log_start, b.log_start + 1) for b in wanted]
        for record in self.read(oldest):
            found[record.partition] = datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        return found

    def read(self, ranges: Sequence[tuple[str, int, int, int]]) -> list[TimedRecord]:
        """The records of ``(topic, partition, start, end)`` ranges, offset order per partition.

        ``end`` is exclusive. A partition is done once a record at or past
        ``end - 1`` arrived or its end was reached (records of aborted
        transactions and transaction markers have offsets but are never
        delivered). Raises TimeoutError when a range is not read within
        READ_TIMEOUT_S, RuntimeError on a read error.
        """
        todo = {(t, p): (start, end) for t, p, start, end in ranges if end > start}
        if not todo:
            return []
        reader = self._consumer()
        reader.assign([TopicPartition(t, p, start) for (t, p), (start, _) in todo.items()])
        records: list[TimedRecord] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            while todo:
                if time.monotonic() > deadline:
                    shown = ", ".join(f"{t}[{p}]" for t, p in sorted(todo))
                    raise TimeoutError(f"ranges not read within {READ_TIMEOUT_S:.0f} s: {shown}")
                msg = reader.poll(0.2)
                if msg is None:
                    continue
                position = (str(msg.topic()), msg.partition() or 0)
                error = msg.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    todo.pop(position, None)
                    continue
                if error is not None:
                    raise RuntimeError(f"reading {position[0]}[{position[1]}]: {error.str()}")
                if position not in todo:
                    continue  # a partition already done, still fetching
                start, end = todo[position]
                offset = msg.offset() or 0
                if offset < start:
                    continue
                if offset < end:
                    kind, stamp = msg.timestamp()
                    records.append(
                        TimedRecord(
                            topic=position[0],
                            partition=position[1],
                            offset=offset,
                            timestamp_ms=stamp if kind != TIMESTAMP_NOT_AVAILABLE else 0,
                            key=msg.key(),
                            value=msg.value() or b"",
                        )
                    )
                if offset >= end - 1:
                    del todo[position]
                    reader.pause([TopicPartition(*position)])
        except KafkaException as exc:
            raise RuntimeError(f"reading from {self.bootstrap}: {exc}") from exc
        finally:
            reader.close()
        return records
