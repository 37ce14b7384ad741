"""Per-session memory of the trigger stage, bounded and JSON-ready for a keyed engine.

What a later turn is compared with: the centroid of the session's content
turns, the dialogue act of the last user turn, the content words
mentioned so far, and the last decisions (so a redelivered turn gets its
first decision back). A user's state holds the most recent sessions only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipelines.snapshot_vectors import pack_vector, unpack_vector
from pipelines.triggers.model import TriggerDecision

CENTROID_DECIMALS = 6


@dataclass
class SessionTriggerState:
    """What one session has said so far, as far as the triggers need it."""

    session_id: str
    centroid_sum: list[float] = field(default_factory=list)  # sum of unit turn vectors
    content_turns: int = 0  # turns counted in the centroid
    last_user_intent: str | None = None  # act of the last substantive user turn
    known_terms: list[str] = field(default_factory=list)  # oldest first
    last_turn_index: int = -1
    recent: list[TriggerDecision] = field(default_factory=list)  # oldest first

    def centroid_cosine(self, vector: Sequence[float]) -> float | None:
        """Cosine of ``vector`` to the centroid (None without one or when sizes differ)."""
        if not self.centroid_sum or len(vector) != len(self.centroid_sum):
            return None
        return cosine(vector, self.centroid_sum)

    def add_vector(self, vector: Sequence[float]) -> None:
        """Count one content turn's vector in the centroid (normalised: each turn weighs one)."""
        unit = unit_vector(vector)
        if unit is None:
            return
        if not self.centroid_sum or len(unit) != len(self.centroid_sum):
            # A new encoder (another dimension) restarts the centroid rather than mixing spaces.
            self.centroid_sum, self.content_turns = [0.0] * len(unit), 0
        # Six decimals: the cosine moves by < 1e-5. Snapshots pack the sum as float64
        # (pipelines/snapshot_vectors.py), so the rounding no longer saves bytes; what
        # is held is what is serialised, so a restored state decides alike.
        self.centroid_sum = [
            round(a + b, CENTROID_DECIMALS) for a, b in zip(self.centroid_sum, unit, strict=True)
        ]
        self.content_turns += 1

    def learn_terms(self, terms: Iterable[str], cap: int) -> None:
        """Remember terms as mentioned; a repeat moves to the newest end, the oldest go."""
        order = dict.fromkeys(self.known_terms)
        for term in terms:
            order.pop(term, None)
            order[term] = None
        self.known_terms = list(order)[-cap:]

    def remember(self, decision: TriggerDecision, cap: int) -> None:
        self.recent = [*self.recent, decision][-cap:]

    def decision_for(self, event_id: str) -> TriggerDecision | None:
        return next((d for d in self.recent if d.event_id == event_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "centroid_sum": pack_vector(self.centroid_sum) if self.centroid_sum else [],
            "content_turns": self.content_turns,
            "last_user_intent": self.last_user_intent,
            "known_terms": list(self.known_terms),
            "last_turn_index": self.last_turn_index,
            "recent": [d.to_dict() for d in self.recent],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionTriggerState:
        return cls(
            session_id=str(data["session_id"]),
            centroid_sum=unpack_vector(data.get("centroid_sum", [])),
            content_turns=int(data.get("content_turns", 0)),
            last_user_intent=data.get("last_user_intent"),
            known_terms=[str(t) for t in data.get("known_terms", [])],
            last_turn_index=int(data.get("last_turn_index", -1)),
            recent=[TriggerDecision.from_dict(d) for d in data.get("recent", [])],
        )


@dataclass
class TriggerState:
    """One user's trigger state: the most recently active sessions, least recent first."""

    sessions: dict[str, SessionTriggerState] = field(default_factory=dict)
    sessions_evicted: int = 0  # a counter for metrics: sessions forgotten to stay bounded

    def session(self, session_id: str, cap: int) -> SessionTriggerState:
        """The session's state (created when new), moved to the most recent end."""
        current = self.sessions.pop(session_id, None) or SessionTriggerState(session_id)
        self.sessions[session_id] = current
        while len(self.sessions) > cap:
            del self.sessions[next(iter(self.sessions))]
            self.sessions_evicted += 1
        return current

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_dict() for s in self.sessions.values()],
            "sessions_evicted": self.sessions_evicted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriggerState:
        sessions = [SessionTriggerState.from_dict(s) for s in data.get("sessions", [])]
        return cls(
            sessions={s.session_id: s for s in sessions},
            sessions_evicted=int(data.get("sessions_evicted", 0)),
        )


def unit_vector(vector: Sequence[float]) -> list[float] | None:
    """``vector`` scaled to length 1, or None for a zero or non-finite vector."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return None
    return [x / norm for x in vector]


def cosine(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Cosine similarity of two equally long vectors (None when either is zero)."""
    ua, ub = unit_vector(a), unit_vector(b)
    if ua is None or ub is None:
        return None
    return math.fsum(x * y for x, y in zip(ua, ub, strict=True))
