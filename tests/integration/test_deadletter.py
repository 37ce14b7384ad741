"""Dead-letter routing through the real broker: envelope, reason and original bytes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from connectors import kafka_admin
from connectors.kafka_io import DeadLetterPublisher, KeyedProducer, read_topic
from memstream.settings import Settings
from schemas.deadletter import MAX_ORIGINAL_BYTES, DeadLetter, DeadLetterReason
from schemas.topics import DIALOGUE_EVENTS
from schemas.validate import InvalidEvent, decode_event

GOOD = {
    "event_id": "e1",
    "tenant_id": "t1",
    "user_id": "u1",
    "session_id": "s1",
    "turn_index": 0,
    "role": "user",
    "text": "never send SMS",
    "ts": "2026-03-02T09:00:00Z",
}

BAD_INPUTS: dict[DeadLetterReason, bytes] = {
    DeadLetterReason.MALFORMED_JSON: b'{"event_id": "e1",',
    DeadLetterReason.SCHEMA_VIOLATION: json.dumps({**GOOD, "turn_index": "first"}).encode(),
    DeadLetterReason.NOT_UTF8: b'{"text": "\xff\xfe"}',
    DeadLetterReason.TOO_LARGE: json.dumps({**GOOD, "text": "a" * 2_000_000}).encode(),
}


@pytest.fixture
def dlq(kafka_bootstrap: str, settings: Settings, unique: str) -> Iterator[str]:
    """A private dead-letter topic configured like memory.dlq (large messages allowed)."""
    name = f"test.dlq.{unique}"
    config = {"max.message.bytes": str(settings.kafka.max_message_bytes)}
    kafka_admin.ensure_topics(kafka_bootstrap, [kafka_admin.TopicSpec(name, 2, config)])
    yield name
    kafka_admin.delete_topics(kafka_bootstrap, [name])


def producer_for(settings: Settings) -> KeyedProducer:
    kafka = settings.kafka
    return KeyedProducer(kafka.bootstrap, max_message_bytes=kafka.max_message_bytes)


def rejection(topic: str, raw: bytes) -> InvalidEvent:
    with pytest.raises(InvalidEvent) as info:
        decode_event(topic, raw)
    return info.value


def test_each_bad_input_arrives_with_reason_location_and_original_bytes(
    settings: Settings, dlq: str
) -> None:
    producer = producer_for(settings)
    publisher = DeadLetterPublisher(producer, topic=dlq)
    for line, (reason, raw) in enumerate(BAD_INPUTS.items(), start=1):
        error = rejection(DIALOGUE_EVENTS, raw)
        assert error.reason is reason
        publisher.publish(raw, error, DIALOGUE_EVENTS, line=line, key="t1:u1")
    unknown = json.dumps(GOOD).encode()
    publisher.publish(unknown, rejection("dialog.events", unknown), "dialog.events", offset=9)
    producer.flush()

    letters = [
        DeadLetter.model_validate_json(r.value) for r in read_topic(settings.kafka.bootstrap, dlq)
    ]

    assert publisher.sent == len(letters) == len(BAD_INPUTS) + 1
    by_reason = {letter.reason: letter for letter in letters}
    for line, (reason, raw) in enumerate(BAD_INPUTS.items(), start=1):
        letter = by_reason[reason]
        assert letter.original() == raw
        assert (letter.topic, letter.line, letter.key) == (DIALOGUE_EVENTS, line, "t1:u1")
        assert not letter.truncated
        assert letter.detail
    unknown_letter = by_reason[DeadLetterReason.UNKNOWN_TOPIC]
    assert (unknown_letter.topic, unknown_letter.offset) == ("dialog.events", 9)
    assert "dialogue.events" in unknown_letter.detail


def test_oversized_original_is_truncated_but_identifiable(settings: Settings, dlq: str) -> None:
    raw = b"x" * (MAX_ORIGINAL_BYTES + 1000)
    producer = producer_for(settings)
    DeadLetterPublisher(producer, topic=dlq).publish(raw, rejection(DIALOGUE_EVENTS, raw), "t")
    producer.flush()

    (record,) = read_topic(settings.kafka.bootstrap, dlq)
    letter = DeadLetter.model_validate_json(record.value)
    assert letter.reason is DeadLetterReason.TOO_LARGE
    assert letter.truncated
    assert letter.original() == raw[:MAX_ORIGINAL_BYTES]
    assert (letter.original_size, letter.original_sha256) == (
        len(raw),
        hashlib.sha256(raw).hexdigest(),
    )
