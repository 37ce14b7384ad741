"""An episode: one content-bearing dialogue turn kept whole in episodic memory.

Facts are what the extractor understood; an episode is what was said. Recall
ranks both, so a turn the extractor missed (an agent's reference number, a
friend's story, an answer phrased in a way no rule knows) can still be found.
An episode's search key is "fact-augmented": the turn it answers (for a short
answer), the turn itself and the statements of the facts extracted from it,
so a question in other words than the turn still meets it (docs/recall.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import Field

from schemas._base import Frozen
from schemas.events import Role
from schemas.lineage import SourceLineage


class Episode(Frozen):
    """One turn as said, with what it answers and what was extracted from it."""

    episode_id: str = Field(description="Deterministic: derived from the source event id.")
    tenant_id: str
    user_id: str
    session_id: str
    turn_index: int = Field(ge=0)
    role: Role
    text: str = Field(description="The turn as said (whitespace folded).")
    context: str | None = Field(
        default=None,
        description="The turn a short answer answers ('Friday?' after 'When suits you?').",
    )
    context_role: Role | None = None
    fact_ids: list[str] = Field(default_factory=list, description="Facts extracted from it.")
    statements: list[str] = Field(
        default_factory=list, description="Those facts in words (the key expansion)."
    )
    intent: str | None = None
    ts: datetime = Field(description="Event time of the turn.")
    lineage: SourceLineage
    speaker: str | None = Field(
        default=None,
        description="The name the turn's speaker goes by, once both speakers' names are "
        "known (learned from how they address each other: pipelines/speakers.py); the "
        "episode is embedded and searched as 'name: text'.",
    )
    vector: list[float] | None = Field(
        default=None,
        description="MiniLM of the turn's own text (the encode stage's); the store embeds "
        "the text itself when it is missing.",
    )

    def search_text(self) -> str:
        """What BM25 reads: the turn it answers, the turn (after its speaker's name), the facts.

        The vector is of the turn's text alone: measured on the tuned customer-service
        recall set, adding the context and statements to the vector diluted it
        (docs/recall.md).
        """
        said = f"{self.speaker}: {self.text}" if self.speaker else self.text
        parts = [self.context or "", said, *self.statements]
        return " ".join(part for part in parts if part)

    def document(self) -> str:
        """How the episode reads in a recall result: the turn, after what it answers."""
        speaker = "user" if self.role is Role.USER else "agent" if self.role is Role.AGENT else ""
        said = f"{speaker}: {self.text}" if speaker else self.text
        if not self.context:
            return said
        asker = "user" if self.context_role is Role.USER else "agent"
        return f"{asker}: {self.context} / {said}"


@dataclass(frozen=True)
class StoredEpisode:
    """An episode as a store reads it back: what superseded it, and its vector."""

    episode: Episode
    outdated: bool
    vector: list[float] | None
    outdated_by: tuple[str, ...] = ()  # the episodes that hold the newer values
