"""Recall ranking: merge the tiers' hits, keep what holds, score, render.

    total = w_vector * vector + w_keyword * keyword + w_time * time
    time  = 1 / (1 + days / 30)

docs/architecture.md, Tiers fixes the formula and the default weights (0.6 / 0.3 / 0.1).

- ``vector`` is the cosine of the query vector and the item's vector as the
  caller measured it (Chroma's similarity, or MiniLM on the statement scaled to
  the combined space), floored at 0: an opposite item is simply unrelated.
- ``keyword`` mixes BM25 over the candidates' text (normalised by the best BM25
  score of this recall) with exact matching on hashed fields: the query's word
  n-grams hashed as bare values (``pipelines.encode.hashing.hash_query``) against
  the item's object hashed as a value, the way the encode stage hashes it. A
  phone number or a day typed by the agent therefore hits exactly.
- ``time`` decays with the age of the version at the recall moment (``as_of``
  or now): 30 days halves it.

Pure: the caller reads the stores and measures vector similarity; this module
sees plain values and never imports a store (pipelines/.ruff.toml).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from rank_bm25 import BM25Okapi

from pipelines.encode.hashing import field_features, hash_feature_lists, hash_query
from schemas.hits import SearchHit
from schemas.memory import MemoryState, Tier, words
from schemas.query import RecallFilters, RecallHit, ScoreBreakdown

# docs/architecture.md, Tiers: time = 1 / (1 + days / 30).
TIME_SCALE_DAYS = 30.0
# Longest word n-gram of a query tried as an exact value: objects are short
# ("555-0199", "monday 9am", "gluten-free pasta"); 4 words covers a street
# address's "12 baker street london" without hashing every long span.
MAX_VALUE_WORDS = 4
# When several tiers return one fact version, the one kept on a tie: the
# semantic tier holds consolidated (promoted) facts, working memory only
# pending ones.
_TIER_PREFERENCE = {Tier.SEMANTIC: 0, Tier.EPISODIC: 1, Tier.WORKING: 2}
_TOKEN = re.compile(r"[0-9a-z]+(?:[-'][0-9a-z]+)*")


class RecallWeights(BaseModel):
    """Weights of the recall score; they sum to 1 so the total stays in [0, 1]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # docs/architecture.md, Tiers / issue 6: score = 0.6 vector + 0.3 keyword + 0.1 time.
    vector: float = Field(default=0.6, ge=0.0, le=1.0)
    keyword: float = Field(default=0.3, ge=0.0, le=1.0)
    time: float = Field(default=0.1, ge=0.0, le=1.0)
    # Share of the keyword signal given to an exact field hit, the rest to BM25.
    # Our choice: an exact value (a phone number) counts as much as the best
    # text match of the recall, and neither alone reaches the full keyword score.
    exact_share: float = Field(default=0.5, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> Self:
        if not math.isclose(self.vector + self.keyword + self.time, 1.0, abs_tol=1e-6):
            raise ValueError("vector + keyword + time weights must sum to 1")
        return self


@dataclass(frozen=True)
class Candidate:
    """A fact version read from one tier, with its vector similarity to the query."""

    fact: SearchHit
    vector: float
    state: MemoryState = MemoryState.COMMITTED


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


def time_score(valid_from: datetime, at: datetime) -> float:
    """``1 / (1 + days / 30)``; a version stated after ``at`` counts as brand new."""
    days = max((at - valid_from) / timedelta(days=1), 0.0)
    return 1.0 / (1.0 + days / TIME_SCALE_DAYS)


@cache
def _stop_words() -> frozenset[str]:
    # scikit-learn takes ~2 s to import: only when the first text is tokenised,
    # not for everything that imports this module (the settings, the CLI).
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without English stop words (BM25's vocabulary)."""
    stop_words = _stop_words()
    return [t for t in _TOKEN.findall(text.casefold()) if t not in stop_words]


class _PositiveIdfBM25(BM25Okapi):
    """BM25 with Lucene's idf, ``log(1 + (N - n + 0.5) / (n + 0.5))``, always positive.

    rank_bm25's Okapi idf goes negative for a term in more than half of the
    documents, and a recall pool is small (often a handful of facts), so a term
    every candidate shares would push matching candidates below non-matching ones.
    """

    def _calc_idf(self, nd: Mapping[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 of each document for ``query``, divided by the best one (0 if none match)."""
    corpus = [tokens(doc) for doc in documents]
    terms = tokens(query)
    if not terms or not any(corpus):
        return [0.0] * len(documents)
    raw = _PositiveIdfBM25(corpus).get_scores(terms)
    best = float(max(raw))
    return [float(s) / best if best > 0 else 0.0 for s in raw]


def query_values(query: str) -> dict[int, float]:
    """The hashed features of every 1..MAX_VALUE_WORDS word n-gram of the query."""
    words = query.split()
    grams = {
        " ".join(words[i : i + n]).strip(".,;:!?\"'()")
        for n in range(1, MAX_VALUE_WORDS + 1)
        for i in range(len(words) - n + 1)
    }
    return hash_query(grams)


def exact_hits(query: str, facts: Sequence[SearchHit]) -> list[bool]:
    """Whether the query names each fact's object exactly (hashed field match)."""
    wanted = query_values(query)
    hashed = hash_feature_lists([field_features({"object": f.object}) for f in facts])
    return [any(index in wanted for index in item) for item in hashed]


def _merge(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per fact_id: the best vector similarity, then the preferred tier."""
    best: dict[str, Candidate] = {}
    for cand in candidates:
        kept = best.get(cand.fact.fact_id)
        rank = (-cand.vector, _TIER_PREFERENCE[cand.fact.tier])
        if kept is None or rank < (-kept.vector, _TIER_PREFERENCE[kept.fact.tier]):
            best[cand.fact.fact_id] = cand
    return list(best.values())


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


def rank(
    query: str,
    candidates: Sequence[Candidate],
    *,
    at: datetime,
    k: int = 10,
    weights: RecallWeights | None = None,
    filters: RecallFilters | None = None,
    include_history: bool = False,
) -> list[RecallHit]:
    """The ``k`` best fact versions for ``query`` at ``at``, best first.

    Keeps only versions that held at ``at`` (``include_history``: every version
    stated by then) and that pass ``filters``; merges the tiers by fact id.
    Ties break by fact id, so the same input always ranks the same way.
    """
    w = weights or RecallWeights()
    kept = [
        c
        for c in _merge(candidates)
        if (c.fact.valid_from <= at if include_history else c.fact.is_current(at))
        and passes(c.fact, filters)
    ]
    if not kept or k < 1:
        return []
    docs = [f"{render_statement(c.fact)} {words(c.fact.predicate)} {c.fact.object}" for c in kept]
    bm25 = bm25_scores(query, docs)
    exact = exact_hits(query, [c.fact for c in kept])
    scored: list[tuple[float, str, RecallHit]] = []
    for cand, text_match, exact_match in zip(kept, bm25, exact, strict=True):
        vector = min(max(cand.vector, 0.0), 1.0)
        keyword = (1.0 - w.exact_share) * text_match + w.exact_share * float(exact_match)
        recency = time_score(cand.fact.valid_from, at)
        total = w.vector * vector + w.keyword * keyword + w.time * recency
        breakdown = ScoreBreakdown(
            vector=vector, keyword=keyword, time=recency, total=min(max(total, 0.0), 1.0)
        )
        hit = to_hit(cand.fact, score=breakdown, state=cand.state)
        scored.append((-breakdown.total, cand.fact.fact_id, hit))
    scored.sort(key=lambda row: (row[0], row[1]))
    return [hit for _, _, hit in scored[:k]]
