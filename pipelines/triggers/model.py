"""What the trigger stage reads (one turn) and what it decides (fire or not, and why)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pipelines.parse.model import Intent, ParsedTurn
from schemas.events import Role


class SignalName(StrEnum):
    """Why memory may be needed; ``MEMORY_CUE`` is explicit, the others implicit."""

    MEMORY_CUE = "memory_cue"  # "as I said", "like last time"
    SEMANTIC_SHIFT = "semantic_shift"  # far from the session's centroid
    INTENT_DRIFT = "intent_drift"  # the dialogue act family changed since the last user turn
    UNDEFINED_ENTITY = "undefined_entity"  # "my membership tier" never mentioned before
    CONSTRAINTS = "constraints"  # several negations, limits, numbers, times
    NEGATIVE_EMOTION = "negative_emotion"  # "this is absolutely unacceptable!!"


EXPLICIT_SIGNALS = frozenset({SignalName.MEMORY_CUE})


class TriggerReason(StrEnum):
    """The outcome of one decision."""

    EXPLICIT = "explicit"  # a memory cue: fires alone
    IMPLICIT = "implicit"  # enough implicit signals together
    TOO_FEW_SIGNALS = "too_few_signals"
    CHIT_CHAT = "chit_chat"  # greetings and thanks never fire
    NOT_USER = "not_user"  # agent and system turns only teach the session
    STALE = "stale"  # a turn older than the session's last, no longer remembered


@dataclass(frozen=True)
class TriggerTurn:
    """One dialogue turn as the trigger stage reads it.

    ``vector`` is the MiniLM embedding the encode stage already computes, as a
    plain sequence so the stage needs no model; None when there is none.
    """

    event_id: str
    session_id: str
    turn_index: int
    role: Role
    text: str
    intent: Intent
    memory_cues: tuple[str, ...] = ()
    is_chit_chat: bool = False
    vector: tuple[float, ...] | None = None

    @classmethod
    def from_parsed(
        cls, parsed: ParsedTurn, text: str, vector: Sequence[float] | None = None
    ) -> TriggerTurn:
        """The parse stage's view of a turn plus its text and vector."""
        return cls(
            event_id=parsed.event_id,
            session_id=parsed.session_id,
            turn_index=parsed.turn_index,
            role=parsed.role,
            text=text,
            intent=parsed.intent,
            memory_cues=tuple(parsed.memory_cues),
            is_chit_chat=parsed.is_chit_chat,
            vector=tuple(float(x) for x in vector) if vector is not None else None,
        )


@dataclass(frozen=True)
class Signal:
    """One signal that fired: what it saw (``evidence``) and its measure, if any."""

    name: SignalName
    evidence: str
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name.value, "evidence": self.evidence, "value": self.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Signal:
        value = data.get("value")
        return cls(
            name=SignalName(data["name"]),
            evidence=str(data["evidence"]),
            value=None if value is None else float(value),
        )


@dataclass(frozen=True)
class TriggerDecision:
    """Whether a turn needs memory, and every signal that fired (also when it did not)."""

    event_id: str
    session_id: str
    turn_index: int
    triggered: bool
    reason: TriggerReason
    signals: tuple[Signal, ...] = field(default=())

    @property
    def fired(self) -> tuple[SignalName, ...]:
        """The names of the signals that fired, in detection order."""
        return tuple(signal.name for signal in self.signals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "session_id": self.session_id,
            "turn_index": self.turn_index,
            "triggered": self.triggered,
            "reason": self.reason.value,
            "signals": [signal.to_dict() for signal in self.signals],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TriggerDecision:
        return cls(
            event_id=str(data["event_id"]),
            session_id=str(data["session_id"]),
            turn_index=int(data["turn_index"]),
            triggered=bool(data["triggered"]),
            reason=TriggerReason(data["reason"]),
            signals=tuple(Signal.from_dict(s) for s in data.get("signals", [])),
        )
