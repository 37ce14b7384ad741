"""The source event of a fact, read back from Kafka at its recorded position.

``fetch_source`` assigns one partition, seeks to the lineage's offset and reads
exactly that record (no consumer group offsets, nothing committed), then checks
the event id against the lineage's. A record below the log start (retention or
delete-records removed it), past the log end or of another event is reported
in ``SourceFetch.problem`` rather than raised: the caller still shows what the
stores know. ``session_context`` reads the turns before a dialogue turn on its
partition, which the extract stage needs to recompute what it decided.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from connectors.kafka_io import consumer
from schemas.events import DialogueEvent, InputEvent
from schemas.lineage import SourceLineage
from schemas.topics import Topics
from schemas.validate import InvalidEvent, decode_event

# A trace reads a handful of records; the local broker answers in milliseconds,
# and a wrong address must fail a CLI within seconds, not librdkafka's minutes.
FETCH_TIMEOUT_S = 10.0
# The session context of a dialogue turn is rebuilt from at most this many
# records before it on its partition: the sample stream's longest session has 12
# turns, so this leaves room for long sessions interleaved with many other users
# on one partition, while the read stays a few MB.
CONTEXT_SCAN_RECORDS = 5_000
_GROUP = "memstream-trace"  # never commits: only names the assigned readers


@dataclass(frozen=True)
class SourceFetch:
    """The Kafka record at a lineage's position, or why it could not be read."""

    lineage: SourceLineage
    topic: str  # the topic read: the lineage's, with the run's topic namespace
    log_start: int | None = None
    log_end: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None
    event: InputEvent | None = None
    problem: str | None = None  # None: the exact record, its event id verified


def _reader(bootstrap: str) -> Consumer:
    # read_uncommitted: the record stored at the offset, whatever its transaction.
    return consumer(bootstrap, _GROUP, read_committed=False)


def _watermarks(reader: Consumer, position: TopicPartition) -> tuple[int, int]:
    low, high = reader.get_watermark_offsets(position, timeout=FETCH_TIMEOUT_S)
    return int(low), int(high)


def _records(reader: Consumer, position: TopicPartition, until: int) -> Iterator[Message]:
    """Records of one assigned partition from ``position.offset`` up to ``until`` inclusive."""
    reader.assign([position])
    deadline = time.monotonic() + FETCH_TIMEOUT_S
    while time.monotonic() < deadline:
        msg = reader.poll(0.2)
        if msg is None:
            continue
        error = msg.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        offset = msg.offset()
        if error is not None or offset is None or offset > until:
            return
        yield msg
        if offset == until:
            return
        deadline = time.monotonic() + FETCH_TIMEOUT_S


def fetch_source(bootstrap: str, lineage: SourceLineage, topic_namespace: str = "") -> SourceFetch:
    """Assign, seek to the lineage's offset and read exactly that record.

    Lineage names the base topic (the ingest jobs strip their namespace), so
    the record is read from ``Topics(topic_namespace).name(lineage.topic)``.
    """
    topic = Topics(topic_namespace).name(lineage.topic)
    position = TopicPartition(topic, lineage.partition, lineage.offset)
    reader = _reader(bootstrap)
    try:
        try:
            low, high = _watermarks(reader, position)
        except KafkaException as exc:
            where = f"{topic}/{lineage.partition}"
            return SourceFetch(lineage, topic, problem=f"cannot read {where}: {exc.args[0].str()}")
        span = SourceFetch(lineage, topic, log_start=low, log_end=high)
        if lineage.offset < low:
            problem = (
                f"offset {lineage.offset} is below the log start {low} of "
                f"{topic}/{lineage.partition}: retention (or delete-records) removed "
                "the source event"
            )
            return replace(span, problem=problem)
        if lineage.offset >= high:
            return replace(
                span, problem=f"offset {lineage.offset} is at or past the log end {high}"
            )
        msg = next(_records(reader, position, lineage.offset), None)
    finally:
        reader.close()
    if msg is None or msg.offset() != lineage.offset:
        found = "nothing" if msg is None else f"offset {msg.offset()}"
        return replace(span, problem=f"no record at offset {lineage.offset} (read {found})")
    return _checked(msg, span)


def _checked(msg: Message, span: SourceFetch) -> SourceFetch:
    """The fetched record, its event decoded and its id checked against the lineage."""
    expected = span.lineage.event_id
    value = msg.value() or b""
    _, stamp = msg.timestamp()
    fetched = replace(span, key=msg.key(), value=value, timestamp_ms=stamp)
    try:
        event = decode_event(span.lineage.topic, value)
    except InvalidEvent as exc:
        found = _raw_event_id(value)
        if found != expected:
            return replace(fetched, problem=f"event id {found!r} is not the lineage's {expected!r}")
        return replace(fetched, problem=f"the record no longer validates: {exc}")
    if event.event_id != expected:
        problem = (
            f"the record at offset {span.lineage.offset} is event {event.event_id!r}, "
            f"not the lineage's {expected!r} (topic re-created, or a wrong lineage)"
        )
        return replace(fetched, event=event, problem=problem)
    return replace(fetched, event=event)


def _raw_event_id(value: bytes) -> str | None:
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return str(parsed.get("event_id")) if isinstance(parsed, dict) else None


def session_context(bootstrap: str, source: SourceFetch) -> list[DialogueEvent]:
    """The earlier turns of the source turn's session on its partition, oldest first."""
    turn = source.event
    if not isinstance(turn, DialogueEvent) or source.log_start is None:
        return []
    lineage = source.lineage
    start = max(source.log_start, lineage.offset - CONTEXT_SCAN_RECORDS)
    if start >= lineage.offset:
        return []
    reader = _reader(bootstrap)
    try:
        position = TopicPartition(source.topic, lineage.partition, start)
        values = [m.value() or b"" for m in _records(reader, position, lineage.offset - 1)]
    finally:
        reader.close()
    earlier: list[DialogueEvent] = []
    for value in values:
        try:
            event = decode_event(lineage.topic, value)
        except InvalidEvent:
            continue  # dead-lettered by the ingest job: never part of a context
        if (
            isinstance(event, DialogueEvent)
            and event.key == turn.key
            and event.session_id == turn.session_id
            and event.turn_index < turn.turn_index
        ):
            earlier.append(event)
    return earlier
