"""The behaviour stage: count a user's actions in a sliding window, read status items from it.

``observe`` takes one ``UserAction`` and the user's ``BehaviourWindow`` (the
keyed state an engine holds), counts the action unless it was counted
already, and returns what it decided plus the items the window now supports:

- a view, click or add-to-cart of a target seen ``min_views`` times without a
  purchase: "viewed <target> 3 times, 4.5 min in total, in the last 24 h, no
  purchase" (a scroll only adds dwell, read at the next view);
- a purchase of a target that had reached ``min_views``: the interest's next
  version, "purchased after 3 views";
- a search that refines the one before: the run of drifting searches.

Idempotent: an event id already counted changes nothing and yields nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pipelines.behaviour.admit import Admitted, NotCounted, Rejected, admit
from pipelines.behaviour.config import BehaviourConfig
from pipelines.behaviour.items import (
    BehaviourItem,
    drift_item,
    interest_item,
    purchased_item,
    search_run,
    summarise,
)
from pipelines.behaviour.window import BehaviourWindow, WindowEvent
from schemas.events import ActionType, UserAction

# Actions after which a target's interest is read again (a scroll adds dwell only).
_INTEREST_ACTIONS = frozenset({ActionType.VIEW, ActionType.CLICK, ActionType.ADD_TO_CART})


class Outcome(StrEnum):
    """What the stage did with one action."""

    COUNTED = "counted"
    DUPLICATE = "duplicate"  # its event id was counted before: nothing counted twice
    LATE = "late"  # older than the window already: nothing to count it in
    NOT_COUNTED = "not_counted"  # valid but no behaviour (rate, memory confirmations, store)
    REJECTED = "rejected"  # unusable: dead-letter it with ``reasons``
    ERASED = "erased"  # forget_user: the window is emptied


@dataclass(frozen=True)
class Observation:
    """The stage's answer for one action: outcome, reasons (clamps or rejection), items."""

    event_id: str
    outcome: Outcome
    reasons: tuple[str, ...] = ()
    items: tuple[BehaviourItem, ...] = ()

    @property
    def dead_letter(self) -> bool:
        """Whether the caller should send the action to the dead-letter topic."""
        return self.outcome is Outcome.REJECTED


def observe(window: BehaviourWindow, action: UserAction, config: BehaviourConfig) -> Observation:
    """Count ``action`` in the user's window and return the items the window now supports."""
    if action.action_type == ActionType.FORGET_USER:
        window.erase()  # what the user did is memory too: erasure forgets it
        return Observation(action.event_id, Outcome.ERASED)
    admitted = admit(action, config)
    if isinstance(admitted, Rejected):
        window.count(Outcome.REJECTED.value)
        return Observation(action.event_id, Outcome.REJECTED, (admitted.reason,))
    if isinstance(admitted, NotCounted):
        window.count(Outcome.NOT_COUNTED.value)
        return Observation(action.event_id, Outcome.NOT_COUNTED, (admitted.reason,))
    if window.has_seen(admitted.event_id):
        window.count(Outcome.DUPLICATE.value)
        return Observation(action.event_id, Outcome.DUPLICATE)
    if window.is_late(admitted.ts, config.window):
        window.count(Outcome.LATE.value)
        reason = f"event at {admitted.ts.isoformat()} is older than the {config.window} window"
        return Observation(action.event_id, Outcome.LATE, (reason,))
    window.advance(admitted.ts, config.window)
    window.add(_event(admitted), config.max_events, config.max_seen_ids)
    window.count(Outcome.COUNTED.value)
    window.count("clamped", len(admitted.clamps))
    items = _items(window, admitted, action, config)
    return Observation(action.event_id, Outcome.COUNTED, admitted.clamps, items)


def expire(window: BehaviourWindow, now: datetime, config: BehaviourConfig) -> int:
    """Drop events that fell out of the window by ``now`` (for an engine's timer); how many."""
    before = len(window.events)
    window.advance(now, config.window)
    return before - len(window.events)


def _items(
    window: BehaviourWindow, admitted: Admitted, action: UserAction, config: BehaviourConfig
) -> tuple[BehaviourItem, ...]:
    if admitted.action is ActionType.SEARCH:
        run = search_run(window.events, config)
        # Only when this search is the run's newest: a late, older search changes no run.
        if run and run[-1].event_id == admitted.event_id:
            return (drift_item(run, action, config),)
        return ()
    if admitted.target is None:
        return ()
    summary = summarise(window.events, admitted.target)
    if admitted.action is ActionType.PURCHASE:
        if summary.views >= config.min_views:
            return (purchased_item(summary, action, config),)
        return ()
    if (
        admitted.action in _INTEREST_ACTIONS
        and summary.views >= config.min_views
        and not summary.purchased
    ):
        return (interest_item(summary, action, config),)
    return ()


def _event(admitted: Admitted) -> WindowEvent:
    return WindowEvent(
        event_id=admitted.event_id,
        ts=admitted.ts,
        action=admitted.action,
        target=admitted.target,
        name=admitted.name,
        dwell_ms=admitted.dwell_ms,
        query=admitted.query,
    )
