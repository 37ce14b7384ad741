"""Behaviour items through the review: committed as observations, with the window's own expiry.

A behaviour item (pipelines/behaviour/) reads the user's own recent actions:
"viewed Noise-cancelling earphones 3 times, 4.5 min in total, in the last
24 h, no purchase". It passes the HITL gate by a rule of its own instead of
the confidence thresholds, because:

- its confidence says how strongly the window supports the reading, not how
  sure anyone is that the user *said* it (docs/predictive.md). The gate's
  thresholds would skip every interest at 0.5 and hold most others pending,
  for a human who can only re-count the clicks the window counted;
- it is no claim about the user that can be confirmed or rejected: the
  actions happened. It expires by itself, ``ttl = base_ttl × (1 + confidence)``
  as the behaviour stage computed it (its own ``base_ttl``), and a later
  view makes its next version;
- it never contradicts a stated fact: its predicates (``browsing``,
  ``search_drift``) are outside the typed vocabulary, so the fact check's
  rules cannot hold it, and the late-statement check does not apply either:
  the window already placed an out-of-order action in its time.

Everything after the gate is the review's own ``commit``: one version chain
per target (or per user's searches), a new version when the counts change,
episodic memory, and a Redis status key that expires with the item.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pipelines.behaviour import BehaviourItem
from pipelines.review.commit import candidate, commit
from pipelines.review.config import ReviewConfig
from pipelines.review.state import UserMemoryState
from pipelines.route import Decision
from schemas.ids import chain_id
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryRecord, ReviewOutcome, ReviewStage

# ExtractedFact.intent of a behaviour item (pipelines/behaviour/items.py).
BEHAVIOUR_INTENT = "behaviour"


def review_observed(
    config: ReviewConfig,
    state: UserMemoryState,
    items: Sequence[tuple[BehaviourItem, Encoding | None]],
    lineage: SourceLineage,
    at: datetime,
    clamps: Sequence[str] = (),
) -> list[Decision]:
    """Commit each behaviour item of one action (``clamps``: what the window clamped)."""
    decisions: list[Decision] = []
    for item, encoding in items:
        fact = item.fact
        if fact.event_id != lineage.event_id:
            raise ValueError(f"item from {fact.event_id} reviewed with {lineage.event_id}")
        chain = chain_id(fact.tenant_id, fact.user_id, fact.subject, fact.predicate)
        checked = ReviewOutcome(
            stage=ReviewStage.FACT_CHECK,
            decision="pass",
            reason="; ".join(["observed behaviour", *clamps]),
        )
        timely = ReviewOutcome(
            stage=ReviewStage.TIMELINESS,
            decision="ttl",
            reason=f"{item.ttl_reason} (the behaviour window's)",
        )
        gate = ReviewOutcome(
            stage=ReviewStage.HITL,
            decision="commit",
            reason=f"observed behaviour: window support {fact.confidence:.2f}, "
            "nothing for a human to confirm",
        )
        cand = candidate(
            fact,
            chain,
            at=at,
            expires_at=item.expires_at,
            review=[checked, timely],
            lineage=lineage,
            encoding=encoding,
        )
        # Counts are exact readings: a new count is a new version, never a merge.
        decisions += commit(config, state, cand, [], gate, may_merge=False, at=at)
        state.count("behaviour_committed")
    return decisions


def current_behaviour(state: UserMemoryState, at: datetime) -> list[MemoryRecord]:
    """The user's behaviour items that hold at ``at``, most recently touched first."""
    heads = [h for h in state.heads.values() if h.intent == BEHAVIOUR_INTENT and h.is_current(at)]
    return heads[::-1]
