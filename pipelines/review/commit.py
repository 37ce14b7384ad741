"""Committing a reviewed fact: conflict resolution, promotion, state update.

Every path that makes a fact true (the gate, a confirm action, a released
hold) ends here, so versions, tiers and status keys are decided one way.
"""

from __future__ import annotations

import math
from datetime import datetime

from pipelines.review.config import ReviewConfig
from pipelines.review.conflict import resolve
from pipelines.review.gate import promoted_tiers
from pipelines.review.rules import attribute
from pipelines.review.state import UserMemoryState
from pipelines.route import Close, Decision, ResolvePending, SetStatus, Upsert
from schemas.facts import ExtractedFact
from schemas.ids import fact_id
from schemas.lineage import SourceLineage
from schemas.memory import (
    Encoding,
    MemoryKind,
    MemoryRecord,
    MemoryState,
    Polarity,
    ReviewOutcome,
)
from schemas.ops import StatusEntry

# StatusEntry.name is at most 64 characters (schemas/ops.py).
_STATUS_NAME_MAX = 64


def candidate(
    fact: ExtractedFact,
    chain: str,
    *,
    at: datetime,
    expires_at: datetime | None,
    review: list[ReviewOutcome],
    lineage: SourceLineage,
    encoding: Encoding | None,
) -> MemoryRecord:
    """The version 1 a reviewed fact would be on ``chain``, before the gate and conflict stages.

    ``review`` holds its fact check and timeliness outcomes. Said facts
    (reviewer.py) and observed behaviour (observed.py) become records this one way.
    """
    return MemoryRecord(
        fact_id=fact_id(chain, fact.event_id, fact.object, fact.polarity.value),
        chain_id=chain,
        tenant_id=fact.tenant_id,
        user_id=fact.user_id,
        session_id=fact.session_id,
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        polarity=fact.polarity,
        kind=fact.kind,
        text=fact.text,
        intent=fact.intent,
        confidence=fact.confidence,
        authoritative=fact.authoritative,
        valid_from=fact.event_ts,
        recorded_at=at,
        expires_at=expires_at,
        confirmed_by=[fact.event_id],
        review=review,
        lineage=lineage,
        encoding=encoding,
    )


def commit(
    config: ReviewConfig,
    state: UserMemoryState,
    cand: MemoryRecord,
    closes: list[MemoryRecord],
    hitl_outcome: ReviewOutcome,
    *,
    may_merge: bool,
    at: datetime,
) -> list[Decision]:
    """Write ``cand`` as truth; ``closes`` are contradicted heads to end first.

    ``may_merge`` allows a near-duplicate merge (see conflict.py).

    ``cand.review`` holds the fact check and timeliness outcomes; the conflict
    and gate outcomes are appended here.
    """
    decisions: list[Decision] = []
    for head in closes:
        until = max(cand.valid_from, head.valid_from)  # never before it began
        closed = head.model_copy(update={"valid_until": until})
        decisions.append(Close(closed))
        state.remember_closed(closed)
        state.retire(head.chain_id)
        state.count("closed_contradicted")
    res = resolve(state, cand, may_merge=may_merge, config=config)
    if res.record is None:
        state.count("already_counted")
        return decisions
    previous = state.last_version(res.record.chain_id)
    record = res.record.model_copy(
        update={
            "review": [*cand.review, res.outcome, hitl_outcome],
            "state": MemoryState.COMMITTED,
        }
    )
    in_semantic = previous is not None and previous.semantic
    record = record.model_copy(
        update={"tiers": promoted_tiers(config, record, chain_in_semantic=in_semantic)}
    )
    if res.closed is not None:
        decisions.append(Close(res.closed))
        state.remember_closed(res.closed)
    state.put_head(record)
    state.count(res.outcome.decision)
    decisions.append(Upsert(record))
    status = _status(record, at)
    if status is not None:
        decisions.append(SetStatus(status))
    stale = state.find_pending(record.chain_id, record.object, record.polarity, cand.valid_from)
    if stale is not None:  # the same statement waited for a human: settled now
        del state.pending[stale.record.fact_id]
        decisions.append(ResolvePending(stale.record.fact_id, confirmed=True))
    return decisions


def confirmed_by(record: MemoryRecord, event_id: str, cap: int) -> MemoryRecord:
    """``record`` with one more confirming event (no change if it counted already)."""
    if event_id in record.confirmed_by:
        return record
    return record.model_copy(
        update={
            "confirmations": record.confirmations + 1,
            "confirmed_by": [*record.confirmed_by, event_id][-cap:],
        }
    )


def _status(record: MemoryRecord, at: datetime) -> StatusEntry | None:
    """The working-memory status key of a committed status fact, while it lives."""
    if record.kind is not MemoryKind.STATUS or record.expires_at is None:
        return None
    ttl_s = math.ceil((record.expires_at - at).total_seconds())
    if ttl_s <= 0:
        return None
    value = record.object if record.polarity is Polarity.AFFIRMED else f"NOT {record.object}"
    name = attribute(record.subject, record.predicate)[:_STATUS_NAME_MAX]
    return StatusEntry(name=name, value=value, ttl_s=ttl_s)
