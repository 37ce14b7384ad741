"""What the query side (SDK, HTTP API, MCP tools) takes and returns.

Every model here is plain data: the ranking lives in ``pipelines/recall.py``,
the reads and the action publishing in ``jobs/serve/memory_service.py``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, model_validator

from schemas._base import Frozen, Identifier, Scalar
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryState, Polarity, Tier

# Tag keys a filter may test (exact equality), the fields every tier returns: the
# triple, the kind and the polarity. Anything else is refused, not ignored.
TagKey = Literal["subject", "predicate", "object", "kind", "polarity"]


class RecallFilters(Frozen):
    """Narrowing of a recall: every given condition must hold."""

    tags: dict[TagKey, str] = Field(default_factory=dict, description="Equality on these fields.")
    since: AwareDatetime | None = Field(default=None, description="valid_from at or after this.")
    until: AwareDatetime | None = Field(default=None, description="valid_from before this.")
    session_id: Identifier | None = None
    kinds: list[MemoryKind] | None = Field(default=None, description="Only these kinds.")

    @model_validator(mode="after")
    def _range_is_ordered(self) -> RecallFilters:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self


class ScoreBreakdown(Frozen):
    """``total = w_vector * vector + w_keyword * keyword + w_time * time``, parts in [0, 1]."""

    vector: float = Field(ge=0.0, le=1.0, description="Cosine of query and item, floored at 0.")
    keyword: float = Field(ge=0.0, le=1.0, description="BM25 over the text plus exact fields.")
    time: float = Field(ge=0.0, le=1.0, description="1 / (1 + days since valid_from / 30).")
    total: float = Field(ge=0.0, le=1.0)


class RecallHit(Frozen):
    """One recalled fact version, ready to show an agent.

    ``statement`` keeps a negation as a negation ("user does not accept weekend
    installation"); ``state`` is ``pending`` for an item still waiting for the
    user's confirmation (read from working memory), which is never a fact yet.
    """

    hit_kind: Literal["fact", "episode"] = Field(
        default="fact",
        description="fact: an extracted fact version; episode: a turn as said (fact_id is "
        "then the episode id, statement the turn after what it answers).",
    )
    fact_id: str
    chain_id: str
    statement: str
    subject: str
    predicate: str
    object: str
    polarity: Polarity
    kind: MemoryKind
    state: MemoryState = MemoryState.COMMITTED
    tier: Tier
    score: ScoreBreakdown | None = Field(
        default=None, description="Set by recall; None where nothing was ranked (history)."
    )
    version: int
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    supersedes: str | None = None
    session_id: str | None = None
    lineage: SourceLineage | None = None
    source: str | None = Field(
        default=None, description="A fact's source turn (its episode), as said."
    )
    source_lineage: SourceLineage | None = Field(
        default=None,
        description="Where that source turn came from. A fact confirmed in several turns keeps "
        "its first in lineage; source is the turn that ranked.",
    )
    source_at: AwareDatetime | None = Field(
        default=None, description="When that source turn was said."
    )
    outdated: bool = Field(default=False, description="An episode whose fact was superseded since.")


class PendingMemory(Frozen):
    """A fact held for the user's confirmation: confirm or reject it by ``pending_id``."""

    pending_id: str = Field(description="The held fact's id, what confirm/reject take.")
    hit: RecallHit
    reason: str = Field(default="", description="Why the review held it.")
    expires_at: AwareDatetime | None = Field(default=None, description="When the hold lapses.")


class MemorySnapshot(Frozen):
    """Everything current about one user, by kind of memory."""

    tenant_id: Identifier
    user_id: Identifier
    at: AwareDatetime
    rules: list[RecallHit] = Field(default_factory=list, description="Standing constraints.")
    facts: list[RecallHit] = Field(default_factory=list, description="Every other current fact.")
    status: dict[str, Scalar] = Field(default_factory=dict, description="Unexpired status keys.")
    pending: list[PendingMemory] = Field(default_factory=list)


class ActionReceipt(Frozen):
    """Where an agent's write went: the action event on ``user.actions``.

    The pipeline applies it asynchronously (it stays the single writer of
    memory); ``topic``/``partition``/``offset`` locate the event for tracing.
    """

    action_type: str
    event_id: str
    tenant_id: Identifier
    user_id: Identifier
    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    target_id: str | None = None
