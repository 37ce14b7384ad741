"""Memory records: one immutable version of one fact about a user.

Validity is bi-temporal (as in Graphiti's edges): ``valid_from``/``valid_until``
say when the fact held in the world (event time); ``recorded_at`` says when
memstream learned it. A changed value never overwrites: it closes the current
version (``valid_until``) and opens a new one that ``supersedes`` it.

The rules of a fact version are defined here once, for ``MemoryRecord`` and
for the stores' read model ``schemas.hits.SearchHit`` alike:

- validity (``valid_at``): a version holds at ``t`` when
  ``valid_from <= t < valid_until`` and it has not expired (``t < expires_at``);
- its statement in two forms: ``label`` — its own text, else its triple with
  the negation in capitals (``installation_time NOT in weekend``;
  ``MemoryRecord.statement()``, the episodic store's document) — and
  ``spoken``, what recall shows an agent: a negated fact always reads as a
  negation and a triple reads as words (``user does not accept weekend
  installation``); a text that is only the ``label`` of a version without text
  (what the episodic store reads back) counts as no text.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field

from schemas._base import Frozen, Identifier
from schemas.bounds import MAX_OBJECT_CHARS
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


def valid_at(
    at: datetime,
    valid_from: datetime,
    valid_until: datetime | None = None,
    expires_at: datetime | None = None,
) -> bool:
    """Whether a version holds at ``at``: ``valid_from <= at < valid_until``, unexpired."""
    if valid_from > at:
        return False
    if valid_until is not None and valid_until <= at:
        return False
    return expires_at is None or expires_at > at


_NEGATION_CUE = re.compile(r"\b(?:not|no|never|none|nothing|without|cannot)\b|n't\b")
# Relations that read as "X not <rel> Y" rather than "X does not <rel> Y".
_PREPOSITIONS = frozenset({"in", "at", "on", "before", "after", "during", "from", "to", "by"})


def label(subject: str, predicate: str, obj: str, polarity: Polarity, text: str = "") -> str:
    """The fact as text, negation kept: its own text, else ``subject [NOT ]predicate object``."""
    if text:
        return text
    neg = "NOT " if polarity is Polarity.NEGATED else ""
    return f"{subject} {neg}{predicate} {obj}"


def spoken(subject: str, predicate: str, obj: str, polarity: Polarity, text: str = "") -> str:
    """The fact in words; a negated fact always reads as a negation.

    A negated fact whose own text carries a negation cue keeps that text;
    otherwise (no text, or text that reads positive) it is rendered from the
    triple: (user, accept, weekend installation) -> "user does not accept
    weekend installation"; (installation_time, NOT_IN, weekend) ->
    "installation time not in weekend".
    """
    text = " ".join(text.split())
    if text in {label(subject, predicate, obj, p) for p in Polarity}:
        text = ""  # the label of a version without text: said in words below
    negated = polarity is Polarity.NEGATED or predicate.casefold().startswith("not_")
    if not negated:
        return text or words(f"{subject} {predicate} {obj}")
    if text and _NEGATION_CUE.search(text.casefold()):
        return text
    relation = words(re.sub(r"(?i)^not_", "", predicate)).casefold()
    subject_words, obj_words = words(subject), words(obj)
    if relation in _PREPOSITIONS or " " in relation:
        return f"{subject_words} not {relation} {obj_words}"
    verb = relation[:-1] if relation.endswith("s") and not relation.endswith("ss") else relation
    return f"{subject_words} does not {verb} {obj_words}"


def words(name: str) -> str:
    """A field name or label as words: underscores to spaces, whitespace collapsed."""
    return " ".join(name.replace("_", " ").split())


class ReviewOutcome(Frozen):
    """What one review stage decided about a fact, and why."""

    stage: ReviewStage
    decision: str = Field(description="e.g. pass, hold, ttl, new_version, merge, commit, pending")
    reason: str = ""
    cause: str | None = Field(
        default=None,
        description="Why a pending item waits for a human (the HITL gate's pending decision): "
        "contradiction, low_confidence, not_user, invalid_value, sources_disagree or late.",
    )


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
    object: str = Field(max_length=MAX_OBJECT_CHARS)
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
        """Whether this version holds at ``at`` (``valid_at``: validity and TTL)."""
        return valid_at(at, self.valid_from, self.valid_until, self.expires_at)

    def statement(self) -> str:
        """The fact as text, negation kept: never rendered as the positive (``label``)."""
        return label(self.subject, self.predicate, self.object, self.polarity, self.text)
