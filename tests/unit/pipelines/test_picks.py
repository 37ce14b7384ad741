"""A user's pick among offered times becomes the whole offer, over plain lists."""

from __future__ import annotations

import pytest
from stage_builders import fact, turn

from pipelines.extract.context import OfferedFact
from pipelines.extract.picks import picked_offers
from schemas.events import Role
from schemas.memory import Polarity

SLOTS = [
    OfferedFact(predicate="installation_time", object="friday 27th 11am"),
    OfferedFact(predicate="installation_time", object="monday 23rd 9am"),
]


def picked(*values: str, offers: list[OfferedFact] = SLOTS) -> list[tuple[str, str]]:
    facts = [fact("appointment_time", v) for v in values]
    return [(f.predicate, f.object) for f in picked_offers(turn("..."), facts, offers)]


@pytest.mark.parametrize(
    "piece", ["monday 9", "monday", "23rd", "monday 23rd", "9am", "monday 9am", "on the 23rd"]
)
def test_a_piece_of_one_offer_is_that_offer(piece: str) -> None:
    assert picked(piece) == [("installation_time", "monday 23rd 9am")]


@pytest.mark.parametrize(
    "piece",
    [
        "tuesday",  # in no offer
        "monday morning",  # a word of the user's own
        "1",  # the start of no clock time ("1" of "11am" is not a pick)
        "2",
    ],
)
def test_a_piece_no_offer_holds_stays_as_said(piece: str) -> None:
    assert picked(piece) == [("appointment_time", piece)]


def test_a_piece_two_offers_hold_stays_as_said() -> None:
    offers = [
        OfferedFact(predicate="appointment_time", object="tuesday 9am"),
        OfferedFact(predicate="appointment_time", object="tuesday 2pm"),
    ]
    assert picked("tuesday", offers=offers) == [("appointment_time", "tuesday")]


def test_the_piece_and_the_offer_said_again_are_one_fact() -> None:
    assert picked("monday 23rd 9am", "monday 9") == [("installation_time", "monday 23rd 9am")]


def test_a_refused_time_is_not_completed() -> None:
    refused = fact("appointment_time", "friday", Polarity.NEGATED)
    out = picked_offers(turn("not friday"), [refused], SLOTS)
    assert [(f.object, f.polarity) for f in out] == [("friday", Polarity.NEGATED)]


def test_only_the_users_turn_picks() -> None:
    said = [fact("appointment_time", "monday 9")]
    assert picked_offers(turn("Monday at 9 then.", Role.AGENT), said, SLOTS) == said


def test_other_offers_and_facts_are_left_alone() -> None:
    offers = [OfferedFact(predicate="contact_channel", object="email")]
    assert picked("monday 9", offers=offers) == [("appointment_time", "monday 9")]
    facts = [fact("pet", "monday"), fact("appointment_time", "monday 9")]
    out = picked_offers(turn("..."), facts, SLOTS)
    assert [(f.predicate, f.object) for f in out] == [
        ("pet", "monday"),
        ("installation_time", "monday 23rd 9am"),
    ]
    assert out[1].text == "installation_time monday 23rd 9am"
