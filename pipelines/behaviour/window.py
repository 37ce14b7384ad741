"""One user's behaviour window: the counted events of the last ``window``, bounded, JSON-ready.

The window's clock is the latest event time it has counted (event time, not
the wall clock, so a replay counts what the live run counted). Events older
than ``clock - window`` are dropped; past ``max_events`` the oldest go and are
counted in ``evicted``. The ids of counted events are remembered longer
(``max_seen_ids``) so a redelivered event counts nothing twice, even after it
left the window.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from schemas.events import ActionType


@dataclass(frozen=True)
class WindowEvent:
    """One counted action, as little as the summaries need."""

    event_id: str
    ts: datetime
    action: ActionType
    target: str | None = None
    name: str | None = None
    dwell_ms: int = 0
    query: str | None = None

    @property
    def order(self) -> tuple[datetime, str]:
        return (self.ts, self.event_id)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "event_id": self.event_id,
            "ts": self.ts.isoformat(),
            "action": self.action.value,
        }
        for key, value in (
            ("target", self.target),
            ("name", self.name),
            ("query", self.query),
        ):
            if value is not None:
                data[key] = value
        if self.dwell_ms:
            data["dwell_ms"] = self.dwell_ms
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WindowEvent:
        return cls(
            event_id=str(data["event_id"]),
            ts=datetime.fromisoformat(data["ts"]),
            action=ActionType(data["action"]),
            target=data.get("target"),
            name=data.get("name"),
            dwell_ms=int(data.get("dwell_ms", 0)),
            query=data.get("query"),
        )


@dataclass
class BehaviourWindow:
    """A user's counted events (oldest first), the ids seen, and counters for metrics."""

    events: list[WindowEvent] = field(default_factory=list)
    seen_ids: list[str] = field(default_factory=list)  # oldest first
    clock: datetime | None = None
    # Outcomes and caps, for metrics: counted, duplicate, late, rejected,
    # not_counted, clamped, expired, evicted (the cap), erased.
    counters: dict[str, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._seen = set(self.seen_ids)

    def has_seen(self, event_id: str) -> bool:
        return event_id in self._seen

    def count(self, name: str, by: int = 1) -> None:
        if by:
            self.counters[name] = self.counters.get(name, 0) + by

    def add(self, event: WindowEvent, max_events: int, max_seen_ids: int) -> None:
        """Count ``event`` (kept in time order) and remember its id; enforce both caps."""
        bisect.insort(self.events, event, key=lambda e: e.order)
        self.seen_ids.append(event.event_id)
        self._seen.add(event.event_id)
        if len(self.seen_ids) > max_seen_ids:
            for old in self.seen_ids[:-max_seen_ids]:
                self._seen.discard(old)
            self.seen_ids = self.seen_ids[-max_seen_ids:]
        if len(self.events) > max_events:
            self.count("evicted", len(self.events) - max_events)
            self.events = self.events[-max_events:]

    def advance(self, ts: datetime, window: timedelta) -> None:
        """Move the clock to ``ts`` (never back) and drop what fell out of the window."""
        if self.clock is None or ts > self.clock:
            self.clock = ts
        start = self.clock - window
        keep = [e for e in self.events if e.ts > start]
        self.count("expired", len(self.events) - len(keep))
        self.events = keep

    def is_late(self, ts: datetime, window: timedelta) -> bool:
        """Whether an event at ``ts`` is already out of the window."""
        return self.clock is not None and ts <= self.clock - window

    def erase(self) -> None:
        """Forget every counted event and id (a ``forget_user`` action)."""
        self.events, self.seen_ids, self._seen = [], [], set()
        self.clock = None
        self.count("erased")

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": [e.to_dict() for e in self.events],
            "seen_ids": list(self.seen_ids),
            "clock": self.clock.isoformat() if self.clock else None,
            "counters": dict(self.counters),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BehaviourWindow:
        clock = data.get("clock")
        return cls(
            events=sorted(
                (WindowEvent.from_dict(e) for e in data.get("events", [])), key=lambda e: e.order
            ),
            seen_ids=[str(i) for i in data.get("seen_ids", [])],
            clock=datetime.fromisoformat(clock) if clock else None,
            counters={str(k): int(v) for k, v in data.get("counters", {}).items()},
        )
