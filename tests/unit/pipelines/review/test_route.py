"""Route: one operation per decision, deterministic ids, tiers set."""

from __future__ import annotations

import pytest
from review_helpers import T0, TENANT, USER

from pipelines.route import AppendTurn, Decision, EraseUser, ResolvePending, Upsert, route
from schemas.ids import op_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, WorkingTurn

LINEAGE = SourceLineage(topic="dialogue.events", partition=2, offset=41, event_id="e1")


def _route(*decisions: Decision) -> list[MemoryOperation]:
    return route(decisions, tenant_id=TENANT, user_id=USER, lineage=LINEAGE, at=T0)


def _record(tiers: list[Tier]) -> MemoryRecord:
    return MemoryRecord(
        fact_id="f_1",
        chain_id="c_1",
        tenant_id=TENANT,
        user_id=USER,
        subject="user",
        predicate="city",
        object="Lyon",
        confidence=0.9,
        valid_from=T0,
        recorded_at=T0,
        lineage=LINEAGE,
        tiers=tiers,
    )


def test_ids_are_derived_from_event_index_and_kind() -> None:
    turn = WorkingTurn(session_id="s1", turn_index=0, role="user", text="hi", ts=T0)
    decisions: list[Decision] = [
        AppendTurn(turn),
        Upsert(_record([Tier.EPISODIC])),
        ResolvePending("f_0", True),
    ]
    ops = _route(*decisions)
    assert [op.op_id for op in ops] == [
        op_id("e1", 0, "append_turn"),
        op_id("e1", 1, "upsert_fact"),
        op_id("e1", 2, "resolve_pending"),
    ]
    assert _route(*decisions) == ops
    assert [op.tiers for op in ops] == [[Tier.WORKING], [Tier.EPISODIC], [Tier.WORKING]]
    assert all(op.lineage == LINEAGE and op.at == T0 for op in ops)


def test_erase_reaches_every_tier() -> None:
    (op,) = _route(EraseUser())
    assert op.op_type is OpType.ERASE_USER
    assert set(op.tiers) == {Tier.WORKING, Tier.EPISODIC, Tier.SEMANTIC}


def test_a_fact_without_tiers_is_a_bug_not_a_silent_drop() -> None:
    with pytest.raises(ValueError, match="promotion"):
        _route(Upsert(_record([])))
