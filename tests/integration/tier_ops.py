"""Builders of memory records and operations for the tier-writer integration tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from schemas import ids
from schemas.episodes import Episode
from schemas.events import Role
from schemas.lineage import SourceLineage
from schemas.memory import (
    Encoding,
    MemoryKind,
    MemoryRecord,
    Polarity,
    ReviewOutcome,
    ReviewStage,
    Tier,
)
from schemas.ops import MemoryOperation, OpType, StatusEntry, WorkingTurn

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T1 = T0 + timedelta(days=10)
ALL_TIERS = (Tier.WORKING, Tier.EPISODIC, Tier.SEMANTIC)
DIM = 384  # MiniLM's width, so text-embedded and precomputed items share one space


def vector(text: str) -> list[float]:
    """A deterministic unit vector per text (stands in for the encode stage)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    values = np.random.default_rng(seed).standard_normal(DIM)
    return [float(v) for v in values / np.linalg.norm(values)]


def fact(
    tenant: str,
    user: str,
    subject: str,
    predicate: str,
    obj: str,
    *,
    event_id: str,
    at: datetime = T0,
    version: int = 1,
    supersedes: str | None = None,
    kind: MemoryKind = MemoryKind.FACT,
    polarity: Polarity = Polarity.AFFIRMED,
    session_id: str = "s1",
    expires_at: datetime | None = None,
    with_vector: bool = True,
    offset: int = 0,
) -> MemoryRecord:
    """A committed fact version as the review stage would emit it."""
    chain = ids.chain_id(tenant, user, subject, predicate)
    text = f"{subject} {predicate} {obj}"
    return MemoryRecord(
        fact_id=ids.fact_id(chain, event_id, obj, polarity.value),
        chain_id=chain,
        tenant_id=tenant,
        user_id=user,
        session_id=session_id,
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        kind=kind,
        text=text,
        confidence=0.9,
        valid_from=at,
        recorded_at=at,
        expires_at=expires_at,
        version=version,
        supersedes=supersedes,
        confirmed_by=[event_id],
        review=[ReviewOutcome(stage=ReviewStage.HITL, decision="commit")],
        lineage=SourceLineage(
            topic="dialogue.events", partition=0, offset=offset, event_id=event_id
        ),
        encoding=Encoding(combined=vector(text)) if with_vector else None,
    )


def held(record: MemoryRecord, reason: str) -> MemoryRecord:
    """The record as held for confirmation by the fact check."""
    outcome = ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="hold", reason=reason)
    return record.model_copy(update={"review": [outcome], "state": "pending"})


def op(
    op_type: OpType,
    tenant: str,
    user: str,
    *,
    event_id: str,
    at: datetime = T0,
    index: int = 0,
    tiers: Sequence[Tier] = ALL_TIERS,
    record: MemoryRecord | None = None,
    turn: WorkingTurn | None = None,
    status: StatusEntry | None = None,
    target_fact_id: str | None = None,
    resolution: str | None = None,
    episode: Episode | None = None,
) -> MemoryOperation:
    """An operation with the deterministic id the route stage would give it."""
    return MemoryOperation.model_validate(
        {
            "op_id": ids.op_id(event_id, index, op_type.value),
            "op_type": op_type,
            "tenant_id": tenant,
            "user_id": user,
            "tiers": list(tiers),
            "lineage": {
                "topic": "dialogue.events",
                "partition": 0,
                "offset": 0,
                "event_id": event_id,
            },
            "at": at,
            "record": record,
            "turn": turn,
            "status": status,
            "target_fact_id": target_fact_id,
            "resolution": resolution,
            "episode": episode,
        }
    )


def upsert(record: MemoryRecord, *, index: int = 0) -> MemoryOperation:
    """UPSERT_FACT of ``record`` to every tier."""
    return op(
        OpType.UPSERT_FACT,
        record.tenant_id,
        record.user_id,
        event_id=record.lineage.event_id,
        at=record.valid_from,
        index=index,
        record=record,
    )


def phone_change(
    tenant: str, user: str
) -> tuple[MemoryRecord, MemoryRecord, list[MemoryOperation]]:
    """The phone-number example: v1 at T0, then at T1 v1 closed and v2 opened."""
    v1 = fact(tenant, user, "user", "phone_number", "555-0100", event_id=f"{user}-e1")
    v2 = fact(
        tenant,
        user,
        "user",
        "phone_number",
        "555-0199",
        event_id=f"{user}-e2",
        at=T1,
        version=2,
        supersedes=v1.fact_id,
        offset=1,
    )
    closed = v1.model_copy(update={"valid_until": T1})
    close_op = op(
        OpType.CLOSE_FACT, tenant, user, event_id=f"{user}-e2", at=T1, index=0, record=closed
    )
    return closed, v2, [upsert(v1), close_op, upsert(v2, index=1)]


def turn_op(tenant: str, user: str, session: str, index: int, at: datetime = T0) -> MemoryOperation:
    """APPEND_TURN of turn ``index`` of a session (working tier)."""
    turn = WorkingTurn(
        session_id=session,
        turn_index=index,
        role="user",
        text=f"turn {index}",
        ts=at + timedelta(seconds=index),
    )
    return op(
        OpType.APPEND_TURN,
        tenant,
        user,
        event_id=f"{user}-{session}-t{index}",
        at=turn.ts,
        tiers=[Tier.WORKING],
        turn=turn,
    )


def said(tenant: str, user: str, episode_id: str, text: str, at: datetime = T0) -> MemoryOperation:
    """An ``upsert_episode`` of one user turn, its vector from ``vector``."""
    turn = Episode(
        episode_id=episode_id,
        tenant_id=tenant,
        user_id=user,
        session_id="s1",
        turn_index=0,
        role=Role.USER,
        text=text,
        ts=at,
        vector=vector(text),
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=0, event_id=episode_id),
    )
    return op(OpType.UPSERT_EPISODE, tenant, user, event_id=episode_id, at=at, episode=turn)
