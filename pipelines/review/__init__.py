"""The three-stage write review: fact check, timeliness, conflict; HITL gate; promotion.

Pure and engine-agnostic: a ``Reviewer`` turns an input event plus its
extracted facts into memory operations over a ``UserMemoryState``.
"""

from pipelines.review.config import ReviewConfig
from pipelines.review.reviewer import Clock, Reviewer
from pipelines.review.rules import ReviewRules, load_rules
from pipelines.review.state import PendingCause, PendingItem, UserMemoryState

__all__ = [
    "Clock",
    "PendingCause",
    "PendingItem",
    "ReviewConfig",
    "ReviewRules",
    "Reviewer",
    "UserMemoryState",
    "load_rules",
]
