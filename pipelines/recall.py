"""What a recall returns: the weights, hits in words, filters and exact values.

    total = w_vector * vector + w_keyword * keyword + w_time * time

docs/architecture.md, Tiers fixes the formula and the default weights (0.6 /
0.3 / 0.1); pipelines/recall_index.py ranks with them over a user's items.
This module holds what the serving side needs around that ranking: the
weights (a settings section), a stored version rendered in words (a negation
stays a negation), the filters a caller can narrow by, and the query's word
n-grams hashed as exact values (``pipelines.encode.hashing.hash_query``), so
a phone number or a day typed by the agent hits the hashed object exactly.

Pure: the caller reads the stores; this module never imports a store
(pipelines/.ruff.toml).
"""

from __future__ import annotations

import math
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipelines.encode.hashing import hash_query
from schemas.hits import SearchHit
from schemas.memory import MemoryState
from schemas.query import RecallFilters, RecallHit, ScoreBreakdown

# Longest word n-gram of a query tried as an exact value: objects are short
# ("555-0199", "monday 9am", "gluten-free pasta"); 4 words covers a street
# address's "12 baker street london" without hashing every long span.
MAX_VALUE_WORDS = 4


class RecallWeights(BaseModel):
    """Weights of the recall score; they sum to 1 so the total stays in [0, 1]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # docs/architecture.md, Tiers / issue 6: score = 0.6 vector + 0.3 keyword + 0.1 time.
    vector: float = Field(default=0.6, ge=0.0, le=1.0)
    keyword: float = Field(default=0.3, ge=0.0, le=1.0)
    time: float = Field(default=0.1, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> Self:
        if not math.isclose(self.vector + self.keyword + self.time, 1.0, abs_tol=1e-6):
            raise ValueError("vector + keyword + time weights must sum to 1")
        return self


def render_statement(fact: SearchHit) -> str:
    """The fact in words, as recall shows it (``SearchHit.statement``: ``memory.spoken``)."""
    return fact.statement()


def passes(fact: SearchHit, filters: RecallFilters | None) -> bool:
    """Whether the version meets every condition of ``filters``."""
    if filters is None:
        return True
    if filters.session_id is not None and fact.session_id != filters.session_id:
        return False
    if filters.kinds is not None and fact.kind not in filters.kinds:
        return False
    if filters.since is not None and fact.valid_from < filters.since:
        return False
    if filters.until is not None and fact.valid_from >= filters.until:
        return False
    values = {
        "subject": fact.subject,
        "predicate": fact.predicate,
        "object": fact.object,
        "kind": fact.kind.value,
        "polarity": fact.polarity.value,
    }
    return all(values[key] == wanted for key, wanted in filters.tags.items())


def query_values(query: str) -> dict[int, float]:
    """The hashed features of every 1..MAX_VALUE_WORDS word n-gram of the query."""
    words = query.split()
    grams = {
        " ".join(words[i : i + n]).strip(".,;:!?\"'()")
        for n in range(1, MAX_VALUE_WORDS + 1)
        for i in range(len(words) - n + 1)
    }
    return hash_query(grams)


def to_hit(
    fact: SearchHit,
    *,
    score: ScoreBreakdown | None = None,
    state: MemoryState = MemoryState.COMMITTED,
) -> RecallHit:
    """The query-side view of one stored version."""
    return RecallHit(
        fact_id=fact.fact_id,
        chain_id=fact.chain_id,
        statement=render_statement(fact),
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        polarity=fact.polarity,
        kind=fact.kind,
        state=state,
        tier=fact.tier,
        score=score,
        version=fact.version,
        valid_from=fact.valid_from,
        valid_until=fact.valid_until,
        expires_at=fact.expires_at,
        supersedes=fact.supersedes,
        session_id=fact.session_id,
        lineage=fact.lineage,
    )
