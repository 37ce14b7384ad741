"""Hints: memory pushed to an agent when a user turn needs it (topic ``memory.hints``).

The ingest job decides per user turn whether memory is needed (the retrieval
triggers, pipelines/triggers/). When it is, the turn's operations end with a
``request_hint`` operation carrying a ``HintRequest``: what fired and the
user's current behaviour items, as the ingest state knew them at that turn.
The sink job applies the turn's operations, then runs recall for the request
and publishes a ``MemoryHint``: the prompt-ready context with its sources,
keyed ``tenant:user`` like everything else.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from schemas._base import Frozen, Identifier
from schemas.lineage import SourceLineage
from schemas.query import RecallHit


class HintSignal(Frozen):
    """One trigger signal that fired for the turn, with what it saw."""

    name: str = Field(description="memory_cue, semantic_shift, intent_drift, ...")
    evidence: str
    value: float | None = None


class BehaviourNote(Frozen):
    """A current behaviour item of the user (an interest, a search drift)."""

    fact_id: str
    text: str = Field(description="'viewed Noise-cancelling earphones 3 times, ...'")
    confidence: float = Field(ge=0.0, le=1.0)
    expires_at: AwareDatetime | None = None


class HintRequest(Frozen):
    """What the ingest job asks the sink to recall for one triggering turn."""

    hint_id: str = Field(description="Deterministic: derived from the turn's event id.")
    event_id: str
    session_id: str
    turn_index: int = Field(ge=0)
    query: str = Field(description="The turn's text: what recall searches with.")
    ts: AwareDatetime = Field(description="Event time of the turn.")
    reason: Literal["explicit", "implicit"]
    signals: list[HintSignal] = Field(default_factory=list)
    behaviour: list[BehaviourNote] = Field(default_factory=list)


class MemoryHint(Frozen):
    """A prompt-ready context for one user turn (topic ``memory.hints``)."""

    schema_version: Literal[1] = 1
    hint_id: str
    tenant_id: Identifier
    user_id: Identifier
    session_id: str
    turn_index: int = Field(ge=0)
    event_id: str
    ts: AwareDatetime = Field(description="Event time of the turn.")
    reason: Literal["explicit", "implicit"]
    signals: list[HintSignal]
    query: str
    context: str = Field(description="The prompt-ready block: recalled memory, each line sourced.")
    hits: list[RecallHit] = Field(description="What recall found, ranked, with lineage.")
    behaviour: list[BehaviourNote] = Field(default_factory=list)
    lineage: SourceLineage = Field(description="The turn's Kafka record.")
    published_at: AwareDatetime = Field(description="When the sink composed the hint.")
    recall_error: str | None = Field(
        default=None, description="Why recall found nothing to read (a store down); else None."
    )

    @property
    def key(self) -> str:
        """``tenant:user``, the topic's key."""
        return f"{self.tenant_id}:{self.user_id}"
