"""Memory records: one immutable version of one fact about a user.

Validity is bi-temporal (as in Graphiti's edges): ``valid_from``/``valid_until``
say when the fact held in the world (event time); ``recorded_at`` says when
memstream learned it. A changed value never overwrites: it closes the current
version (``valid_until``) and opens a new one that ``supersedes`` it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field

from schemas._base import Frozen, Identifier
from schemas.lineage import SourceLineage


class Polarity(StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"


class MemoryKind(StrEnum):
    RULE = "rule"  # standing constraints: "no calls before 9"
    FACT = "fact"  # plain facts: phone number, address
    STATUS = "status"  # short-lived states: "travelling tomorrow", "order shipped"
    PREFERENCE = "preference"  # likes and dislikes
    COMMITMENT = "commitment"  # promises by either party: "I'll call you Monday"


class MemoryState(StrEnum):
    COMMITTED = "committed"
    PENDING = "pending"
    REJECTED = "rejected"


class Tier(StrEnum):
    WORKING = "working"  # Redis
    EPISODIC = "episodic"  # Chroma
    SEMANTIC = "semantic"  # Neo4j


class ReviewStage(StrEnum):
    FACT_CHECK = "fact_check"
    TIMELINESS = "timeliness"
    CONFLICT = "conflict"
    HITL = "hitl"


class ReviewOutcome(Frozen):
    """What one review stage decided about a fact, and why."""

    stage: ReviewStage
    decision: str = Field(description="e.g. pass, hold, ttl, new_version, merge, commit, pending")
    reason: str = ""


class Encoding(Frozen):
    """The three granularities of a memory item and the vector stored for search.

    ``hashed`` is sparse (index -> value) over the exact structured fields;
    ``transe`` embeds the (subject, predicate, object) triple; ``text`` is the
    MiniLM embedding of the descriptive text; ``combined`` is what the vector
    store indexes.
    """

    hashed: dict[int, float] = Field(default_factory=dict)
    transe: list[float] = Field(default_factory=list)
    text: list[float] = Field(default_factory=list)
    combined: list[float] = Field(default_factory=list)
    model_versions: dict[str, str] = Field(default_factory=dict)


class MemoryRecord(Frozen):
    """One version of one fact about one user."""

    schema_version: Literal[1] = 1
    fact_id: str = Field(description="Deterministic id of this version (schemas.ids.fact_id).")
    chain_id: str = Field(
        description="Deterministic id of the (tenant, user, subject, predicate) chain."
    )
    tenant_id: Identifier
    user_id: Identifier
    session_id: str | None = None
    subject: str = Field(min_length=1, max_length=256)
    predicate: str = Field(min_length=1, max_length=128)
    object: str = Field(max_length=1024)
    polarity: Polarity = Polarity.AFFIRMED
    kind: MemoryKind = MemoryKind.FACT
    text: str = Field(default="", max_length=4096, description="Human-readable statement.")
    intent: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    authoritative: bool = False  # True for CRM: no NLP, confidence 1.0
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None = None  # None while current
    recorded_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    version: int = Field(default=1, ge=1)
    supersedes: str | None = None
    confirmations: int = Field(default=1, ge=0)
    confirmed_by: list[str] = Field(
        default_factory=list, description="Distinct event ids that stated this fact."
    )
    merged_from: list[str] = Field(default_factory=list)
    merged_at: AwareDatetime | None = None
    review: list[ReviewOutcome] = Field(default_factory=list)
    state: MemoryState = MemoryState.COMMITTED
    tiers: list[Tier] = Field(default_factory=list)
    lineage: SourceLineage
    encoding: Encoding | None = None

    def is_current(self, at: datetime) -> bool:
        """Whether this version holds at ``at`` (validity and TTL)."""
        if self.valid_from > at:
            return False
        if self.valid_until is not None and self.valid_until <= at:
            return False
        return self.expires_at is None or self.expires_at > at

    def statement(self) -> str:
        """The fact as text, negation kept: never rendered as the positive."""
        if self.text:
            return self.text
        neg = "NOT " if self.polarity is Polarity.NEGATED else ""
        return f"{self.subject} {neg}{self.predicate} {self.object}"
