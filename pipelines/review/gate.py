"""Stage 4, the HITL gate, and promotion to the memory tiers.

The gate decides whether a reviewed fact is written as truth, queued for a
human, or dropped; promotion decides which long-term tiers a committed
version belongs in (docs/architecture.md, Stages and Tiers).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipelines.review.config import ReviewConfig
from pipelines.review.state import PendingCause
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import MemoryRecord, ReviewOutcome, ReviewStage, Tier

# Only these speak for the user; an agent's or system's claim about the user
# waits for the user's own confirmation (issue 4, HITL gate).
_USER_VOICES = frozenset({Assertor.USER, Assertor.CRM, Assertor.ACTION})


class Gate(StrEnum):
    """The three ways out of the gate."""

    COMMIT = "commit"
    PENDING = "pending"
    SKIP = "skip"


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict; ``cause`` is set when the fact goes pending."""

    gate: Gate
    cause: PendingCause | None
    outcome: ReviewOutcome


def hitl(
    config: ReviewConfig,
    fact: ExtractedFact,
    held: str | None,
    always: tuple[str, PendingCause] | None = None,
) -> GateDecision:
    """Commit, pend or skip one fact.

    ``held`` is the fact check's reason to hold it for a contradiction;
    ``always`` a reason (and cause) that holds it whoever said it, a CRM
    included: a value that does not fit its type, or a CRM's first record of
    a value the user said otherwise.
    """
    conf = fact.confidence

    def decide(gate: Gate, reason: str, cause: PendingCause | None = None) -> GateDecision:
        # The cause travels with the held record, so whoever lists the queue
        # (the review console) reads it rather than parsing the reason.
        outcome = ReviewOutcome(
            stage=ReviewStage.HITL,
            decision=gate.value,
            reason=reason,
            cause=None if cause is None else cause.value,
        )
        return GateDecision(gate, cause, outcome)

    user_voice = fact.asserted_by in _USER_VOICES
    if always is not None and (fact.authoritative or conf >= config.pending_threshold):
        return decide(Gate.PENDING, *always)
    if fact.authoritative and user_voice:  # an agent cannot vouch for itself
        return decide(Gate.COMMIT, f"authoritative source ({fact.asserted_by.value})")
    if conf < config.pending_threshold:
        return decide(Gate.SKIP, f"confidence {conf:.2f} < {config.pending_threshold}")
    if not user_voice:
        reason = f"asserted by {fact.asserted_by.value}: waits for the user's confirmation"
        return decide(Gate.PENDING, reason, PendingCause.NOT_USER)
    if conf < config.commit_threshold:
        reason = f"confidence {conf:.2f} < {config.commit_threshold}"
        if held is not None:
            reason = f"{reason}; {held}"
        return decide(Gate.PENDING, reason, PendingCause.LOW_CONFIDENCE)
    if held is not None:
        return decide(Gate.PENDING, held, PendingCause.CONTRADICTION)
    return decide(Gate.COMMIT, f"confidence {conf:.2f} ≥ {config.commit_threshold}")


def promoted_tiers(
    config: ReviewConfig, record: MemoryRecord, *, chain_in_semantic: bool
) -> list[Tier]:
    """The long-term tiers of a committed version.

    Every committed item is episodic. It is also semantic when it comes from
    an authoritative source, when enough distinct events confirmed it, or
    when an earlier version of its chain is there already (so the semantic
    tier's version chain has no gaps).
    """
    semantic = (
        record.authoritative
        or record.confirmations >= config.promotion_confirmations
        or chain_in_semantic
        or Tier.SEMANTIC in record.tiers
    )
    return [Tier.EPISODIC, Tier.SEMANTIC] if semantic else [Tier.EPISODIC]
