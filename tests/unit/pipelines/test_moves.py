"""A move still to come as a plan to move there, read from the move word, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.moves import move_plans
from pipelines.parse import DialogueParser
from schemas.events import Role
from schemas.facts import ExtractedFact
from schemas.memory import Polarity


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def plans(
    nlp: Any, text: str, *facts: ExtractedFact, role: Role = Role.USER
) -> list[ExtractedFact]:
    return move_plans(turn(text, role), nlp(text), list(facts))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "House goes on the market Monday and we're moving down to Porthcawl.",
            "move to porthcawl",
        ),
        # chat spelling the parse reads as a noun, and a place it reads as a verb
        (
            "An' we're movin to Whitley Bay, Kev's cousin's got a wee terrace there.",
            "move to whitley bay",
        ),
        ("i'm actually moving to denmark.", "move to denmark"),
        ("but we're fixin to move up to Fort Worth", "move to fort worth"),
        # the home's place, said before the move or after "into"
        ("We found a house in East Legon, we are moving in June.", "move to east legon"),
        (
            "2 room flat in Friedrichshain, near Warschauer Strasse, moving on 15 April.",
            "move to friedrichshain",
        ),
        (
            "me and ffion are moving into a house on north parade in september",
            "move to north parade",
        ),
        ("moving to a smaller place in north east valley w 2 mates", "move to north east valley"),
        ("I am moving into a retirement flat next month", "move into retirement flat"),
        ("we keep talking about moving back to india", "move back to india"),
    ],
)
def test_a_move_to_come_is_a_plan_to_move_there(nlp: Any, text: str, value: str) -> None:
    said = plans(nlp, text)
    assert [(f.predicate, f.object, f.polarity) for f in said] == [
        ("plans_to", value, Polarity.AFFIRMED)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Moved into a 2-bed in Chorlton last weekend.",  # made: where the user lives
        "Since moving to Leeds I've been much happier.",
        "he's moving to berlin with his girlfriend.",  # someone else's move
        "Suresh wants us to move to Goa after.",
        "Neighbour was moving to Spain and begged me to take the cat.",
        "Are you moving to Leeds?",  # asked
        "we're moving there in December",  # no place said
        "The move to Leeds went well.",
    ],
)
def test_no_plan_without_the_users_move_to_come_and_its_place(nlp: Any, text: str) -> None:
    assert plans(nlp, text) == []


def test_the_taggers_reading_of_the_place_gives_way(nlp: Any) -> None:
    text = "2 room flat in Friedrichshain, moving on 15 April. Love my job."
    said = plans(nlp, text, fact("lives_in", "friedrichshain"), fact("occupation", "baker"))
    assert {(f.predicate, f.object) for f in said} == {
        ("plans_to", "move to friedrichshain"),
        ("occupation", "baker"),
    }
    pieces = plans(
        nlp, "we keep talking about moving back to india", fact("plans_to", "moving back")
    )
    assert [f.object for f in pieces] == ["move back to india"]


def test_a_denied_move_is_a_negated_plan_and_a_hedged_one_waits(nlp: Any) -> None:
    (denied,) = plans(nlp, "and i'm def not moving back to leeds, signed for a house in rusholme")
    assert (denied.object, denied.polarity) == ("move back to leeds", Polarity.NEGATED)
    (unsure,) = plans(nlp, "honestly? maybe in 2-3 yrs. we keep talking about moving back to india")
    assert unsure.hedged and unsure.confidence < 0.82
    (sure,) = plans(nlp, "We're moving to Riverside end of June.")
    assert sure.object == "move to riverside" and not sure.hedged and sure.confidence >= 0.82


def test_an_agent_turn_states_no_plan_of_the_users(nlp: Any) -> None:
    assert plans(nlp, "So you're moving to Leeds in June.", role=Role.AGENT) == []
