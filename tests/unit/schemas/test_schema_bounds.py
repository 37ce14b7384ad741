"""Input bounds: every value of an input event fits where it is stored, or is a dead letter.

Each limit of schemas/bounds.py (docs/architecture.md, "Input limits") is
tested at its edge: the last accepted value and the first refused one, through
``decode_event`` (the Kafka path) with the dead-letter reason and the field.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.bounds import (
    INT64_MAX,
    MAX_CRM_FIELDS,
    MAX_KEY_CHARS,
    MAX_LIST_ITEMS,
    MAX_MAP_KEYS,
    MAX_VALUE_CHARS,
)
from schemas.deadletter import DeadLetterReason
from schemas.events import ActionType, UserAction
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS
from schemas.validate import InvalidEvent, decode_event

TURN: dict[str, Any] = {
    "event_id": "dlg-1",
    "tenant_id": "northwind-fiber",
    "user_id": "u-bob",
    "session_id": "s-bob-01",
    "turn_index": 3,
    "role": "user",
    "text": "We can install Monday but not Friday.",
    "ts": "2026-03-02T11:21:00Z",
}
ACTION: dict[str, Any] = {
    "event_id": "act-1",
    "tenant_id": "northwind-fiber",
    "user_id": "u-bob",
    "ts": "2026-03-02T11:21:00Z",
    "action_type": "click",
}
CRM: dict[str, Any] = {
    "event_id": "crm-1",
    "tenant_id": "northwind-fiber",
    "user_id": "u-bob",
    "ts": "2026-03-02T11:21:00Z",
    "source": "salesforce",
    "entity": "contact",
    "changes": {"phone": {"old": None, "new": "555-0142"}},
}
BASE = {DIALOGUE_EVENTS: TURN, USER_ACTIONS: ACTION, CRM_WEBHOOKS: CRM}


def decode(topic: str, **fields: Any) -> Any:
    return decode_event(topic, json.dumps(BASE[topic] | fields).encode("utf-8"))


def refused(topic: str, **fields: Any) -> InvalidEvent:
    with pytest.raises(InvalidEvent) as info:
        decode(topic, **fields)
    assert info.value.reason is DeadLetterReason.SCHEMA_VIOLATION
    return info.value


def deep(depth: int) -> object:
    """An object ``depth`` levels deep: ``deep(2) == {"a": {"a": 1}}``."""
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def test_the_poison_turn_index_of_issue_15_is_a_schema_violation_naming_the_field() -> None:
    error = refused(DIALOGUE_EVENTS, turn_index=18446744073709551616)
    assert error.errors == ["turn_index: Input should be less than or equal to 9223372036854775807"]


@pytest.mark.parametrize(
    ("topic", "name"), [(DIALOGUE_EVENTS, "turn_index"), (USER_ACTIONS, "duration_ms")]
)
def test_integer_fields_are_64_bit(topic: str, name: str) -> None:
    assert getattr(decode(topic, **{name: INT64_MAX}), name) == INT64_MAX
    assert name in refused(topic, **{name: INT64_MAX + 1}).detail
    assert name in refused(topic, **{name: -1}).detail


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("ts", 12345, "ts must be an RFC 3339 time"),
        ("ts", "2026-03-02T11:21:00", "ts must be an RFC 3339 time with an offset"),
        ("schema_version", True, "expected a JSON integer, got a boolean"),
        ("turn_index", "3", "expected a JSON integer, got a string"),
        ("turn_index", True, "expected a JSON integer, got a boolean"),
        ("turn_index", 3.5, "expected a JSON integer, got a number with a fraction"),
    ],
)
def test_kafka_input_is_strict_like_the_http_api(name: str, value: object, says: str) -> None:
    error = refused(DIALOGUE_EVENTS, **{name: value})
    assert error.errors[0].startswith(f"{name}: ")
    assert says in error.detail


def test_a_whole_float_is_the_integer_json_schema_says_it_is() -> None:
    # "type": "integer" admits 3.0; the model agrees rather than diverge.
    event = decode(DIALOGUE_EVENTS, turn_index=3.0, schema_version=1.0)
    assert event.turn_index == 3
    assert type(event.turn_index) is int


@pytest.mark.parametrize(
    "ts",
    [
        "2000-01-01T00:00:00Z",
        "2099-12-31T23:59:59.999999-12:00",
        "2024-02-29T00:00:00+05:30",
        "2000-02-29T00:00:00Z",
    ],
)
def test_event_times_in_range_are_accepted(ts: str) -> None:
    assert decode(DIALOGUE_EVENTS, ts=ts).ts == datetime.fromisoformat(ts)


@pytest.mark.parametrize(
    "ts",
    [
        "1999-12-31T23:59:59Z",  # before 2000
        "2100-01-01T00:00:00Z",  # after 2099
        "1970-01-01T00:00:00Z",  # epoch zero: a producer's unset clock
        "2025-02-29T00:00:00Z",  # not a leap year
        "2026-04-31T00:00:00Z",  # April has 30 days
        "2026-03-02T09:00:60Z",  # leap seconds are not times in Python
        "2026-03-02 09:00:00Z",  # RFC 3339's T
        "2026-03-02T09:00:00.1234567Z",  # beyond microseconds
        "2026-03-02",  # a date is not a time
    ],
)
def test_event_times_out_of_range_or_form_are_refused(ts: str) -> None:
    assert "ts must be an RFC 3339 time" in refused(DIALOGUE_EVENTS, ts=ts).detail


def test_python_producers_still_pass_datetimes_within_the_years() -> None:
    ts = datetime(2026, 3, 2, 9, tzinfo=UTC)
    assert (
        UserAction(
            event_id="e-1", tenant_id="t", user_id="u", ts=ts, action_type=ActionType.CLICK
        ).ts
        == ts
    )
    with pytest.raises(ValidationError, match="ts must be in the years 2000-2099"):
        UserAction(
            event_id="e-1",
            tenant_id="t",
            user_id="u",
            ts=datetime(2100, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            action_type=ActionType.CLICK,
        )


@pytest.mark.parametrize(
    ("name", "longest"),
    [("tenant_id", 64), ("user_id", 64), ("session_id", 64), ("event_id", 128), ("turn_id", 128)],
)
def test_ids_have_a_length_limit(name: str, longest: int) -> None:
    assert getattr(decode(DIALOGUE_EVENTS, **{name: "x" * longest}), name) == "x" * longest
    assert name in refused(DIALOGUE_EVENTS, **{name: "x" * (longest + 1)}).detail


@pytest.mark.parametrize("event_id", ["a b", "a\u0085", "a\ufeff", "a\u3000", "a\x00", "a\t"])
def test_event_ids_hold_no_space_or_control_character(event_id: str) -> None:
    assert "event_id" in refused(DIALOGUE_EVENTS, event_id=event_id).detail


def test_dialogue_metadata_is_flat_and_bounded() -> None:
    most = {f"k{i}": "v" * MAX_VALUE_CHARS for i in range(MAX_MAP_KEYS)}
    assert decode(DIALOGUE_EVENTS, metadata=most).metadata == most
    assert "metadata" in refused(DIALOGUE_EVENTS, metadata=most | {"one-more": 1}).detail
    assert (
        "metadata" in refused(DIALOGUE_EVENTS, metadata={"k": "v" * (MAX_VALUE_CHARS + 1)}).detail
    )
    assert "metadata" in refused(DIALOGUE_EVENTS, metadata={"k" * (MAX_KEY_CHARS + 1): 1}).detail
    assert "metadata" in refused(DIALOGUE_EVENTS, metadata={"k": {"nested": 1}}).detail


def test_an_integer_beyond_64_bits_in_a_map_is_the_json_number_it_is() -> None:
    # JSON has one number type; beyond 64 bits the value is kept as a float,
    # which every store holds (the published schema's "number" says the same).
    event = decode(DIALOGUE_EVENTS, metadata={"big": 2**64, "small": INT64_MAX})
    assert event.metadata == {"big": float(2**64), "small": INT64_MAX}


def test_action_properties_nest_four_levels_at_most() -> None:
    assert decode(USER_ACTIONS, properties=deep(4)).properties == deep(4)
    assert "properties" in refused(USER_ACTIONS, properties=deep(5)).detail
    lists = {"a": [[[1] * MAX_LIST_ITEMS]]}
    assert decode(USER_ACTIONS, properties=lists).properties == lists
    assert (
        "properties" in refused(USER_ACTIONS, properties={"a": [1] * (MAX_LIST_ITEMS + 1)}).detail
    )
    many = {f"k{i}": i for i in range(MAX_MAP_KEYS + 1)}
    assert "properties" in refused(USER_ACTIONS, properties=many).detail


def test_crm_changes_are_bounded() -> None:
    most = {f"f{i}": {"new": i} for i in range(MAX_CRM_FIELDS)}
    assert len(decode(CRM_WEBHOOKS, changes=most).changes) == MAX_CRM_FIELDS
    assert "changes" in refused(CRM_WEBHOOKS, changes=most | {"one-more": {"new": 1}}).detail
    assert "changes" in refused(CRM_WEBHOOKS, changes={"phone": {"new": "5" * 4097}}).detail
    assert "changes" in refused(CRM_WEBHOOKS, changes={"phone": {"new": {"a": 1}}}).detail
