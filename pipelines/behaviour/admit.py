"""Checks an action before the window counts it: clamp what is absurd, reject what is unusable.

The input schema (schemas/events.py) already dead-letters unknown action types
and negative durations at the topic's edge; these checks hold for actions
built any other way (``model_construct``, a replay of old data) as well.
A clamp keeps the event with a recorded reason; a rejection names the reason
the caller puts on the dead-letter topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pipelines.behaviour.config import BehaviourConfig
from schemas.events import ActionType, UserAction

# Actions the window counts, and which of them need a target.
COUNTED = frozenset(
    {
        ActionType.VIEW,
        ActionType.CLICK,
        ActionType.SCROLL,
        ActionType.SEARCH,
        ActionType.ADD_TO_CART,
        ActionType.PURCHASE,
    }
)
TARGETED = COUNTED - {ActionType.SEARCH}


@dataclass(frozen=True)
class Admitted:
    """An action as the window counts it, with the reasons of any clamp."""

    event_id: str
    ts: datetime
    action: ActionType
    target: str | None  # the target id (searches: None)
    name: str | None  # the target's display name, when the producer gave one
    dwell_ms: int
    query: str | None
    clamps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rejected:
    """An action the window cannot count; ``reason`` is for the dead-letter topic."""

    event_id: str
    reason: str


@dataclass(frozen=True)
class NotCounted:
    """A valid action that is no behaviour (rate, memory confirmations, store, forget)."""

    event_id: str
    reason: str


def admit(action: UserAction, config: BehaviourConfig) -> Admitted | Rejected | NotCounted:
    """What the window may count of ``action``."""
    try:
        kind = ActionType(action.action_type)
    except ValueError:
        return Rejected(action.event_id, f"unknown action type {action.action_type!r}")
    if kind not in COUNTED:
        return NotCounted(action.event_id, f"{kind.value} is not behaviour the window counts")
    target = (action.target_id or "").strip() or None
    if kind in TARGETED and target is None:
        return Rejected(action.event_id, f"{kind.value} without a target_id")
    clamps: list[str] = []
    dwell_ms = _dwell(action.duration_ms, config, clamps)
    query = None
    if kind is ActionType.SEARCH:
        query = _query(action, config, clamps)
        if query is None:
            return Rejected(
                action.event_id, "search without a query (properties.query or target_id)"
            )
        target = None
    name = action.properties.get("name")
    return Admitted(
        event_id=action.event_id,
        ts=action.ts,
        action=kind,
        target=target,
        name=name.strip() if isinstance(name, str) and name.strip() else None,
        dwell_ms=dwell_ms,
        query=query,
        clamps=tuple(clamps),
    )


def _dwell(duration_ms: int | None, config: BehaviourConfig, clamps: list[str]) -> int:
    if duration_ms is None:
        return 0
    if duration_ms < 0:
        clamps.append(f"negative duration {duration_ms} ms counted as 0")
        return 0
    cap_ms = int(config.max_dwell.total_seconds() * 1000)
    if duration_ms > cap_ms:
        clamps.append(f"dwell {span_text(duration_ms)} clamped to {span_text(cap_ms)}")
        return cap_ms
    return duration_ms


def _query(action: UserAction, config: BehaviourConfig, clamps: list[str]) -> str | None:
    """The search's words: ``properties.query``, else the target id's last path segment."""
    raw = action.properties.get("query")
    if not isinstance(raw, str) or not raw.strip():
        # "page/faq/outages": the path's common prefix would make every search overlap.
        segment = (action.target_id or "").rstrip("/").rsplit("/", 1)[-1]
        raw = segment.replace("-", " ").replace("_", " ")
    query = " ".join(raw.split())
    if not query:
        return None
    if len(query) > config.max_query_chars:
        clamps.append(f"query of {len(query)} characters cut to {config.max_query_chars}")
        query = query[: config.max_query_chars]
    return query


def span_text(ms: float) -> str:
    """A duration in the unit that reads best: "40 s", "4.5 min", "3.0 d"."""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 86_400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} d"
