"""Route: one operation per decision, deterministic ids, tiers set."""

from __future__ import annotations

import pytest
from review_helpers import T0, TENANT, USER

from pipelines.route import (
    PENDING_OPS,
    AppendTurn,
    Decision,
    EraseUser,
    ResolvePending,
    Upsert,
    op_topics,
    outputs,
    route,
)
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.ids import op_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, WorkingTurn
from schemas.topics import MEMORY_DLQ, MEMORY_OPS, MEMORY_PENDING

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


# -- output topics: the one rule of both engines and the ingest metrics -------
def _letter(key: str | None) -> DeadLetter:
    return DeadLetter.wrap(
        b"{", reason=DeadLetterReason.MALFORMED_JSON, detail="bad", topic="user.actions", key=key
    )


def test_every_op_goes_to_memory_ops_and_pending_ops_also_to_memory_pending() -> None:
    turn = WorkingTurn(session_id="s1", turn_index=0, role="user", text="hi", ts=T0)
    ops = _route(AppendTurn(turn), ResolvePending("f_0", False), Upsert(_record([Tier.EPISODIC])))
    assert [(o.topic, o.item) for o in outputs(ops, None)] == [
        (MEMORY_OPS, ops[0]),
        (MEMORY_OPS, ops[1]),
        (MEMORY_PENDING, ops[1]),
        (MEMORY_OPS, ops[2]),
    ]
    assert {OpType.ADD_PENDING, OpType.RESOLVE_PENDING} == PENDING_OPS
    assert [op_topics(op) for op in ops] == [
        (MEMORY_OPS,),
        (MEMORY_OPS, MEMORY_PENDING),
        (MEMORY_OPS,),
    ]


def test_op_outputs_are_keyed_by_tenant_and_user_and_carry_the_op_json() -> None:
    (op,) = _route(EraseUser())
    (output,) = outputs([op], None)
    assert output.key == f"{TENANT}:{USER}".encode()
    assert MemoryOperation.model_validate_json(output.value()) == op


def test_a_dead_letter_goes_last_to_memory_dlq_under_the_record_key() -> None:
    (op,) = _route(EraseUser())
    letter = _letter("t:u")
    produced = outputs([op], letter)
    assert [o.topic for o in produced] == [MEMORY_OPS, MEMORY_DLQ]
    assert produced[-1].key == b"t:u"
    assert DeadLetter.model_validate_json(produced[-1].value()) == letter
    (keyless,) = outputs([], _letter(None))
    assert (keyless.topic, keyless.key) == (MEMORY_DLQ, None)


def test_nothing_in_nothing_out() -> None:
    assert outputs([], None) == []
