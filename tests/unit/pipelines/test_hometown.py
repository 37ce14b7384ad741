"""Where the user grew up or comes from, read from the set ways of saying it, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.hometown import hometowns
from pipelines.parse import DialogueParser
from schemas.events import Role
from schemas.facts import Assertor, ExtractedFact


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def read(nlp: Any, text: str, *facts: ExtractedFact, role: Role = Role.USER) -> list[ExtractedFact]:
    return hometowns(turn(text, role), nlp(text), list(facts))


def towns(facts: list[ExtractedFact]) -> list[str]:
    return [f.object for f in facts if f.predicate == "hometown"]


@pytest.mark.parametrize(
    ("text", "town"),
    [
        # the place after the cue
        ("No, I grew up in Obuasi, my father was a miner at AngloGold.", "obuasi"),
        ("It is ok, I love fish, I grow up in Bodø, my father was fisherman.", "bodø"),
        (
            "Self-drive. Grew up on the water in Auckland, I've got my day skipper ticket.",
            "auckland",
        ),
        ("Me? Born and bred in Llanfair, on this farm.", "llanfair"),
        ("no, I'm from Ennis, that's Clare, you absolute Dub", "ennis"),
        ("chicago, 8 yrs. originally from Milwaukee", "milwaukee"),
        ("Both are fine, back home in Madurai. Appa retired from the bank last year", "madurai"),
        # the place before it, in its sentence or in the one the cue points back to
        ("We might move back to Invercargill, near Mum, that's where I grew up.", "invercargill"),
        (
            "then up to Eldoret to see my mum. that's where I grew up, she still has the shamba",
            "eldoret",
        ),
        ("Peckham, but Newcastle originally.", "newcastle"),
        ("yeah Cardiff born and bred but no i dont speak welsh", "cardiff"),
        # "originally" ends its clause: here it only opens the one with the cue
        ("Madrid, I was there three years. Originally I'm from Porto.", "porto"),
    ],
)
def test_the_place_the_user_comes_from_is_their_hometown(nlp: Any, text: str, town: str) -> None:
    assert towns(read(nlp, text)) == [town]


@pytest.mark.parametrize(
    "text",
    [
        "My dad grew up in Leeds, he never lets me forget it.",  # someone else's
        "Ejisu is Kwame's hometown, not mine.",
        "I got a card from Lisbon yesterday.",  # "from" without "I'm"
        "Hi, I'm from British Gas about the meter reading.",  # a caller's firm
        "We fly home to Amsterdam on 15 October.",  # home is as often where one lives now
        "I grew up in that house and nothing has changed.",  # no place named
    ],
)
def test_other_places_are_no_hometown(nlp: Any, text: str) -> None:
    assert towns(read(nlp, text)) == []


def test_the_taggers_home_of_the_same_place_gives_way(nlp: Any) -> None:
    text = "Fish, fish, fish. I grow up in Bodø, my father was fisherman."
    out = read(nlp, text, fact("lives_in", "bodø"))
    assert [(f.predicate, f.object) for f in out] == [("hometown", "bodø")]
    # A turn that speaks of living there keeps both.
    text = "Born and raised in Brady, never lived anywhere else."
    out = read(nlp, text, fact("lives_in", "brady"))
    assert sorted(f.predicate for f in out) == ["hometown", "lives_in"]


def test_the_other_speaker_says_it_of_the_user_in_their_voice(nlp: Any) -> None:
    out = read(nlp, "oh random q, you're from Cardiff right", role=Role.AGENT)
    assert [(f.object, f.asserted_by) for f in out] == [("cardiff", Assertor.AGENT)]
    # Near where someone grew up is not the place itself.
    assert (
        towns(read(nlp, "lol Wexford, isn't that near where you grew up?", role=Role.AGENT)) == []
    )
