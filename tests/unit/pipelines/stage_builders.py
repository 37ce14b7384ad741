"""The turn and the fact the extraction steps' tests build their plain lists from."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.events import DialogueEvent, Role
from schemas.facts import ExtractedFact
from schemas.memory import Polarity

TS = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def turn(text: str, role: Role = Role.USER) -> DialogueEvent:
    """One turn of user u1's session s1."""
    return DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=3,
        role=role,
        text=text,
        ts=TS,
    )


def fact(predicate: str, value: str, polarity: Polarity = Polarity.AFFIRMED) -> ExtractedFact:
    """A fact of ``turn``'s as the tagger states it, before the steps under test."""
    return ExtractedFact(
        tenant_id="t1",
        user_id="u1",
        event_id="e1",
        event_ts=TS,
        subject="user",
        predicate=predicate,
        object=value,
        polarity=polarity,
        confidence=0.88,
        text=f"{predicate} {value}",
    )
