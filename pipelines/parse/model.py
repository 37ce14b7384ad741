"""What the parse stage hands to extract: one ``ParsedTurn`` per dialogue turn."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, PrivateAttr

from schemas._base import Frozen
from schemas.events import Role


class Intent(StrEnum):
    """Dialogue acts, checked in the order of ``pipelines.parse.acts.ACT_RULES``."""

    CHIT_CHAT = "chit_chat"  # greetings, thanks, fillers: never yield facts
    CANCEL_REQUEST = "cancel_request"  # "never mind, no need"
    CORRECTION = "correction"  # "actually ...", "I changed my mind ..."
    COMPLAINT = "complaint"
    CONFIRM_ACTION = "confirm_action"  # "I've registered it for you"
    COMMITMENT = "commitment"  # "I'll call you on Monday"
    ORDER = "order"
    PREFERENCE = "preference"
    REQUEST = "request"
    INQUIRY = "inquiry"
    INFORM = "inform"  # a plain statement: "I live in Glasgow"
    UNKNOWN = "unknown"  # text the English rules do not read (e.g. Chinese)


class ParsedSentence(Frozen):
    """One sentence of a turn with its character offsets into the turn text."""

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    intent: Intent
    memory_cues: list[str] = Field(default_factory=list)
    is_chit_chat: bool = False


class ParsedTurn(Frozen):
    """The dialogue structure of one turn: role, boundary, acts and memory cues.

    The spaCy ``Doc`` the parser built rides along as a private attribute so the
    extract stage in the same process does not parse the text twice; it is not
    serialised, and extract re-parses when it is missing.
    """

    event_id: str
    role: Role
    session_id: str
    turn_index: int = Field(ge=0)
    lang: str
    sentences: list[ParsedSentence] = Field(default_factory=list)
    intent: Intent
    memory_cues: list[str] = Field(default_factory=list)
    is_chit_chat: bool = False
    summary: str = Field(default="", description="Compact 'role/intent | cues | content'.")

    _doc: Any = PrivateAttr(default=None)

    @property
    def doc(self) -> Any:
        """The spaCy ``Doc`` of the turn text, or None (deserialised, or not English)."""
        return self._doc

    def with_doc(self, doc: Any) -> ParsedTurn:
        """Attach the spaCy ``Doc`` (the parser calls this once, right after building)."""
        self._doc = doc
        return self
