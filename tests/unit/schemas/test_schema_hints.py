"""Hint requests on memory.ops: payload, tiers, rendering; a state from before them restores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from pipelines.review import Reviewer, UserMemoryState
from pipelines.triggers.hints import render_hint
from schemas.hints import BehaviourNote, HintRequest, HintSignal
from schemas.ops import MemoryOperation, OpType

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LINEAGE = {"topic": "dialogue.events", "partition": 3, "offset": 17, "event_id": "dlg-7"}
REQUEST = HintRequest(
    hint_id="h_1",
    event_id="dlg-7",
    session_id="s-1",
    turn_index=4,
    query="Like last time, please.",
    ts=T0,
    reason="explicit",
    signals=[HintSignal(name="memory_cue", evidence="like last time")],
    behaviour=[BehaviourNote(fact_id="f_9", text="viewed Earphones 3 times", confidence=0.6)],
)


def op(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "op_id": "o_1",
        "op_type": "request_hint",
        "tenant_id": "acme",
        "user_id": "pat",
        "tiers": [],
        "lineage": LINEAGE,
        "at": T0,
        "hint": REQUEST.model_dump(mode="json"),
    }
    base.update(overrides)
    return base


def test_a_hint_request_writes_no_tier() -> None:
    request = MemoryOperation.model_validate(op())
    assert request.op_type is OpType.REQUEST_HINT and request.hint == REQUEST
    with pytest.raises(ValidationError, match="tiers must be empty"):
        MemoryOperation.model_validate(op(tiers=["working"]))
    with pytest.raises(ValidationError, match="needs hint"):
        MemoryOperation.model_validate(op(hint=None))


def test_every_store_operation_still_names_a_tier() -> None:
    with pytest.raises(ValidationError, match="tiers must be empty"):
        MemoryOperation.model_validate(op(op_type="erase_user", hint=None))


def test_the_rendered_hint_says_why_and_names_behaviour() -> None:
    text = render_hint(REQUEST, "Key:\n- user phone is 0770 [episodic: dialogue.events/0/1]")
    assert text.splitlines()[0] == (
        "Memory for the user's turn 'Like last time, please.' (explicit: memory_cue "
        "(like last time))"
    )
    assert "- user phone is 0770 [episodic: dialogue.events/0/1]" in text
    assert text.endswith("Recent behaviour:\n- viewed Earphones 3 times [behaviour: f_9]")


def test_a_state_from_before_the_predictive_stages_restores_empty() -> None:
    old = Reviewer().new_state().snapshot()
    del old["triggers"], old["behaviour"]
    state = UserMemoryState.restore(old)
    assert state.triggers.sessions == {} and state.behaviour.events == []
