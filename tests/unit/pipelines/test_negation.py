"""Negations are facts, never dropped: each everyday form gives a negated triple."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.extract import FactExtractor
from schemas.events import DialogueEvent, Role
from schemas.memory import Polarity

os.environ.setdefault("FLAIR_CACHE_ROOT", str(Path.home() / ".cache" / "memstream" / "flair"))
NEG, AFF = Polarity.NEGATED, Polarity.AFFIRMED


@pytest.fixture(scope="module")
def extractor() -> FactExtractor:
    return FactExtractor.load()


def triples(extractor: FactExtractor, text: str) -> set[tuple[str, str, Polarity]]:
    event = DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=0,
        role=Role.USER,
        text=text,
        ts=datetime(2026, 3, 1, tzinfo=UTC),
    )
    found = extractor.extract(event, extractor.parser.parse(event))
    return {(f.predicate, f.object, f.polarity) for f in found}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # spaCy `neg` dependency on the governing verb
        ("I don't accept weekend installation.", ("installation_time", "weekend", NEG)),
        ("Please don't call me on weekends.", ("contact_time", "weekend", NEG)),
        ("I never eat mushrooms.", ("likes", "mushroom", NEG)),
        ("I won't be home on Tuesday for the delivery.", ("delivery_time", "tuesday", NEG)),
        # the determiner "no"
        ("No installation before 9.", ("installation_time", "before 9", NEG)),
        ("No deliveries on Monday please.", ("delivery_time", "monday", NEG)),
        # "not" right on the object
        ("Deliver on Friday, not Saturday.", ("delivery_time", "saturday", NEG)),
        ("I pay by credit card, not PayPal.", ("payment_method", "paypal", NEG)),
        # following cues: the object comes first
        ("Wednesday doesn't work for the installation.", ("installation_time", "wednesday", NEG)),
        ("Delivery on Thursday is impossible.", ("delivery_time", "thursday", NEG)),
        # negative verbs and phrases
        ("I hate spicy dishes.", ("likes", "spicy dish", NEG)),
        ("I can't stand loud music.", ("likes", "loud music", NEG)),
        ("I'm not a fan of breakfast buffets.", ("likes", "breakfast buffet", NEG)),
        ("I don't want a two-year contract.", ("plan", "two-year contract", NEG)),
        ("Please don't text me.", ("contact_channel", "sms", NEG)),
    ],
)
def test_negated_forms(
    extractor: FactExtractor, text: str, expected: tuple[str, str, Polarity]
) -> None:
    assert expected in triples(extractor, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I accept weekend installation.", ("installation_time", "weekend", AFF)),
        ("I love mushrooms.", ("likes", "mushroom", AFF)),
        ("I'm not sure, but call me on Tuesday.", ("contact_time", "tuesday", AFF)),
        ("Don't call me during working hours, only after 6pm.", ("contact_time", "after 6pm", AFF)),
        ("I can't come on Monday, I'm flying to Paris.", ("travel", "paris", AFF)),
        # unavailability flips once: "not busy" is available
        ("I'm not busy on Monday, call me then.", ("contact_time", "monday", AFF)),
    ],
)
def test_affirmed_forms_stay_affirmed(
    extractor: FactExtractor, text: str, expected: tuple[str, str, Polarity]
) -> None:
    assert expected in triples(extractor, text)


def test_mixed_clause_keeps_both_polarities(extractor: FactExtractor) -> None:
    found = triples(extractor, "Any weekday is fine for the installation, but not before 10am.")
    assert ("installation_time", "weekday", AFF) in found
    assert ("installation_time", "before 10am", NEG) in found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("No feta, thanks.", {("likes", "feta", NEG)}),
        ("A veggie wrap without onions.", {("likes", "onion", NEG)}),
        ("Neither tea nor coffee for me.", {("likes", "coffee", NEG)}),
        ("I don't eat chocolate anymore.", {("likes", "chocolate", NEG)}),
        (
            "I'd rather not have the installation on Saturday.",
            {("installation_time", "saturday", NEG)},
        ),
        ("I'm going to Porto instead of Lisbon.", {("travel", "lisbon", NEG)}),
        ("Tuesday mornings are no good.", {("appointment_time", "tuesday morning", NEG)}),
        # exclusions, refusals and unavailability
        ("Anything but Monday for the delivery.", {("delivery_time", "monday", NEG)}),
        ("Install any day except Wednesday.", {("installation_time", "wednesday", NEG)}),
        ("Thursdays are out for the delivery.", {("delivery_time", "thursday", NEG)}),
        ("Monday is a bad day for the installation.", {("installation_time", "monday", NEG)}),
        ("I'm away on Monday, so no delivery then.", {("delivery_time", "monday", NEG)}),
        (
            "Neither Monday nor Tuesday for the installation.",
            {("installation_time", "monday", NEG), ("installation_time", "tuesday", NEG)},
        ),
        ("I'm not keen on beetroot.", {("likes", "beetroot", NEG)}),
        ("I avoid dairy.", {("likes", "dairy", NEG)}),
    ],
)
def test_fragments_and_general_negation_patterns(
    extractor: FactExtractor, text: str, expected: set[tuple[str, str, Polarity]]
) -> None:
    assert expected <= triples(extractor, text)


@pytest.mark.parametrize(
    "text", ["No problem, thanks.", "No worries.", "Not sure yet.", "Friday is not an option."]
)
def test_courtesy_negations_are_no_dislikes(extractor: FactExtractor, text: str) -> None:
    assert {t for t in triples(extractor, text) if t[0] == "likes"} == set()
