"""Scoring of the LongMemEval retrieval benchmark, and the two raw-turn baselines.

Every system is reduced to one thing: a ranked list of turn ids, best first
(``None`` where a result names no turn). memstream's recall ranks memories, each
naming its source turn through its lineage, so one turn can appear several
times; the baselines rank the raw turns themselves.

- ``any-hit@k``: 1 if at least one evidence turn is among the top ``k`` results.
- ``recovered@k``: the fraction of the evidence turns among the top ``k`` results.
- ``chance``: the expected value of both for a ranking in random order, exactly:
  the oracle haystacks are small (about 22 turns), so chance is far from zero.
- ``latest-first@k`` (knowledge-update questions whose evidence spans sessions of
  different dates): 1 if a turn of the latest evidence session is in the top
  ``k`` and ranks above every outdated evidence turn (an outdated turn not in the
  top ``k`` ranks below everything); 0 otherwise, including when no latest
  evidence is in the top ``k``.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Okapi

Ranked = Sequence[str | None]
_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens: what BM25 indexes and queries with."""
    return _WORD.findall(text.lower())


def found_at(ranked: Ranked, wanted: set[str], k: int) -> set[str]:
    """The ids of ``wanted`` among the top ``k`` of ``ranked``."""
    return {turn for turn in ranked[:k] if turn is not None and turn in wanted}


def any_hit(ranked: Ranked, evidence: set[str], k: int) -> float:
    """1.0 when an evidence turn is in the top ``k``, else 0.0."""
    return 1.0 if found_at(ranked, evidence, k) else 0.0


def recovered(ranked: Ranked, evidence: set[str], k: int) -> float:
    """The fraction of evidence turns in the top ``k`` (``evidence`` is never empty here)."""
    return len(found_at(ranked, evidence, k)) / len(evidence)


def recall_all(ranked: Ranked, evidence: set[str], k: int) -> float:
    """LongMemEval's recall_all@k: 1.0 when every evidence turn is in the top ``k``."""
    return 1.0 if found_at(ranked, evidence, k) == evidence else 0.0


def ndcg(ranked: Ranked, evidence: set[str], k: int) -> float:
    """LongMemEval's NDCG@k with binary relevance; a turn counts once, at its best rank."""
    seen: set[str] = set()
    gain = 0.0
    for position, turn in enumerate(ranked[:k]):
        if turn is not None and turn in evidence and turn not in seen:
            seen.add(turn)
            gain += 1.0 / math.log2(position + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(evidence), k)))
    return gain / ideal if ideal else 0.0


def chance(turns: int, evidence: int, k: int) -> tuple[float, float]:
    """Expected (any-hit@k, recovered@k) of a uniformly random order of ``turns`` turns.

    No evidence in the top k has probability C(turns - evidence, k) / C(turns, k);
    each evidence turn is in the top k with probability min(k, turns) / turns.
    """
    miss = math.comb(turns - evidence, k) / math.comb(turns, k) if k <= turns else 0.0
    return 1.0 - miss, min(k, turns) / turns


def first_rank(ranked: Ranked, wanted: set[str], k: int) -> float:
    """The 0-based position of the first ``wanted`` turn in the top ``k``; inf when none."""
    for position, turn in enumerate(ranked[:k]):
        if turn is not None and turn in wanted:
            return float(position)
    return math.inf


def latest_first(ranked: Ranked, latest: set[str], outdated: set[str], k: int) -> float:
    """1.0 when the latest evidence is in the top ``k`` above all outdated evidence."""
    best_latest = first_rank(ranked, latest, k)
    return 1.0 if best_latest < first_rank(ranked, outdated, k) else 0.0


def bm25_ranking(query: str, texts: Sequence[str]) -> list[int]:
    """Indices of ``texts`` by Okapi BM25 score for ``query`` (rank-bm25 defaults), best first."""
    scores = BM25Okapi([tokens(t) for t in texts]).get_scores(tokens(query))
    return _descending(np.asarray(scores, dtype=np.float64))


def cosine_ranking(query: npt.NDArray[np.float32], rows: npt.NDArray[np.float32]) -> list[int]:
    """Indices of ``rows`` (unit vectors) by cosine to ``query`` (a unit vector), best first."""
    return _descending((rows @ query).astype(np.float64))


def _descending(scores: npt.NDArray[np.float64]) -> list[int]:
    # A stable sort: equal scores keep the haystack's (time) order.
    return [int(i) for i in np.argsort(-scores, kind="stable")]


@dataclass
class Tally:
    """Per-question scores of several systems, by question type."""

    ks: tuple[int, ...] = (5, 10)
    rows: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def add_recall(
        self, system: str, question_type: str, ranked: Ranked, evidence: set[str]
    ) -> None:
        """Score one question's ranking for ``system`` at every k."""
        for k in self.ks:
            self._add(system, question_type, f"any@{k}", any_hit(ranked, evidence, k))
            self._add(system, question_type, f"recovered@{k}", recovered(ranked, evidence, k))
            self._add(system, question_type, f"all@{k}", recall_all(ranked, evidence, k))
        self._add(system, question_type, "ndcg@10", ndcg(ranked, evidence, 10))

    def add_chance(self, question_type: str, turns: int, evidence: int) -> None:
        """Record the random-order expectation as the system ``chance``."""
        for k in self.ks:
            hit, share = chance(turns, evidence, k)
            self._add("chance", question_type, f"any@{k}", hit)
            self._add("chance", question_type, f"recovered@{k}", share)

    def add_update_order(
        self, system: str, ranked: Ranked, latest: set[str], outdated: set[str], k: int
    ) -> None:
        """Score one knowledge-update question's ordering (both sets non-empty)."""
        self._add(
            system,
            "knowledge-update",
            f"latest-first@{k}",
            latest_first(ranked, latest, outdated, k),
        )
        both = bool(found_at(ranked, latest, k)) and bool(found_at(ranked, outdated, k))
        self._add(system, "knowledge-update", f"both-in@{k}", 1.0 if both else 0.0)

    def _add(self, system: str, question_type: str, metric: str, value: float) -> None:
        self.rows.setdefault((system, question_type, metric), []).append(value)

    def mean(self, system: str, metric: str, question_type: str | None = None) -> float:
        """The mean of ``metric`` over one type's questions, or over all (``None``)."""
        values = [
            v
            for (s, t, m), vs in self.rows.items()
            if s == system and m == metric and (question_type is None or t == question_type)
            for v in vs
        ]
        return statistics.mean(values) if values else math.nan

    def count(self, system: str, metric: str, question_type: str | None = None) -> int:
        """How many questions ``metric`` was scored on."""
        return sum(
            len(vs)
            for (s, t, m), vs in self.rows.items()
            if s == system and m == metric and (question_type is None or t == question_type)
        )

    def types(self) -> list[str]:
        """The question types seen, sorted."""
        return sorted({t for _, t, m in self.rows if m.startswith("any@")})
