"""Memory records and operations: validity windows, negation kept, payload per op type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Polarity
from schemas.ops import MemoryOperation, OpType

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LINEAGE = {"topic": "dialogue.events", "partition": 3, "offset": 17, "event_id": "dlg-7"}


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "fact_id": "f_1",
        "chain_id": "c_1",
        "tenant_id": "northwind-fiber",
        "user_id": "u-alice",
        "subject": "installation_time",
        "predicate": "in",
        "object": "weekend",
        "polarity": "negated",
        "kind": "rule",
        "confidence": 0.9,
        "valid_from": T0,
        "recorded_at": T0,
        "lineage": LINEAGE,
    }
    base.update(overrides)
    return base


def test_negated_record_renders_with_not() -> None:
    fact = MemoryRecord.model_validate(record())
    assert fact.polarity is Polarity.NEGATED
    assert fact.statement() == "installation_time NOT in weekend"
    assert MemoryRecord.model_validate(record(text="no weekend installation")).statement() == (
        "no weekend installation"
    )


def test_is_current_honours_validity_and_expiry() -> None:
    closed = MemoryRecord.model_validate(record(valid_until=T0 + timedelta(days=2)))
    assert not closed.is_current(T0 - timedelta(seconds=1))
    assert closed.is_current(T0 + timedelta(days=1))
    assert not closed.is_current(T0 + timedelta(days=2))
    expiring = MemoryRecord.model_validate(record(expires_at=T0 + timedelta(hours=1)))
    assert expiring.is_current(T0)
    assert not expiring.is_current(T0 + timedelta(hours=1))


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"confidence": 1.2}, "confidence\n  Input should be less than or equal to 1"),
        ({"polarity": "maybe"}, "polarity\n  Input should be 'affirmed' or 'negated'"),
        ({"valid_from": "2026-03-02T09:00:00"}, "valid_from\n  Input should have timezone info"),
        ({"version": 0}, "version\n  Input should be greater than or equal to 1"),
        ({"lineage": {**LINEAGE, "offset": -1}}, "lineage.offset"),
        ({"subject": ""}, "subject\n  String should have at least 1 character"),
    ],
)
def test_bad_record_is_rejected(overrides: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        MemoryRecord.model_validate(record(**overrides))
    assert expected in str(info.value)


def test_lineage_trace_id_points_at_the_kafka_record() -> None:
    assert SourceLineage.model_validate(LINEAGE).trace_id == "dialogue.events/3/17"


def operation(op_type: OpType, **payload: Any) -> dict[str, Any]:
    return {
        "op_id": "o_1",
        "op_type": op_type,
        "tenant_id": "northwind-fiber",
        "user_id": "u-alice",
        "tiers": ["semantic"],
        "lineage": LINEAGE,
        "at": T0,
        **payload,
    }


def test_operations_with_their_payload_are_accepted() -> None:
    upsert = MemoryOperation.model_validate(operation(OpType.UPSERT_FACT, record=record()))
    assert upsert.record is not None
    status = {"name": "travel", "value": "tomorrow", "ttl_s": 328_320}
    assert MemoryOperation.model_validate(operation(OpType.SET_STATUS, status=status)).status
    assert MemoryOperation.model_validate(operation(OpType.ERASE_USER)).op_type is OpType.ERASE_USER


@pytest.mark.parametrize(
    ("op_type", "missing"),
    [
        (OpType.UPSERT_FACT, "record"),
        (OpType.CLOSE_FACT, "record"),
        (OpType.ADD_PENDING, "record"),
        (OpType.RESOLVE_PENDING, "target_fact_id, resolution"),
        (OpType.APPEND_TURN, "turn"),
        (OpType.SET_STATUS, "status"),
    ],
)
def test_operation_without_its_payload_says_what_is_missing(op_type: OpType, missing: str) -> None:
    with pytest.raises(ValidationError, match=f"{op_type.value} needs {missing}"):
        MemoryOperation.model_validate(operation(op_type))


def test_operation_needs_a_tier_and_a_positive_status_ttl() -> None:
    with pytest.raises(ValidationError, match="tiers"):
        MemoryOperation.model_validate(operation(OpType.ERASE_USER) | {"tiers": []})
    status = {"name": "travel", "value": "tomorrow", "ttl_s": 0}
    with pytest.raises(ValidationError, match="status.ttl_s"):
        MemoryOperation.model_validate(operation(OpType.SET_STATUS, status=status))
