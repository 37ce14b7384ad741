"""A plan completed to its verb phrase from the parse, over tagged triples."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.extract.plans import completed_plans
from pipelines.parse import DialogueParser


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def tagged(text: str, *parts: str, predicate: str = "plans_to") -> list[LearnedTriple]:
    out = []
    for part in parts:
        start = text.index(part)
        out.append(
            LearnedTriple(
                predicate=predicate,
                obj=part.lower(),
                negated=False,
                hedged=False,
                confidence=0.9,
                from_context=False,
                start=start,
                end=start + len(part),
            )
        )
    return out


def plans(nlp: Any, text: str, *parts: str, predicate: str = "plans_to") -> list[str]:
    return [t.obj for t in completed_plans(tagged(text, *parts, predicate=predicate), nlp(text))]


@pytest.mark.parametrize(
    ("text", "parts", "plan"),
    [
        # the verb alone takes its complement, as its lemma, without articles
        ("We're moving up to Fort Worth in June.", ("moving",), "move up to fort worth"),
        ("I'm buying a little house in town.", ("buying",), "buy little house in town"),
        # the object alone takes the verb (and preposition) that governs it
        ("I want to switch to medicine next year.", ("medicine",), "switch to medicine"),
        ("Maybe I'll try bowls next summer.", ("bowls",), "try bowls"),
        # verb and object tagged apart are one plan
        ("i might get a guinea pig at christmas", ("get", "guinea pig"), "get guinea pig"),
    ],
)
def test_a_part_of_a_plan_is_completed(
    nlp: Any, text: str, parts: tuple[str, ...], plan: str
) -> None:
    assert plans(nlp, text, *parts) == [plan]


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("I might sell her, to be honest.", "sell"),  # a pronoun is no plan's object
        ("We might be moving end of nov.", "moving"),  # a date is no part of the plan
        ("I want a dog so badly.", "dog"),  # a desire verb governs no plan
        ("I'm going to learn Portuguese this year.", "learn Portuguese"),  # whole already
    ],
)
def test_a_plan_stays_as_tagged_when_nothing_completes_it(nlp: Any, text: str, part: str) -> None:
    assert plans(nlp, text, part) == [part.lower()]


@pytest.mark.parametrize(
    ("text", "part", "plan"),
    [
        # a whole plan takes its verb's lemma, without articles or whose it is
        ("I'm thinking of leaving St James's soon.", "leaving St James's", "leave st james's"),
        (
            "I'm opening my own salon in Katy.",
            "opening my own salon in Katy",
            "open own salon in katy",
        ),
        # when it happens, and how sure, is no part of it
        (
            "im thinking about running the edinburgh half in may",
            "running the edinburgh half in may",
            "run edinburgh half",
        ),
        (
            "probably do the great north run in sept instead",
            "do the great north run in sept instead",
            "do great north run",
        ),
        # a number names the thing, not a date
        (
            "Might sell my Massey Ferguson 135 too.",
            "sell my Massey Ferguson 135",
            "sell massey ferguson 135",
        ),
        # the span ran past a comma into the next clause
        (
            "I'm thinking of leaving St James's, an agency offered me nights.",
            "leaving St James's, an agency offered me nights",
            "leave st james's",
        ),
    ],
)
def test_a_whole_plan_is_said_in_one_form(nlp: Any, text: str, part: str, plan: str) -> None:
    assert plans(nlp, text, part) == [plan]


def test_other_predicates_are_left_alone(nlp: Any) -> None:
    assert plans(nlp, "I'm buying a little house.", "buying", predicate="hobby") == ["buying"]
