"""decode_event: every way a raw message can be bad maps to its dead-letter reason."""

from __future__ import annotations

import json

import pytest

from schemas.bounds import MAX_OBJECT_CHARS
from schemas.deadletter import DeadLetterReason
from schemas.events import CrmWebhook, DialogueEvent, UserAction
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, INPUT_TOPICS, USER_ACTIONS
from schemas.validate import MAX_EVENT_BYTES, InvalidEvent, decode_event

GOOD_TURN = {
    "event_id": "dlg-1",
    "tenant_id": "northwind-fiber",
    "user_id": "u-bob",
    "session_id": "s-bob-01",
    "turn_index": 3,
    "role": "user",
    "text": "We can install Monday but not Friday.",
    "ts": "2026-03-02T11:21:00+00:00",
}


def raw(data: object) -> bytes:
    return json.dumps(data).encode("utf-8")


def reject(topic: str, message: bytes) -> InvalidEvent:
    with pytest.raises(InvalidEvent) as info:
        decode_event(topic, message)
    return info.value


def test_good_messages_decode_to_their_topic_model() -> None:
    assert isinstance(decode_event(DIALOGUE_EVENTS, raw(GOOD_TURN)), DialogueEvent)
    action = {
        "event_id": "a",
        "tenant_id": "t",
        "user_id": "u",
        "action_type": "view",
        "ts": "2026-03-02T11:21:00Z",
    }
    assert isinstance(decode_event(USER_ACTIONS, raw(action)), UserAction)
    webhook = {
        "event_id": "c",
        "tenant_id": "t",
        "user_id": "u",
        "source": "hubspot",
        "entity": "contact",
        "changes": {"tier": {"old": "silver", "new": "gold"}},
        "ts": "2026-03-02T11:21:00Z",
    }
    assert isinstance(decode_event(CRM_WEBHOOKS, raw(webhook)), CrmWebhook)


def test_unknown_topic_lists_the_valid_topics() -> None:
    error = reject("dialog.events", raw(GOOD_TURN))
    assert error.reason is DeadLetterReason.UNKNOWN_TOPIC
    for topic in INPUT_TOPICS:
        assert topic in error.detail


def test_oversized_message_is_too_large_before_parsing() -> None:
    big = raw({**GOOD_TURN, "text": "a" * MAX_EVENT_BYTES})
    error = reject(DIALOGUE_EVENTS, big)
    assert error.reason is DeadLetterReason.TOO_LARGE
    assert f"{len(big):,} bytes" in error.detail


def test_non_utf8_bytes_name_the_offset() -> None:
    error = reject(DIALOGUE_EVENTS, b'{"text": "caf\xe9"}')
    assert error.reason is DeadLetterReason.NOT_UTF8
    assert "byte 13" in error.detail  # the offset of \xe9


@pytest.mark.parametrize("message", [b"{not json", b'{"a": 1', b"", b"\xef\xbb\xbf{}"])
def test_malformed_json_says_where(message: bytes) -> None:
    error = reject(DIALOGUE_EVENTS, message)
    assert error.reason is DeadLetterReason.MALFORMED_JSON
    assert "line 1 column" in error.detail


@pytest.mark.parametrize("message", [b"[" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000])
def test_json_nested_past_the_parser_is_malformed_not_a_crash(message: bytes) -> None:
    # json.loads raises RecursionError here, which the worker's stages did not expect.
    error = reject(DIALOGUE_EVENTS, message)
    assert error.reason is DeadLetterReason.MALFORMED_JSON
    assert "nested too deeply" in error.detail


def test_a_crm_value_longer_than_a_fact_object_is_a_schema_violation() -> None:
    webhook = {
        "event_id": "c",
        "tenant_id": "t",
        "user_id": "u",
        "source": "hubspot",
        "entity": "contact",
        "ts": "2026-03-02T11:21:00Z",
    }
    at_limit = {"phone": {"old": "5" * MAX_OBJECT_CHARS, "new": "6" * MAX_OBJECT_CHARS}}
    assert isinstance(decode_event(CRM_WEBHOOKS, raw(webhook | {"changes": at_limit})), CrmWebhook)
    for side in ("old", "new"):
        past = {"phone": {side: "5" * (MAX_OBJECT_CHARS + 1)}}
        error = reject(CRM_WEBHOOKS, raw(webhook | {"changes": past}))
        assert error.reason is DeadLetterReason.SCHEMA_VIOLATION
        assert f"changes.phone.{side}" in error.detail


@pytest.mark.parametrize("data", [[GOOD_TURN], "text", 42, None])
def test_non_object_json_is_a_schema_violation(data: object) -> None:
    error = reject(DIALOGUE_EVENTS, raw(data))
    assert error.reason is DeadLetterReason.SCHEMA_VIOLATION
    assert "expected a JSON object" in error.detail


def test_missing_field_and_wrong_type_list_every_violation() -> None:
    data = {k: v for k, v in GOOD_TURN.items() if k != "session_id"} | {"turn_index": "x"}
    error = reject(DIALOGUE_EVENTS, raw(data))
    assert error.reason is DeadLetterReason.SCHEMA_VIOLATION
    assert sorted(error.errors) == [
        "session_id: Field required",
        # Strict: a string is never read as a number.
        "turn_index: Value error, expected a JSON integer, got a string",
    ]
    assert error.detail.startswith("DialogueEvent invalid: ")


def test_invalid_event_becomes_a_dead_letter_with_its_location() -> None:
    message = b"{oops"
    letter = reject(DIALOGUE_EVENTS, message).to_dead_letter(
        message, DIALOGUE_EVENTS, line=7, stage="publish"
    )
    assert letter.reason is DeadLetterReason.MALFORMED_JSON
    assert (letter.topic, letter.line, letter.stage) == (DIALOGUE_EVENTS, 7, "publish")
    assert letter.original() == message
