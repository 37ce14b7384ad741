"""Status memory items read from a behaviour window: interest in a target, drifting searches.

Each item is a candidate status fact like a purchase's (pipelines/actions.py):
an ``ExtractedFact`` asserted by the user's actions, plus the expiry the
timeliness rule gives it, ``ttl = base_ttl × (1 + confidence)``. The
confidence says how strongly the window supports the reading, not how sure
the user is: more returns and more engagement, more support.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pipelines.behaviour.admit import span_text
from pipelines.behaviour.config import BehaviourConfig
from pipelines.behaviour.window import WindowEvent
from pipelines.triggers.entities import content_terms
from schemas.events import ActionType, UserAction
from schemas.facts import Assertor, ExtractedFact, origin
from schemas.memory import MemoryKind

# Interest: the threshold of views is the weakest reading (0.5); each further
# view, long dwell, a click and the cart each add support. An inferred interest
# never outranks the purchase it predicts (pipelines/actions.py: 0.9).
INTEREST_BASE = 0.5
PER_EXTRA_VIEW = 0.05
DWELL_BONUS = 0.1
CLICK_BONUS = 0.05
CART_BONUS = 0.15
INTEREST_CAP = 0.9
# A purchase after repeated views closes the interest; it is observed, as strong
# as the purchase fact itself.
PURCHASED_CONFIDENCE = 0.9
# Drift: two searches that refine one another 0.6, each further step 0.1.
DRIFT_BASE = 0.6
DRIFT_STEP = 0.1
DRIFT_CAP = 0.9
DRIFT_SHOWN = 4  # searches of a run named in the item, newest last

# Predicate of a target's interest chain, (<target id>, browsing, ...): keyed by the
# id, not the display name, so a renamed product keeps one chain and one status key.
BROWSING = "browsing"
SEARCH_DRIFT = "search_drift"  # predicate of the user's search chain: (user, search_drift, ...)


@dataclass(frozen=True)
class BehaviourItem:
    """A status candidate fact with its expiry and the arithmetic behind it."""

    fact: ExtractedFact
    expires_at: datetime
    ttl: timedelta
    ttl_reason: str


@dataclass(frozen=True)
class TargetSummary:
    """What the window holds about one target."""

    target: str
    name: str
    views: int
    clicks: int
    dwell_ms: int
    in_cart: bool
    purchased: bool


def summarise(events: Sequence[WindowEvent], target: str) -> TargetSummary:
    """Counts over the window's events for ``target``; the latest name the producer gave."""
    mine = [e for e in events if e.target == target]
    names = [e.name for e in mine if e.name]
    return TargetSummary(
        target=target,
        name=names[-1] if names else target,
        views=sum(e.action is ActionType.VIEW for e in mine),
        clicks=sum(e.action is ActionType.CLICK for e in mine),
        dwell_ms=sum(e.dwell_ms for e in mine),
        in_cart=any(e.action is ActionType.ADD_TO_CART for e in mine),
        purchased=any(e.action is ActionType.PURCHASE for e in mine),
    )


def interest_confidence(summary: TargetSummary, config: BehaviourConfig) -> float:
    """Support for "interested in, not bought yet" (docs/predictive.md)."""
    score = INTEREST_BASE + PER_EXTRA_VIEW * max(0, summary.views - config.min_views)
    if summary.dwell_ms >= config.dwell_interest.total_seconds() * 1000:
        score += DWELL_BONUS
    if summary.clicks:
        score += CLICK_BONUS
    if summary.in_cart:
        score += CART_BONUS
    return round(min(score, INTEREST_CAP), 4)


def interest_item(
    summary: TargetSummary, action: UserAction, config: BehaviourConfig
) -> BehaviourItem:
    """The interest: viewed <target> 3 times, 4.5 min in total, in the last 24 h, no purchase."""
    parts = [_times(summary.views)]
    if summary.clicks:
        parts.append(f"clicked {_times(summary.clicks)}")
    parts.append(f"{span_text(summary.dwell_ms)} in total")
    parts.append(f"in the last {_hours(config.window)}")
    if summary.in_cart:
        parts.append("in the cart")
    parts.append("no purchase")
    rest = ", ".join(parts)
    fields = {
        "TARGET": summary.target,
        "NAME": summary.name,
        "VIEWS": str(summary.views),
        "CLICKS": str(summary.clicks),
        "DWELL_MS": str(summary.dwell_ms),
        "IN_CART": str(summary.in_cart).lower(),
        "WINDOW": _hours(config.window),
    }
    text = f"viewed {summary.name} {rest}"
    confidence = interest_confidence(summary, config)
    return _item(
        action, config, summary.target, BROWSING, f"viewed {rest}", text, confidence, fields
    )


def purchased_item(
    summary: TargetSummary, action: UserAction, config: BehaviourConfig
) -> BehaviourItem:
    """The interest chain's next version once the target is bought: no longer browsing."""
    views = "1 view" if summary.views == 1 else f"{summary.views} views"
    value = f"purchased after {views} in the last {_hours(config.window)}"
    fields = {"TARGET": summary.target, "VIEWS": str(summary.views), "PURCHASED": "true"}
    text = f"{summary.name}: {value}"
    return _item(
        action, config, summary.target, BROWSING, value, text, PURCHASED_CONFIDENCE, fields
    )


def search_run(events: Sequence[WindowEvent], config: BehaviourConfig) -> list[WindowEvent]:
    """The newest searches that refine one another, oldest first (one search: no run).

    Walking back from the newest search, each earlier one joins while it is
    within ``drift_max_gap`` of the next and shares at least
    ``drift_min_shared_terms`` terms with it; a repeat of the same terms is
    skipped (it refines nothing and breaks nothing).
    """
    searches = [e for e in events if e.action is ActionType.SEARCH and e.query]
    if not searches:
        return []
    run = [searches[-1]]
    for earlier in reversed(searches[:-1]):
        later = run[0]
        if later.ts - earlier.ts > config.drift_max_gap:
            break
        before, after = set(_terms(earlier)), set(_terms(later))
        if before == after:
            continue
        if len(before & after) < config.drift_min_shared_terms:
            break
        run.insert(0, earlier)
    return run if len(run) >= 2 else []


def drift_item(
    run: Sequence[WindowEvent], action: UserAction, config: BehaviourConfig
) -> BehaviourItem:
    """The drift: searches drifted: 'wireless earphones' -> 'noise-cancelling earphone reviews'."""
    shown = [e.query or "" for e in run[-DRIFT_SHOWN:]]
    value = " -> ".join(shown)
    first, last = set(_terms(run[-2])), set(_terms(run[-1]))
    fields = {
        "QUERY": shown[-1],
        "FROM": run[0].query or "",
        "SEARCHES": str(len(run)),
        "SHARED": " ".join(sorted(first & last)),
        "ADDED": " ".join(sorted(last - first)),
        "DROPPED": " ".join(sorted(first - last)),
    }
    confidence = round(min(DRIFT_BASE + DRIFT_STEP * (len(run) - 2), DRIFT_CAP), 4)
    text = "searches drifted: " + " -> ".join(f"'{q}'" for q in shown)
    return _item(action, config, "user", SEARCH_DRIFT, value, text, confidence, fields)


def _item(
    action: UserAction,
    config: BehaviourConfig,
    subject: str,
    predicate: str,
    value: str,
    text: str,
    confidence: float,
    fields: dict[str, str],
) -> BehaviourItem:
    fact = ExtractedFact(
        **origin(action),
        subject=subject.casefold().strip()[:256],
        predicate=predicate,
        object=value[:1024],
        kind=MemoryKind.STATUS,
        confidence=confidence,
        text=text[:4096],
        intent="behaviour",
        asserted_by=Assertor.ACTION,
        fields=fields,
    )
    ttl = config.base_ttl * (1 + confidence)
    days = 86_400
    reason = (
        f"base {config.base_ttl.total_seconds() / days:g} d × (1 + {confidence:.2f})"
        f" = {ttl.total_seconds() / days:.2f} d"
    )
    return BehaviourItem(fact=fact, expires_at=action.ts + ttl, ttl=ttl, ttl_reason=reason)


def _terms(event: WindowEvent) -> list[str]:
    return content_terms(event.query or "")


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:g} h"
