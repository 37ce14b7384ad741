"""A place or an organisation given its whole proper name, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact

from pipelines.extract.proper_names import whole_names
from pipelines.parse import DialogueParser
from schemas.memory import Polarity


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def values(nlp: Any, text: str, *facts: tuple[str, str]) -> list[tuple[str, str]]:
    out = whole_names([fact(p, o) for p, o in facts], nlp(text))
    return [(f.predicate, f.object) for f in out]


@pytest.mark.parametrize(
    ("text", "said", "whole"),
    [
        (
            "Applied for assistant coach with the Saskatoon Blades, WHL.",
            ("employer", "saskatoon"),
            ("employer", "saskatoon blades"),
        ),
        (
            "senior designer at Khalid & Partners, dubai marina!!",
            ("employer", "khalid"),
            ("employer", "khalid & partners"),
        ),
        (
            "Deputy harbour master for Newlyn Harbour Commissioners, started in July.",
            ("employer", "harbour commissioners"),
            ("employer", "newlyn harbour commissioners"),
        ),
        ("Flying to Port Douglas for a week", ("travel", "douglas"), ("travel", "port douglas")),
    ],
)
def test_a_part_of_a_proper_name_becomes_the_whole_name(
    nlp: Any, text: str, said: tuple[str, str], whole: tuple[str, str]
) -> None:
    assert values(nlp, text, said) == [whole]


def test_the_first_word_of_a_sentence_is_no_part_of_a_name(nlp: Any) -> None:
    assert values(nlp, "Joined Careem last week, backend developer", ("employer", "careem")) == [
        ("employer", "careem")
    ]


def test_lower_case_and_other_predicates_stay_as_said(nlp: Any) -> None:
    text = "got a job in the hugh owen library, Hoi An next"
    assert values(nlp, text, ("employer", "owen"), ("likes", "hoi")) == [
        ("employer", "owen"),
        ("likes", "hoi"),
    ]


def test_two_parts_of_one_name_are_one_value_in_their_polarity(nlp: Any) -> None:
    text = "we're going to Hoi An instead"
    out = whole_names([fact("travel", "hoi"), fact("travel", "hoi an")], nlp(text))
    assert [(f.object, f.polarity) for f in out] == [("hoi an", Polarity.AFFIRMED)]
