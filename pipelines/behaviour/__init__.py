"""Behaviour memory: a pure stage that reads status items from a user's recent actions."""

from pipelines.behaviour.config import BehaviourConfig
from pipelines.behaviour.items import BehaviourItem
from pipelines.behaviour.stage import Observation, Outcome, expire, observe
from pipelines.behaviour.window import BehaviourWindow, WindowEvent

__all__ = [
    "BehaviourConfig",
    "BehaviourItem",
    "BehaviourWindow",
    "Observation",
    "Outcome",
    "WindowEvent",
    "expire",
    "observe",
]
