"""Learned extractor scoring: same turn, predicate, value and polarity."""

from __future__ import annotations

import pytest

from pipelines.extract.learned.scoring import score
from pipelines.extract.learned.tagging import GoldTriple, LearnedTriple


def triple(predicate: str, obj: str, negated: bool = False, hedged: bool = False) -> LearnedTriple:
    return LearnedTriple(predicate, obj, negated, hedged, 0.9, from_context=False)


def test_a_match_needs_predicate_value_and_polarity() -> None:
    gold = [
        [GoldTriple("phone_number", "07700900123"), GoldTriple("likes", "mushroom", negated=True)],
        [GoldTriple("plan", "30gb", hedged=True)],
    ]
    predicted = [
        # Same number said with its country code; the dislike predicted as a like.
        [triple("phone_number", "+447700900123"), triple("likes", "mushroom")],
        [triple("plan", "30gb", hedged=True), triple("plan", "30gb")],
    ]
    report = score(gold, predicted)
    assert (report.overall.tp, report.overall.fp, report.overall.fn) == (2, 2, 1)
    assert report.overall.precision == pytest.approx(0.5)
    assert report.overall.recall == pytest.approx(2 / 3)
    assert report.negated.recall == 0.0
    assert report.hedged.recall == 1.0
    assert report.by_predicate["likes"].fp == 1 and report.by_predicate["likes"].fn == 1
    assert report.by_predicate["plan"].f1 == pytest.approx(2 / 3)


def test_aliases_count_as_their_predicate_and_empty_scores_are_zero() -> None:
    report = score([[GoldTriple("preferred_phone", "07700900123")]], [[]])
    assert report.by_predicate["phone_number"].fn == 1
    assert report.overall.f1 == 0.0
    assert score([], []).overall.precision == 0.0
