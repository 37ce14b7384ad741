"""Stage 2 of the review, timeliness: ``ttl = base_ttl × (1 + confidence)``.

A confident time-sensitive fact lives longer than a doubtful one, up to twice
its base (docs/architecture.md, Stages: "I travel tomorrow", 0.9, base 2 d → 3.8 d; "order
shipped", 0.99, base 7 d → 13.9 d). Facts whose attribute and kind have no
base TTL never expire; they change only by a new version.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.review.config import ReviewConfig
from pipelines.review.rules import attribute
from pipelines.vocabulary import default_vocabulary
from schemas.facts import ExtractedFact
from schemas.memory import ReviewOutcome, ReviewStage

_SECONDS_PER_DAY = 86_400


def expiry(config: ReviewConfig, fact: ExtractedFact) -> tuple[datetime | None, ReviewOutcome]:
    """When the fact stops being current (from its event time), and why."""
    attr = attribute(fact.subject, fact.predicate)
    base = config.base_ttl(attr, fact.kind, default_vocabulary().ttl(attr))
    if base is None:
        reason = f"no base TTL for attribute {attr!r} or kind {fact.kind.value!r}"
        return None, ReviewOutcome(stage=ReviewStage.TIMELINESS, decision="no_ttl", reason=reason)
    ttl = base * (1 + fact.confidence)
    reason = (
        f"base {base.total_seconds() / _SECONDS_PER_DAY:g} d × (1 + {fact.confidence:.2f})"
        f" = {ttl.total_seconds() / _SECONDS_PER_DAY:.2f} d"
    )
    outcome = ReviewOutcome(stage=ReviewStage.TIMELINESS, decision="ttl", reason=reason)
    return fact.event_ts + ttl, outcome
