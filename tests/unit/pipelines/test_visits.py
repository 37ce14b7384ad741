"""A place the speaker has been to is a visit, over tagged triples."""

from __future__ import annotations

import pytest

from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.extract.visits import as_visits


def trip(text: str, place: str, *, from_context: bool = False) -> LearnedTriple:
    start = text.index(place)
    return LearnedTriple(
        predicate="travel",
        obj=place.lower(),
        negated=False,
        hedged=False,
        confidence=0.9,
        from_context=from_context,
        start=start,
        end=start + len(place),
    )


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("nah mate, never been to Europe and never will", "Europe"),
        ("so good. finally been to scotland!! snow!!", "scotland"),
        ("Been to Bali twice, that'll do me", "Bali"),
        ("We visited Kyoto in the spring, loved it", "Kyoto"),
        ("I ain't never been to the Ozarks", "Ozarks"),
    ],
)
def test_a_place_the_speaker_has_been_to_is_a_visit(text: str, place: str) -> None:
    assert [t.predicate for t in as_visits([trip(text, place)], text)] == ["visited"]


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("I'm off to Lisbon next week", "Lisbon"),
        ("have you ever been to Rome?", "Rome"),
        ("she's been to Peru twice, lucky thing", "Peru"),
        ("I've been in Leeds five years now", "Leeds"),
        ("visiting Mum in Galway at Easter", "Galway"),
    ],
)
def test_a_trip_ahead_or_someone_elses_visit_stays_a_trip(text: str, place: str) -> None:
    assert [t.predicate for t in as_visits([trip(text, place)], text)] == ["travel"]


def test_a_place_read_from_the_previous_turn_is_left_as_tagged() -> None:
    # Its offsets point into the other turn's text, not this one.
    text = "been to Spain yet?"
    assert as_visits([trip(text, "Spain", from_context=True)], text)[0].predicate == "travel"
