"""The other speaker asking after a value of the user's, over plain lists."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.extract.endings import KnownValue
from pipelines.extract.restated import asked_after
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, origin
from schemas.memory import Polarity

HELD = [
    KnownValue(predicate="travel", object="lisbon"),
    KnownValue(predicate="employer", object="royal mail"),
    KnownValue(predicate="hobby", object="gig rowing"),
    KnownValue(predicate="likes", object="supermalt"),
    KnownValue(predicate="event", object="back operation 12 may"),
]


def turn(text: str, role: Role = Role.AGENT) -> DialogueEvent:
    return DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=4,
        role=role,
        text=text,
        ts=datetime(2026, 3, 1, 9, tzinfo=UTC),
    )


def asked(text: str, role: Role = Role.AGENT) -> set[tuple[str, str, Polarity]]:
    found = asked_after(turn(text, role), [], HELD)
    assert all(f.asserted_by is Assertor.AGENT for f in found)
    return {(f.predicate, f.object, f.polarity) for f in found}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Good on you. Lisbon still happening?", ("travel", "lisbon")),
        ("unlucky. still on the Royal Mail?", ("employer", "royal mail")),
        ("Are you keeping up the rowing?", ("hobby", "gig rowing")),
        ("Back on the gigs then?", ("hobby", "gig rowing")),
    ],
)
def test_asking_whether_a_held_value_still_holds_restates_it(
    text: str, value: tuple[str, str]
) -> None:
    assert asked(text) == {(*value, Polarity.AFFIRMED)}


def test_asking_whether_it_ended_restates_it_negated() -> None:
    assert asked("So no more Supermalt for you.") == {("likes", "supermalt", Polarity.NEGATED)}


@pytest.mark.parametrize(
    "text",
    [
        "How was Lisbon?",  # asks about it, not whether it still holds
        "Still at the bakery?",  # no held value named
        "Lisbon is still lovely in May.",  # no question
    ],
)
def test_nothing_is_restated_without_a_question_after_a_held_value(text: str) -> None:
    assert asked(text) == set()


def test_the_users_own_turn_restates_nothing() -> None:
    assert asked("Lisbon still happening?", Role.USER) == set()


def test_a_value_the_turn_states_already_is_not_repeated() -> None:
    event = turn("Lisbon still happening?")
    said = ExtractedFact(
        **origin(event), subject="user", predicate="travel", object="lisbon", confidence=0.88
    )
    assert asked_after(event, [said], HELD) == []
