"""The pending queue: holding a fact for a human, and resolving it.

A fact goes pending when the gate says so (held by the fact check, confidence
between the thresholds, or asserted by the agent). It leaves by a
confirm_memory / reject_memory action naming its fact id, by being stated
again by enough distinct events when the fact check held it ("repeated
confirmation" is strong evidence), or by lapsing (state.expire).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from pipelines.review.commit import commit, confirmed_by
from pipelines.review.config import ReviewConfig
from pipelines.review.rules import ReviewRules
from pipelines.review.state import PendingCause, PendingItem, UserMemoryState
from pipelines.route import AddPending, Decision, ResolvePending
from schemas.bounds import MAX_OBJECT_CHARS
from schemas.events import EDITED_OBJECT_PROPERTY, REVIEWER_PROPERTY, ActionType, UserAction
from schemas.ids import fact_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, MemoryState, ReviewOutcome, ReviewStage, Tier

_EARLY_STAGES = (ReviewStage.FACT_CHECK, ReviewStage.TIMELINESS)


def hold(
    config: ReviewConfig,
    rules: ReviewRules,
    state: UserMemoryState,
    cand: MemoryRecord,
    cause: PendingCause,
    gated: ReviewOutcome,
    at: datetime,
    *,
    may_merge: bool,
) -> list[Decision]:
    """Queue ``cand`` for a human, or count a restatement of a queued item."""
    existing = state.find_pending(cand.chain_id, cand.object, cand.polarity, cand.valid_from)
    if existing is None:
        lapses = at + config.pending_ttl
        deferred = ReviewOutcome(
            stage=ReviewStage.CONFLICT, decision="deferred", reason="resolved on confirmation"
        )
        record = cand.model_copy(
            update={
                "state": MemoryState.PENDING,
                "tiers": [Tier.WORKING],
                # The queue entry lapses with the fact itself if that comes first.
                "expires_at": lapses if cand.expires_at is None else min(lapses, cand.expires_at),
                "review": [*cand.review, deferred, gated],
            }
        )
        state.add_pending(PendingItem(record, cause, cand.expires_at, may_merge))
        state.count("pending")
        return [AddPending(record)]
    event = cand.lineage.event_id
    if event in existing.record.confirmed_by:
        return []
    restated = confirmed_by(existing.record, event, config.max_confirmed_by)
    restated = restated.model_copy(update={"confidence": max(restated.confidence, cand.confidence)})
    release = (
        existing.cause is PendingCause.CONTRADICTION
        and cause is PendingCause.CONTRADICTION
        and restated.confirmations >= config.hold_release_statements
    )
    if not release:
        state.add_pending(replace(existing, record=restated))
        state.count("pending_restated")
        return [AddPending(restated)]
    del state.pending[restated.fact_id]
    state.count("released")
    outcome = ReviewOutcome(
        stage=ReviewStage.HITL,
        decision="commit",
        reason=f"repeated confirmation: stated by {restated.confirmations} distinct events",
    )
    return [
        ResolvePending(restated.fact_id, confirmed=True),
        *_commit_pending(config, rules, state, existing, restated, outcome, at),
    ]


def resolve_action(
    config: ReviewConfig,
    rules: ReviewRules,
    state: UserMemoryState,
    action: UserAction,
    at: datetime,
) -> list[Decision]:
    """Apply a confirm_memory / reject_memory action to the item it targets."""
    item = state.pending.pop(action.target_id, None) if action.target_id else None
    if item is None:
        state.count("unknown_pending_target")  # lapsed, resolved already, or a bad id
        return []
    if action.action_type is ActionType.REJECT_MEMORY:
        state.count("rejected")
        return [ResolvePending(item.record.fact_id, confirmed=False)]
    state.count("confirmed")
    record = confirmed_by(reviewed(item.record, action), action.event_id, config.max_confirmed_by)
    reviewer = reviewer_of(action)
    by = f"reviewer {reviewer}" if reviewer else "user"
    edited = record.object != item.record.object
    outcome = ReviewOutcome(
        stage=ReviewStage.HITL,
        decision="confirmed",
        reason=f"confirmed by {by} action {action.event_id}"
        + (f", value corrected from {item.record.object!r}" if edited else ""),
    )
    return [
        ResolvePending(item.record.fact_id, confirmed=True),
        *_commit_pending(config, rules, state, item, record, outcome, at),
    ]


def reviewer_of(action: UserAction) -> str | None:
    """The human reviewer who sent a confirm/reject, if the review console did."""
    value = action.properties.get(REVIEWER_PROPERTY)
    return value if isinstance(value, str) and value else None


def reviewed(record: MemoryRecord, action: UserAction) -> MemoryRecord:
    """``record`` as the confirming ``action`` leaves it: its reviewer, its corrected value.

    A corrected value is another statement, so another version id (still of the
    turn that said it: the lineage stays the source turn's).
    """
    update: dict[str, object] = {}
    reviewer = reviewer_of(action)
    if reviewer is not None:
        # SourceLineage validates the id: a malformed one fails the event (dead letter).
        update["lineage"] = SourceLineage.model_validate(
            {**record.lineage.model_dump(), "reviewer_id": reviewer}
        )
    edited = action.properties.get(EDITED_OBJECT_PROPERTY)
    if edited is not None:
        value = edited.strip() if isinstance(edited, str) else ""
        if not value or len(value) > MAX_OBJECT_CHARS:
            raise ValueError(
                f"confirm_memory's properties.{EDITED_OBJECT_PROPERTY} must be "
                f"1-{MAX_OBJECT_CHARS} characters of text"
            )
        if value != record.object:
            update |= {
                "object": value,
                "text": "",  # the held statement's text says the old value
                "fact_id": fact_id(
                    record.chain_id, record.lineage.event_id, value, record.polarity.value
                ),
            }
    return record.model_copy(update=update) if update else record


def _commit_pending(
    config: ReviewConfig,
    rules: ReviewRules,
    state: UserMemoryState,
    item: PendingItem,
    record: MemoryRecord,
    outcome: ReviewOutcome,
    at: datetime,
) -> list[Decision]:
    # A confirmation is strong evidence: exclusive contradictions close now,
    # checked against the facts current at confirmation time.
    current = state.current(at)
    found = rules.contradictions(
        record.subject, record.predicate, record.object, record.polarity, current
    )
    cand = record.model_copy(
        update={
            "state": MemoryState.COMMITTED,
            "tiers": [],
            "expires_at": item.fact_expires_at,
            "recorded_at": at,
            "review": [r for r in record.review if r.stage in _EARLY_STAGES],
        }
    )
    closes = [c.head for c in found if c.closes]
    return commit(config, state, cand, closes, outcome, may_merge=item.may_merge, at=at)
