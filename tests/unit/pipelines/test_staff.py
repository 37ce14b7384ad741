"""Who the user asks to be seen by, over plain turns."""

from __future__ import annotations

import pytest
from stage_builders import turn

from pipelines.extract.staff import with_staff
from schemas.events import Role
from schemas.facts import Assertor, ExtractedFact, origin


def staff(text: str, role: Role = Role.USER) -> set[tuple[str, Assertor]]:
    out = with_staff(turn(text, role), [])
    return {(f.object, f.asserted_by) for f in out if f.predicate == "preferred_staff"}


@pytest.mark.parametrize(
    ("text", "person"),
    [
        ("We'd like Anna Kowalczyk if at all possible, we've had her before.", "anna kowalczyk"),
        ("Friday afternoon, and with Dr. Moreno if possible.", "dr moreno"),
        ("Perfect. And could Dr Keane do it? She was so gentle.", "dr keane"),
        ("I'd rather wait for Niamh, if it's all the same.", "niamh"),
        ("I'd rather wait for Niamh again, if it's all the same.", "niamh"),
        ("Can I see Mr Patel again?", "mr patel"),
    ],
)
def test_the_user_asking_for_a_person(text: str, person: str | None) -> None:
    assert staff(text) == ({(person, Assertor.USER)} if person else set())


@pytest.mark.parametrize(
    "text",
    [
        "I'd like Premium if possible",  # one capitalised word after "like": a product
        "I have my appointment Wednesday with Ms Krol.",  # says who, asks for nobody
        "Can we do it with Thursday again?",  # a day is no person
    ],
)
def test_no_person_is_asked_for(text: str) -> None:
    assert staff(text) == set()


@pytest.mark.parametrize(
    ("text", "person"),
    [
        ("Would you like to see Tunde again? He has Thursday at 6pm.", "tunde"),
        ("Saturday 7 November at 2pm with Niamh?", "niamh"),
    ],
)
def test_the_agent_offering_a_person(text: str, person: str) -> None:
    assert staff(text, Role.AGENT) == {(person, Assertor.AGENT)}


def test_a_friend_asking_who_the_user_goes_with_offers_nobody() -> None:
    assert staff("Still doing Zumba with Lupe?", Role.AGENT) == set()


def test_a_title_read_alone_goes_when_its_name_is_found() -> None:
    event = turn("Friday afternoon, and with Dr Moreno if possible.")
    alone = [
        ExtractedFact(**origin(event), subject="user", predicate=p, object=o, confidence=0.88)
        for p, o in (("preferred_staff", "dr"), ("name", "moreno"))
    ]
    out = with_staff(event, alone)
    assert [(f.predicate, f.object) for f in out] == [("preferred_staff", "dr moreno")]
