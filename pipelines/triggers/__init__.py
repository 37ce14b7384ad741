"""Retrieval triggers: a pure stage that decides per user turn whether memory is needed."""

from pipelines.triggers.config import TriggerConfig
from pipelines.triggers.model import (
    Signal,
    SignalName,
    TriggerDecision,
    TriggerReason,
    TriggerTurn,
)
from pipelines.triggers.stage import decide, signals
from pipelines.triggers.state import SessionTriggerState, TriggerState

__all__ = [
    "SessionTriggerState",
    "Signal",
    "SignalName",
    "TriggerConfig",
    "TriggerDecision",
    "TriggerReason",
    "TriggerState",
    "TriggerTurn",
    "decide",
    "signals",
]
