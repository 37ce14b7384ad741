"""Every extractor stamps a fact with its event's origin in one way (schemas/facts.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.events import ActionType, CrmWebhook, DialogueEvent, FieldChange, Role, UserAction
from schemas.facts import ExtractedFact, origin

T0 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


def test_a_turns_fact_carries_its_session_and_time() -> None:
    turn = DialogueEvent(
        event_id="e1",
        tenant_id="acme",
        user_id="u1",
        session_id="s1",
        turn_index=0,
        role=Role.USER,
        text="hi",
        ts=T0,
    )
    assert origin(turn) == {
        "tenant_id": "acme",
        "user_id": "u1",
        "session_id": "s1",
        "event_id": "e1",
        "event_ts": T0,
    }
    fact = ExtractedFact(**origin(turn), subject="user", predicate="p", object="o", confidence=1)
    assert (fact.session_id, fact.event_ts) == ("s1", T0)


def test_a_webhook_has_no_session_and_an_action_may_have_one() -> None:
    hook = CrmWebhook(
        event_id="c1",
        tenant_id="acme",
        user_id="u1",
        ts=T0,
        source="crm",
        entity="contact",
        changes={"email": FieldChange(old=None, new="a@b.co")},
    )
    assert origin(hook)["session_id"] is None
    view = UserAction(
        event_id="a1", tenant_id="acme", user_id="u1", ts=T0, action_type=ActionType.VIEW
    )
    assert origin(view)["session_id"] is None
    assert origin(view.model_copy(update={"session_id": "s9"}))["session_id"] == "s9"
