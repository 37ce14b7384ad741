"""The input-topic models accept good events and reject each kind of bad one clearly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from schemas.events import MAX_TURN_CHARS, CrmWebhook, DialogueEvent, Role, UserAction

TS = "2026-03-02T09:05:00Z"


def dialogue(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "dlg-1",
        "tenant_id": "northwind-fiber",
        "user_id": "u-alice",
        "session_id": "s-alice-01",
        "turn_index": 0,
        "role": "user",
        "text": "I don't accept weekend installation.",
        "ts": TS,
    }
    base.update(overrides)
    return base


def action(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "act-1",
        "tenant_id": "greenleaf-eats",
        "user_id": "u-dana",
        "action_type": "purchase",
        "target_id": "item/tofu-banh-mi",
        "ts": TS,
    }
    base.update(overrides)
    return base


def crm(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "crm-1",
        "tenant_id": "northwind-fiber",
        "user_id": "u-alice",
        "source": "salesforce",
        "entity": "contact",
        "changes": {"phone": {"old": "555-0142", "new": "555-0199"}},
        "ts": TS,
    }
    base.update(overrides)
    return base


def error_text(model: type[BaseModel], data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return str(info.value)


def test_good_dialogue_event_parses_with_defaults_and_key() -> None:
    event = DialogueEvent.model_validate(dialogue())
    assert event.role is Role.USER
    assert event.ts == datetime(2026, 3, 2, 9, 5, tzinfo=UTC)
    assert event.lang == "en"
    assert event.metadata == {}
    assert event.key == "northwind-fiber:u-alice"


def test_good_action_and_crm_parse() -> None:
    assert UserAction.model_validate(action()).key == "greenleaf-eats:u-dana"
    webhook = CrmWebhook.model_validate(crm())
    assert webhook.changes["phone"].new == "555-0199"
    assert webhook.changes["phone"].old == "555-0142"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({k: v for k, v in dialogue().items() if k != "text"}, "text\n  Field required"),
        (dialogue(turn_index="first"), "turn_index\n  Value error, expected a JSON integer"),
        (dialogue(turn_index=-1), "turn_index\n  Input should be greater than or equal to 0"),
        (dialogue(role="customer"), "role\n  Input should be 'user', 'agent' or 'system'"),
        (dialogue(ts="2026-03-02T09:05:00"), "ts\n  Value error, ts must be an RFC 3339 time"),
        (dialogue(ts="yesterday"), "ts\n  Value error, ts must be an RFC 3339 time"),
        (dialogue(tenant_id="acme:eu"), "tenant_id\n  String should match pattern"),
        (dialogue(user_id=""), "user_id\n  String should match pattern"),
        (dialogue(event_id="has space"), "event_id\n  String should match pattern"),
        (dialogue(lang="English"), "lang\n  String should match pattern"),
        (dialogue(text="x" * (MAX_TURN_CHARS + 1)), "text\n  String should have at most"),
        (dialogue(metadata={"nested": {"a": 1}}), "metadata.nested"),
        (dialogue(schema_version=2), "schema_version\n  Input should be 1"),
        (dialogue(mood="happy"), "mood\n  Extra inputs are not permitted"),
    ],
)
def test_bad_dialogue_event_names_the_field_and_problem(
    data: dict[str, Any], expected: str
) -> None:
    assert expected in error_text(DialogueEvent, data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (action(action_type="teleport"), "action_type\n  Input should be 'click'"),
        (action(duration_ms=-5), "duration_ms\n  Input should be greater than or equal to 0"),
        (action(properties=["a"]), "properties\n  Input should be a valid dictionary"),
        ({k: v for k, v in action().items() if k != "ts"}, "ts\n  Field required"),
    ],
)
def test_bad_user_action_is_rejected(data: dict[str, Any], expected: str) -> None:
    assert expected in error_text(UserAction, data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (crm(changes={}), "changes\n  Dictionary should have at least 1 item"),
        (crm(changes={"phone": {"old": 1, "newest": 2}}), "changes.phone.newest"),
        (crm(changes={"phone": "555-0199"}), "changes.phone\n  Input should be a valid dict"),
        (crm(source=""), "source\n  String should have at least 1 character"),
    ],
)
def test_bad_crm_webhook_is_rejected(data: dict[str, Any], expected: str) -> None:
    assert expected in error_text(CrmWebhook, data)


def test_events_are_immutable() -> None:
    event = DialogueEvent.model_validate(dialogue())
    with pytest.raises(ValidationError, match="frozen"):
        event.text = "changed"  # type: ignore[misc]
