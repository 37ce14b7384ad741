"""What the extract stage hands to encode and review: candidate facts.

A candidate is not yet memory: review decides whether it is committed, held
pending, merged or skipped, and turns it into a MemoryRecord version.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal, TypedDict

from pydantic import AwareDatetime, Field

from schemas._base import Frozen, Identifier
from schemas.bounds import MAX_OBJECT_CHARS
from schemas.events import CrmWebhook, DialogueEvent, UserAction
from schemas.memory import MemoryKind, Polarity


class Span(Frozen):
    """A labelled character span of the source text (NER output or rule match)."""

    label: str  # TIME, PLACE, NUMBER, COMMITMENT, PRODUCT, PERSON, ORG, ...
    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Assertor(StrEnum):
    """Who stated the fact. Only USER and CRM state facts about the user."""

    USER = "user"
    AGENT = "agent"  # never stored as a user fact unless the user confirms it
    SYSTEM = "system"
    CRM = "crm"  # authoritative
    ACTION = "action"  # derived from a user action (purchase, confirm)


class ExtractedFact(Frozen):
    """A (subject, predicate, object) triple with polarity, kind and provenance."""

    schema_version: Literal[1] = 1
    tenant_id: Identifier
    user_id: Identifier
    session_id: str | None = None
    event_id: str
    event_ts: AwareDatetime
    subject: str = Field(min_length=1, max_length=256)
    predicate: str = Field(min_length=1, max_length=128)
    object: str = Field(max_length=MAX_OBJECT_CHARS)
    polarity: Polarity = Polarity.AFFIRMED
    kind: MemoryKind = MemoryKind.FACT
    confidence: float = Field(ge=0.0, le=1.0)
    text: str = Field(default="", description="Readable statement, negation kept.")
    intent: str | None = None
    asserted_by: Assertor = Assertor.USER
    authoritative: bool = False
    hedged: bool = False  # "maybe next week": confidence already lowered
    is_update: bool = False  # "actually my new number is ...": replaces an earlier value
    source_span: Span | None = None  # the sentence/clause the fact came from
    entities: list[Span] = Field(default_factory=list)
    # Exact structured fields (time, place, ids, numbers) for hashed O(1) matching.
    fields: dict[str, str] = Field(default_factory=dict)


class FactOrigin(TypedDict):
    """The fields a fact takes from its event: ``ExtractedFact(**origin(event), ...)``."""

    tenant_id: str
    user_id: str
    session_id: str | None
    event_id: str
    event_ts: datetime


def statement(predicate: str, value: str, polarity: Polarity = Polarity.AFFIRMED) -> str:
    """A fact's text: "contact_channel NOT sms", "pet collie mot"."""
    return f"{predicate} {'NOT ' if polarity is Polarity.NEGATED else ''}{value}"


def origin(event: DialogueEvent | UserAction | CrmWebhook) -> FactOrigin:
    """Who said it, where and when: one place, so every extractor stamps a fact alike."""
    return FactOrigin(
        tenant_id=event.tenant_id,
        user_id=event.user_id,
        session_id=None if isinstance(event, CrmWebhook) else event.session_id,
        event_id=event.event_id,
        event_ts=event.ts,
    )
