"""Stage 2 of the review, timeliness: ``ttl = base_ttl × (1 + confidence)``.

A confident time-sensitive fact lives longer than a doubtful one, up to twice
its base (docs/architecture.md, Stages: "I travel tomorrow", 0.9, base 2 d → 3.8 d; "order
shipped", 0.99, base 7 d → 13.9 d). Facts whose attribute and kind have no
base TTL never expire; they change only by a new version.

A time that names a day beyond its TTL stays current until that day has
passed: "we fly out on 3 October", said in March, is not gone two days after
it was said (``last_day_named``). The facts said with it in the same turn
and of the same TTL class ("a trip to Japan in October": travel = japan)
stay as long.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta

from pipelines.review.config import ReviewConfig
from pipelines.review.rules import attribute
from pipelines.vocabulary import TIME_TYPES, default_vocabulary
from pipelines.vocabulary.values import last_day_named
from schemas.facts import ExtractedFact
from schemas.memory import MemoryRecord, Polarity, ReviewOutcome, ReviewStage

_SECONDS_PER_DAY = 86_400


def expiry(
    config: ReviewConfig, fact: ExtractedFact, named: date | None = None
) -> tuple[datetime | None, ReviewOutcome]:
    """When the fact stops being current, and why.

    The TTL counts from the fact's event time; the fact stays at least until
    the end of ``named``, the last day its turn names for its TTL class
    (``days_named``).
    """
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
    expires = fact.event_ts + ttl
    if named is not None:
        day_ends = datetime.combine(named + timedelta(days=1), time(), tzinfo=fact.event_ts.tzinfo)
        if day_ends > expires:
            expires = day_ends
            reason += f", kept until the end of {named.isoformat()}, the day it names"
    outcome = ReviewOutcome(stage=ReviewStage.TIMELINESS, decision="ttl", reason=reason)
    return expires, outcome


def days_named(facts: Sequence[ExtractedFact]) -> dict[str, date]:
    """The last day still ahead that the turn's times name, per TTL class.

    Only affirmed times name a day the facts are about: "not on Friday" rules
    a day out.
    """
    vocabulary = default_vocabulary()
    named: dict[str, date] = {}
    for fact in facts:
        spec = vocabulary.spec(attribute(fact.subject, fact.predicate))
        if spec.type not in TIME_TYPES or fact.polarity is Polarity.NEGATED:
            continue
        day = last_day_named(fact.object, fact.event_ts)
        if day is not None and (spec.ttl not in named or day > named[spec.ttl]):
            named[spec.ttl] = day
    return named


def day_of_refined(fact: ExtractedFact, head: MemoryRecord | None, at: datetime) -> date | None:
    """The day a time said without one keeps from the value it replaces.

    "October 3 to 17", then "the 11:20 departure, book it": the clock time
    refines the trip its chain holds, and must not lapse after the 3.8 days of
    a time said for tomorrow. It stays current as long as the replaced value
    would have (its last day still ahead), whatever day it falls on.
    """
    spec = default_vocabulary().spec(attribute(fact.subject, fact.predicate))
    if (
        head is None
        or spec.type not in TIME_TYPES
        or fact.polarity is Polarity.NEGATED
        or head.polarity is Polarity.NEGATED
        or not head.is_current(at)
        or spec.standing(fact.object)
        or last_day_named(fact.object, fact.event_ts) is not None
    ):
        return None
    return last_day_named(head.object, head.valid_from)


def class_of(fact: ExtractedFact) -> str:
    """The fact's TTL class (``[ttl_classes]`` of the vocabulary)."""
    return default_vocabulary().spec(attribute(fact.subject, fact.predicate)).ttl
