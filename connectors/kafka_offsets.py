"""Consumer-group offsets from Kafka: groups, committed offsets, log ends, record times.

What ``memstream lag`` reads, through the Admin API (the same requests as
``kafka-consumer-groups --describe``) plus one assigned consumer for record
timestamps. Log ends are always listed with isolation level read_committed:
that returns the last stable offset, which is the high watermark for a topic
without transactions and, for a transactional one (``memory.ops``), stops before
the first open transaction — the furthest a read_committed consumer can get.
Plain arguments (a bootstrap string), no settings; every call has a time-out.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

# Same reasoning as kafka_admin.DEFAULT_TIMEOUT_S: a fresh broker answers well
# within it; a wrong address fails without hanging a CLI.
DEFAULT_TIMEOUT_S = 15.0

Position = tuple[str, int]  # (topic, partition)


class UnknownGroup(LookupError):
    """A requested consumer group does not exist on the cluster."""

    def __init__(self, missing: Iterable[str], known: Iterable[str]) -> None:
        self.missing = sorted(missing)
        self.known = sorted(known)
        shown = ", ".join(self.known) or "none"
        super().__init__(f"unknown consumer group(s): {', '.join(self.missing)}; known: {shown}")


class OffsetsUnavailable(RuntimeError):
    """The broker could not be reached or refused an offsets request."""


@dataclass(frozen=True)
class GroupInfo:
    """A consumer group's coordinator state and how many members it has now."""

    group_id: str
    state: str  # Stable, Empty, PreparingRebalance, ... (Kafka's names, lower-cased)
    members: int


def _state_name(state: ConsumerGroupState) -> str:
    return str(state.name).lower()


class OffsetReader:
    """Reads consumer-group positions and log ends from one cluster."""

    def __init__(self, bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self._admin = AdminClient({"bootstrap.servers": bootstrap})

    def _result(self, future: Future[Any], what: str) -> Any:
        try:
            return future.result(timeout=self._timeout_s)
        except KafkaException as exc:
            raise OffsetsUnavailable(f"{what} on {self._bootstrap}: {exc}") from exc
        except TimeoutError as exc:
            raise OffsetsUnavailable(
                f"{what} on {self._bootstrap}: no answer within {self._timeout_s} s"
            ) from exc

    def groups(self) -> list[str]:
        """Ids of every consumer group the cluster knows, sorted."""
        future = self._admin.list_consumer_groups(request_timeout=self._timeout_s)
        listing = self._result(future, "listing consumer groups")
        return sorted(group.group_id for group in listing.valid)

    def require(self, groups: Iterable[str]) -> None:
        """Raise UnknownGroup naming the groups in ``groups`` that do not exist."""
        known = self.groups()
        missing = set(groups) - set(known)
        if missing:
            raise UnknownGroup(missing, known)

    def describe(self, groups: Iterable[str]) -> dict[str, GroupInfo]:
        """State and member count of each group."""
        names = list(groups)
        if not names:
            return {}
        futures = self._admin.describe_consumer_groups(names, request_timeout=self._timeout_s)
        infos: dict[str, GroupInfo] = {}
        for name, future in futures.items():
            description = self._result(future, f"describing group {name}")
            infos[name] = GroupInfo(
                group_id=name,
                state=_state_name(description.state),
                members=len(description.members),
            )
        return infos

    def committed(self, group: str) -> dict[Position, int]:
        """The group's committed offset per (topic, partition); uncommitted ones are absent."""
        request = [ConsumerGroupTopicPartitions(group)]
        futures = self._admin.list_consumer_group_offsets(request, request_timeout=self._timeout_s)
        answer = self._result(futures[group], f"fetching the offsets of group {group}")
        offsets: dict[Position, int] = {}
        for tp in answer.topic_partitions:
            if tp.error is not None:
                raise OffsetsUnavailable(
                    f"offset of {group} on {tp.topic}[{tp.partition}]: {tp.error}"
                )
            if tp.offset >= 0:  # negative: a logical "no offset" value
                offsets[(tp.topic, tp.partition)] = tp.offset
        return offsets

    def log_ends(self, positions: Iterable[Position]) -> dict[Position, int]:
        """The last stable offset (read_committed list-offsets) of each partition.

        Partitions of topics that no longer exist are left out (a group keeps
        its offsets of a deleted topic until they expire).
        """
        try:
            topics = self._admin.list_topics(timeout=self._timeout_s).topics
        except KafkaException as exc:
            raise OffsetsUnavailable(f"listing topics on {self._bootstrap}: {exc}") from exc
        request = {
            TopicPartition(topic, partition): OffsetSpec.latest()
            for topic, partition in set(positions)
            if topic in topics and partition in topics[topic].partitions
        }
        if not request:
            return {}
        futures = self._admin.list_offsets(
            request,
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=self._timeout_s,
        )
        ends: dict[Position, int] = {}
        for tp, future in futures.items():
            info = self._result(future, f"listing the end offset of {tp.topic}[{tp.partition}]")
            ends[(tp.topic, tp.partition)] = int(info.offset)
        return ends

    def record_times(self, offsets: Mapping[Position, int]) -> dict[Position, float]:
        """Append time (epoch seconds) of the first committed record at or after each offset.

        Reads one record per partition with an assigned consumer (no group
        membership, no commit) at read_committed, so a transaction marker or an
        aborted record at the offset is skipped to the next visible record. A
        partition with no visible record there before its end is left out.
        """
        if not offsets:
            return {}
        reader = Consumer(
            {
                "bootstrap.servers": self._bootstrap,
                # Required by librdkafka; never joined or committed: assign() only.
                "group.id": "memstream-lag-probe",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                # An offset already deleted by retention restarts at the oldest
                # record kept: the oldest unconsumed one the group can still read.
                "auto.offset.reset": "earliest",
            }
        )
        pending = dict(offsets)
        times: dict[Position, float] = {}
        reader.assign([TopicPartition(t, p, o) for (t, p), o in pending.items()])
        deadline = time.monotonic() + self._timeout_s
        try:
            while pending and time.monotonic() < deadline:
                msg = reader.poll(0.2)
                if msg is None:
                    continue
                error = msg.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise OffsetsUnavailable(f"reading {msg.topic()}[{msg.partition()}]: {error}")
                position = (str(msg.topic()), msg.partition())
                if position not in pending:
                    continue
                del pending[position]
                reader.pause([TopicPartition(*position)])  # one record is all we need
                kind, stamp_ms = msg.timestamp()
                if error is None and kind != TIMESTAMP_NOT_AVAILABLE:
                    times[position] = stamp_ms / 1000
        finally:
            reader.close()
        if pending:
            shown = ", ".join(f"{t}[{p}]" for t, p in sorted(pending))
            raise OffsetsUnavailable(f"no record time read within {self._timeout_s} s for {shown}")
        return times
