"""Memory records and operations for the unit tests over memstream.testing's in-memory stores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.testing import HashingEmbedder
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, MemoryRecord, MemoryState, Polarity, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry, WorkingTurn

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder()
FACT_TIERS = (Tier.EPISODIC, Tier.SEMANTIC)
_offsets = iter(range(10**9))


def lineage(offset: int | None = None) -> SourceLineage:
    n = next(_offsets) if offset is None else offset
    return SourceLineage(topic="dialogue.events", partition=0, offset=n, event_id=f"e{n}")


def record(
    fact_id: str,
    obj: str,
    *,
    tenant: str = "acme",
    user: str = "u1",
    subject: str = "user",
    predicate: str = "prefers_day",
    version: int = 1,
    valid_from: datetime = T0,
    valid_until: datetime | None = None,
    kind: MemoryKind = MemoryKind.FACT,
    polarity: Polarity = Polarity.AFFIRMED,
    state: MemoryState = MemoryState.COMMITTED,
    **extra: Any,
) -> MemoryRecord:
    """A fact version whose vector is the HashingEmbedder's vector of its text."""
    text = f"{subject} {predicate} {obj}".replace("_", " ")
    return MemoryRecord(
        fact_id=fact_id,
        chain_id=f"c-{subject}-{predicate}",
        tenant_id=tenant,
        user_id=user,
        session_id="s1",
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        kind=kind,
        text=text,
        confidence=0.9,
        valid_from=valid_from,
        valid_until=valid_until,
        recorded_at=valid_from,
        version=version,
        state=state,
        lineage=lineage(),
        encoding=Encoding(combined=EMBEDDER.embed(text)),
        **extra,
    )


def op(
    op_type: OpType,
    *,
    tenant: str = "acme",
    user: str = "u1",
    tiers: Sequence[Tier] = FACT_TIERS,
    at: datetime = T0,
    **fields: Any,
) -> MemoryOperation:
    source = lineage()
    return MemoryOperation(
        op_id=f"op-{op_type.value}-{source.offset}",
        op_type=op_type,
        tenant_id=tenant,
        user_id=user,
        tiers=list(tiers),
        lineage=source,
        at=at,
        **fields,
    )


def upsert(rec: MemoryRecord, tiers: Sequence[Tier] = FACT_TIERS) -> MemoryOperation:
    return op(OpType.UPSERT_FACT, tenant=rec.tenant_id, user=rec.user_id, tiers=tiers, record=rec)


def close(
    rec: MemoryRecord, until: datetime, tiers: Sequence[Tier] = FACT_TIERS
) -> MemoryOperation:
    closed = rec.model_copy(update={"valid_until": until})
    return op(
        OpType.CLOSE_FACT,
        tenant=rec.tenant_id,
        user=rec.user_id,
        tiers=tiers,
        record=closed,
        at=until,
    )


def add_pending(rec: MemoryRecord, at: datetime = T0) -> MemoryOperation:
    held = rec.model_copy(update={"state": MemoryState.PENDING})
    return op(
        OpType.ADD_PENDING,
        tenant=rec.tenant_id,
        user=rec.user_id,
        tiers=[Tier.WORKING],
        record=held,
        at=at,
    )


def resolve(
    fact_id: str, resolution: str, *, tenant: str = "acme", user: str = "u1"
) -> MemoryOperation:
    return op(
        OpType.RESOLVE_PENDING,
        tenant=tenant,
        user=user,
        tiers=[Tier.WORKING],
        target_fact_id=fact_id,
        resolution=resolution,
    )


def turn(index: int, text: str = "hi", *, session: str = "s1", user: str = "u1") -> MemoryOperation:
    at = T0 + timedelta(seconds=index)
    said = WorkingTurn(session_id=session, turn_index=index, role="user", text=text, ts=at)
    return op(OpType.APPEND_TURN, user=user, tiers=[Tier.WORKING], turn=said, at=at)


def status(name: str, value: Any, ttl_s: int = 3600, *, at: datetime = T0) -> MemoryOperation:
    entry = StatusEntry(name=name, value=value, ttl_s=ttl_s)
    return op(OpType.SET_STATUS, tiers=[Tier.WORKING], status=entry, at=at)


def erase(*, tenant: str = "acme", user: str = "u1", at: datetime = T0) -> MemoryOperation:
    return op(OpType.ERASE_USER, tenant=tenant, user=user, tiers=list(Tier), at=at)
