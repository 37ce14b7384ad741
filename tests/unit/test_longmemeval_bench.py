"""The pure parts of benchmarks/bench_longmemeval.py on tiny hand-made questions.

Nothing here reads the LongMemEval file: the entries below are written in its
format (question, dates, sessions of turns flagged ``has_answer``).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from benchmarks.longmemeval_data import (
    by_haystack,
    events,
    haystack_key,
    load_questions,
    question_from_json,
    records,
    sample,
)
from benchmarks.longmemeval_scoring import (
    Tally,
    any_hit,
    bm25_ranking,
    chance,
    cosine_ranking,
    first_rank,
    latest_first,
    recovered,
)
from schemas.events import Role
from schemas.topics import DIALOGUE_EVENTS
from schemas.validate import decode_event


def entry(qid: str = "q1", qtype: str = "knowledge-update") -> dict[str, object]:
    """Two sessions listed newest first: the new value (May) before the old one (March)."""
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": "How many postcards do I have?",
        "answer": "25",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": ["2023/05/02 (Tue) 09:30", "2023/03/01 (Wed) 18:00"],
        "haystack_session_ids": ["s_new", "s_old"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I now have 25 postcards.", "has_answer": True},
                {"role": "assistant", "content": "Congratulations!", "has_answer": False},
            ],
            [
                {"role": "user", "content": "Hello there.", "has_answer": False},
                {"role": "assistant", "content": "Hi, how can I help?"},
                {"role": "user", "content": "I have 17 postcards.", "has_answer": True},
            ],
        ],
        "answer_session_ids": ["s_new", "s_old"],
    }


# -- data and events ----------------------------------------------------------
def test_sessions_are_put_in_time_order_and_turns_keep_their_ids() -> None:
    question = question_from_json(entry())
    assert [t.turn_id for t in question.turns] == [
        "s_old:0",
        "s_old:1",
        "s_old:2",
        "s_new:0",
        "s_new:1",
    ]
    assert question.asked_at == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)
    assert question.turns[2].at == datetime(2023, 3, 1, 18, 0, 2, tzinfo=UTC)
    assert [t.turn_id for t in question.evidence] == ["s_old:2", "s_new:0"]


def test_a_question_dated_before_its_own_sessions_is_asked_after_them() -> None:
    """43 oracle questions are dated hours before a session of their haystack."""
    early = entry() | {"question_date": "2023/05/02 (Tue) 08:00"}
    question = question_from_json(early)
    assert question.asked_at == question.turns[-1].at + timedelta(minutes=1)
    assert question.asked_at > max(t.at for t in question.turns)


def test_events_are_one_user_per_question_and_map_back_to_their_turns() -> None:
    question = question_from_json(entry())
    built = events(question, "lme")
    assert {(e.tenant_id, e.user_id) for e in built} == {("lme", "q1")}
    assert [(e.session_id, e.turn_index, e.turn_id) for e in built] == [
        (t.session_id, t.index, t.turn_id) for t in question.turns
    ]
    assert [e.role for e in built] == [Role.USER, Role.AGENT, Role.USER, Role.USER, Role.AGENT]
    assert [e.ts for e in built] == sorted(e.ts for e in built)
    assert len({e.event_id for e in built}) == len(built)
    raw = records(built)
    assert [(r.topic, r.partition, r.offset) for r in raw] == [
        (DIALOGUE_EVENTS, 0, i) for i in range(len(built))
    ]
    # What the pipeline decodes is the event, key included.
    assert [decode_event(r.topic, r.value) for r in raw] == built
    assert {r.key for r in raw} == {b"lme:q1"}


def test_evidence_by_recency_splits_latest_from_outdated() -> None:
    question = question_from_json(entry())
    assert question.evidence_by_recency() == ({"s_new:0"}, {"s_old:2"})
    # The old session without its evidence: all evidence in one session, nothing outdated.
    single = entry() | {
        "haystack_sessions": [
            [{"role": "user", "content": "I now have 25 postcards.", "has_answer": True}],
            [{"role": "user", "content": "Hello there."}],
        ]
    }
    assert question_from_json(single).evidence_by_recency() == ({"s_new:0"}, set())


def test_sample_skips_abstentions_and_questions_without_evidence() -> None:
    none = entry("q3")
    none["haystack_sessions"] = [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": "yo"}],
    ]
    pool = [
        question_from_json(e)
        for e in (entry("q1"), entry("q2_abs"), none, entry("q4", "multi-session"))
    ]
    assert [q.question_id for q in sample(pool, per_type=None, limit=None, seed=1)] in (
        ["q1", "q4"],
        ["q4", "q1"],
    )
    assert sorted(q.question_id for q in sample(pool, per_type=1, limit=None, seed=1)) == [
        "q1",
        "q4",
    ]
    assert len(sample(pool, per_type=None, limit=1, seed=1)) == 1


def test_a_missing_data_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--data"):
        load_questions(tmp_path / "absent.json")
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([entry()]))
    assert [q.question_id for q in load_questions(path)] == ["q1"]


# -- scoring ------------------------------------------------------------------
def test_recall_at_k_counts_evidence_turns_in_the_top_k_only() -> None:
    ranked = ["a", None, "e1", "a", "b", "e2"]  # memories: repeats and a turn-less result
    evidence = {"e1", "e2", "e3"}
    assert any_hit(ranked, evidence, 2) == 0.0
    assert any_hit(ranked, evidence, 3) == 1.0
    assert recovered(ranked, evidence, 5) == pytest.approx(1 / 3)
    assert recovered(ranked, evidence, 10) == pytest.approx(2 / 3)
    assert recovered([], evidence, 10) == 0.0


def test_latest_first_needs_the_latest_in_the_top_k_above_every_outdated() -> None:
    latest, outdated = {"new"}, {"old1", "old2"}
    assert latest_first(["x", "new", "old1"], latest, outdated, 10) == 1.0
    assert latest_first(["old2", "new", "old1"], latest, outdated, 10) == 0.0
    assert latest_first(["new"], latest, outdated, 10) == 1.0  # outdated not recalled at all
    assert latest_first(["old1", "x"], latest, outdated, 10) == 0.0
    assert latest_first([], latest, outdated, 10) == 0.0  # neither recalled
    assert latest_first(["x", "x", "new"], latest, outdated, 2) == 0.0  # latest beyond k
    assert first_rank([None, "old2"], outdated, 10) == 1.0
    assert first_rank(["x"], outdated, 10) == math.inf


def test_chance_is_the_exact_random_order_expectation() -> None:
    # 4 turns, 1 evidence turn, top 2: it is there with probability 2/4.
    assert chance(4, 1, 2) == (pytest.approx(0.5), pytest.approx(0.5))
    # 4 turns, 2 evidence turns, top 1: at least one with probability 2/4; each 1/4.
    assert chance(4, 2, 1) == (pytest.approx(0.5), pytest.approx(0.25))
    # 5 turns, 2 evidence, top 2: none with probability C(3,2)/C(5,2) = 3/10.
    assert chance(5, 2, 2)[0] == pytest.approx(0.7)
    assert chance(3, 1, 10) == (1.0, 1.0)  # k beyond the haystack: everything is in


def test_tally_averages_per_type_and_overall() -> None:
    tally = Tally(ks=(1, 2))
    tally.add_recall("bm25", "multi-session", ["e", "x"], {"e"})
    tally.add_recall("bm25", "knowledge-update", ["x", "e"], {"e", "f"})
    tally.add_update_order("bm25", ["new", "old"], {"new"}, {"old"}, 2)
    assert tally.mean("bm25", "any@1", "multi-session") == 1.0
    assert tally.mean("bm25", "any@1") == 0.5
    assert tally.mean("bm25", "recovered@2") == pytest.approx((1.0 + 0.5) / 2)
    assert tally.mean("bm25", "latest-first@2") == 1.0
    assert tally.mean("bm25", "both-in@2") == 1.0
    assert tally.count("bm25", "any@2") == 2
    assert tally.types() == ["knowledge-update", "multi-session"]
    assert math.isnan(tally.mean("minilm", "any@1"))
    tally.add_chance("multi-session", turns=4, evidence=1)
    assert tally.mean("chance", "recovered@2", "multi-session") == pytest.approx(0.5)


def test_baselines_rank_the_matching_turn_first() -> None:
    texts = ["the weather was nice", "I have 25 postcards now", "postcards are fun to send"]
    assert bm25_ranking("how many postcards do I have", texts)[:2] == [1, 2]
    rows = np.asarray([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    assert cosine_ranking(np.asarray([0.0, 1.0], dtype=np.float32), rows) == [1, 2, 0]


def test_recall_all_and_ndcg_follow_longmemeval() -> None:
    from benchmarks.longmemeval_scoring import ndcg, recall_all

    evidence = {"a", "b"}
    assert recall_all(["a", "x", "b"], evidence, 3) == 1.0
    assert recall_all(["a", "x", "b"], evidence, 2) == 0.0
    assert ndcg(["a", "b", "x"], evidence, 10) == pytest.approx(1.0)
    # One hit at rank 2 of an ideal two: (1/log2(3)) / (1 + 1/log2(3)).
    assert ndcg(["x", "a", "a"], evidence, 10) == pytest.approx(0.6309 / 1.6309, abs=1e-3)
    assert ndcg(["x", "y"], evidence, 10) == 0.0


def test_distractor_sessions_pad_the_haystack_without_evidence() -> None:
    from benchmarks.longmemeval_data import with_distractors

    questions = [question_from_json(entry(f"q{i}")) for i in range(4)]
    padded = with_distractors(questions, 2, seed=1)
    for before, after in zip(questions, padded, strict=True):
        borrowed = [t for t in after.turns if t not in before.turns]
        assert {t.session_id for t in borrowed} and not any(t.evidence for t in borrowed)
        assert {t.turn_id for t in after.evidence} == {t.turn_id for t in before.evidence}
        assert len({t.session_id for t in borrowed}) == 2
        first = min(t.session_at for t in before.turns)
        assert all(t.session_at >= first for t in borrowed)
        assert [t.at for t in after.turns] == sorted(t.at for t in after.turns)
    assert with_distractors(questions, 0, seed=1) == questions


def test_questions_sharing_a_haystack_run_together_in_first_seen_order() -> None:
    a1 = question_from_json(entry("a1"))
    other = entry("b1")
    other["question_date"] = "2023/07/01 (Sat) 10:00"  # same turns, asked later: another haystack
    b1 = question_from_json(other)
    a2 = replace(a1, question_id="a2", question="And in March?")
    ordered = by_haystack([a1, b1, a2])
    assert [q.question_id for q in ordered] == ["a1", "a2", "b1"]
    assert haystack_key(a1) == haystack_key(a2) != haystack_key(b1)
