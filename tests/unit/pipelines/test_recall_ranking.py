"""Recall ranking: the formula, each signal deciding, validity, merging, negations."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from pipelines.recall import (
    Candidate,
    RecallWeights,
    bm25_scores,
    rank,
    render_statement,
    time_score,
)
from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryState, Polarity, Tier
from schemas.query import RecallFilters, RecallHit

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def hit(
    fact_id: str,
    predicate: str,
    obj: str,
    *,
    text: str = "",
    subject: str = "user",
    days_old: float = 0.0,
    tier: Tier = Tier.EPISODIC,
    polarity: Polarity = Polarity.AFFIRMED,
    kind: MemoryKind = MemoryKind.FACT,
    valid_until: datetime | None = None,
    expires_at: datetime | None = None,
    session_id: str | None = "s1",
) -> SearchHit:
    return SearchHit(
        tier=tier,
        fact_id=fact_id,
        chain_id=f"c-{predicate}",
        tenant_id="t",
        user_id="u",
        session_id=session_id,
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        kind=kind,
        text=text,
        version=1,
        valid_from=NOW - timedelta(days=days_old),
        valid_until=valid_until,
        expires_at=expires_at,
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=7, event_id="e7"),
    )


def ids(hits: list[RecallHit]) -> list[str]:
    return [h.fact_id for h in hits]


def test_total_is_the_weighted_sum_of_the_three_signals() -> None:
    found = rank(
        "phone number",
        [Candidate(hit("a", "phone_number", "555-0100", days_old=30), 0.5)],
        at=NOW,
    )
    score = found[0].score
    assert score is not None
    assert score.time == pytest.approx(0.5)  # 30 days: 1 / (1 + 30/30)
    expected = 0.6 * score.vector + 0.3 * score.keyword + 0.1 * score.time
    assert score.total == pytest.approx(expected)
    assert score.vector == pytest.approx(0.5)


def test_vector_decides_when_keyword_and_time_tie() -> None:
    near = Candidate(hit("near", "likes", "sushi"), 0.9)
    far = Candidate(hit("far", "likes", "pizza"), 0.2)
    found = rank("what food do they enjoy", [far, near], at=NOW)
    assert ids(found) == ["near", "far"]
    assert [h.score.keyword for h in found if h.score] == [0.0, 0.0]


def test_keyword_decides_when_vector_and_time_tie() -> None:
    sushi = Candidate(hit("sushi", "likes", "sushi"), 0.5)
    pizza = Candidate(hit("pizza", "likes", "pizza"), 0.5)
    found = rank("does the user like pizza", [sushi, pizza], at=NOW)
    assert ids(found) == ["pizza", "sushi"]
    top, other = (h.score for h in found)
    assert top is not None and other is not None
    assert top.keyword > other.keyword
    assert top.vector == other.vector and top.time == other.time


def test_time_decides_when_vector_and_keyword_tie() -> None:
    old = Candidate(hit("old", "likes", "tea", days_old=90), 0.5)
    new = Candidate(hit("new", "likes", "tea", days_old=1), 0.5)
    found = rank("tea", [old, new], at=NOW)
    assert ids(found) == ["new", "old"]
    assert found[1].score is not None
    assert found[1].score.time == pytest.approx(1 / (1 + 90 / 30))


def test_an_exact_value_in_the_query_hits_the_hashed_object() -> None:
    old = Candidate(hit("old", "phone_number", "555-0100"), 0.5)
    new = Candidate(hit("new", "phone_number", "555-0199"), 0.5)
    found = rank("call me on 555-0199 please", [old, new], at=NOW)
    assert ids(found) == ["new", "old"]
    top, other = (h.score for h in found)
    assert top is not None and other is not None
    # exact half (0.5) plus the best BM25 half (0.5); the other shares no term.
    assert top.keyword == pytest.approx(1.0)
    assert other.keyword == pytest.approx(0.0)


def test_only_versions_current_at_as_of_unless_history() -> None:
    t1 = NOW - timedelta(days=10)
    v1 = Candidate(hit("v1", "phone_number", "555-0100", days_old=40, valid_until=t1), 0.5)
    v2 = Candidate(hit("v2", "phone_number", "555-0199", days_old=10), 0.5)
    assert ids(rank("phone", [v1, v2], at=NOW)) == ["v2"]
    assert ids(rank("phone", [v1, v2], at=t1 - timedelta(days=1))) == ["v1"]
    history = rank("phone", [v1, v2], at=NOW, include_history=True)
    assert set(ids(history)) == {"v1", "v2"}
    # Stated after as_of: not even history knows it yet.
    early = rank("phone", [v1, v2], at=t1 - timedelta(days=1), include_history=True)
    assert ids(early) == ["v1"]


def test_expired_versions_are_not_recalled() -> None:
    gone_at = NOW - timedelta(hours=1)
    gone = Candidate(hit("gone", "travel", "berlin", days_old=1, expires_at=gone_at), 0.9)
    assert rank("travel", [gone], at=NOW) == []
    assert ids(rank("travel", [gone], at=NOW - timedelta(hours=2))) == ["gone"]


def test_one_hit_per_fact_keeping_the_best_score_then_the_semantic_tier() -> None:
    episodic = Candidate(hit("f", "likes", "tea", tier=Tier.EPISODIC), 0.4)
    semantic = Candidate(hit("f", "likes", "tea", tier=Tier.SEMANTIC), 0.7)
    [merged] = rank("tea", [episodic, semantic], at=NOW)
    assert merged.tier is Tier.SEMANTIC and merged.score and merged.score.vector == 0.7
    tied = [Candidate(hit("f", "likes", "tea", tier=t), 0.4) for t in Tier]
    [kept] = rank("tea", tied, at=NOW)
    assert kept.tier is Tier.SEMANTIC


def test_negated_facts_read_as_negations_never_as_the_positive() -> None:
    positive_text = hit("n1", "accept", "weekend installation", text="", polarity=Polarity.NEGATED)
    assert render_statement(positive_text) == "user does not accept weekend installation"
    wrong_text = hit(
        "n2",
        "accepts",
        "weekend installation",
        text="accepts weekend installation",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(wrong_text) == "user does not accept weekend installation"
    relation = hit("n3", "NOT_IN", "weekend", subject="installation_time")
    assert render_statement(relation) == "installation time not in weekend"
    attribute = hit("n4", "installation_time", "weekend", polarity=Polarity.NEGATED)
    assert render_statement(attribute) == "user not installation time weekend"
    own = hit(
        "n5",
        "installation_time",
        "weekend",
        text="No weekend installation please",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(own) == "No weekend installation please"
    # A store's stand-in document for a record without text reads in words too.
    stand_in = hit(
        "n6",
        "accept",
        "weekend installation",
        text="user NOT accept weekend installation",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(stand_in) == "user does not accept weekend installation"
    plain = hit("a1", "phone_number", "555-0100", text="user phone_number 555-0100")
    assert render_statement(plain) == "user phone number 555-0100"
    [found] = rank("weekend installation", [Candidate(positive_text, 0.8)], at=NOW)
    assert found.statement == "user does not accept weekend installation"
    assert found.polarity is Polarity.NEGATED


def test_filters_narrow_by_tags_kinds_session_and_time() -> None:
    rule = Candidate(hit("rule", "contact_time", "before 9", kind=MemoryKind.RULE), 0.5)
    pref = Candidate(
        hit("pref", "likes", "tea", kind=MemoryKind.PREFERENCE, session_id="s2", days_old=5), 0.5
    )
    both = [rule, pref]
    assert ids(rank("x", both, at=NOW, filters=RecallFilters(kinds=[MemoryKind.RULE]))) == ["rule"]
    assert ids(rank("x", both, at=NOW, filters=RecallFilters(session_id="s2"))) == ["pref"]
    by_tag = RecallFilters(tags={"predicate": "likes", "object": "tea"})
    assert ids(rank("x", both, at=NOW, filters=by_tag)) == ["pref"]
    recent = RecallFilters(since=NOW - timedelta(days=1))
    assert ids(rank("x", both, at=NOW, filters=recent)) == ["rule"]
    older = RecallFilters(until=NOW - timedelta(days=1))
    assert ids(rank("x", both, at=NOW, filters=older)) == ["pref"]
    with pytest.raises(ValidationError):
        RecallFilters.model_validate({"tags": {"tenant": "other"}})


def test_pending_state_is_carried_and_k_cuts() -> None:
    pending = Candidate(hit("p", "likes", "tea", tier=Tier.WORKING), 0.9, MemoryState.PENDING)
    other = Candidate(hit("o", "likes", "coffee"), 0.1)
    found = rank("tea", [pending, other], at=NOW, k=1)
    assert ids(found) == ["p"] and found[0].state is MemoryState.PENDING


def test_weights_must_sum_to_one_and_change_the_ranking() -> None:
    with pytest.raises(ValidationError):
        RecallWeights(vector=0.5, keyword=0.3, time=0.1)
    close_old = Candidate(hit("close_old", "likes", "tea", days_old=300), 0.9)
    far_new = Candidate(hit("far_new", "likes", "tea"), 0.1)
    only_time = RecallWeights(vector=0.0, keyword=0.0, time=1.0)
    assert ids(rank("tea", [close_old, far_new], at=NOW)) == ["close_old", "far_new"]
    assert ids(rank("tea", [close_old, far_new], at=NOW, weights=only_time)) == [
        "far_new",
        "close_old",
    ]


def test_bm25_is_normalised_and_positive_for_tiny_pools() -> None:
    assert bm25_scores("tea", ["user likes tea"]) == [1.0]
    assert bm25_scores("tea", ["user likes coffee"]) == [0.0]
    assert bm25_scores("the", ["user likes tea"]) == [0.0]  # only a stop word
    scores = bm25_scores("tea", ["likes tea", "likes tea", "likes coffee"])
    assert scores[0] == scores[1] == 1.0 and scores[2] == 0.0


def test_time_score_formula() -> None:
    assert time_score(NOW, NOW) == 1.0
    assert time_score(NOW - timedelta(days=60), NOW) == pytest.approx(1 / 3)
    assert time_score(NOW + timedelta(days=1), NOW) == 1.0
    assert math.isclose(time_score(NOW - timedelta(days=15), NOW), 1 / 1.5)
