"""What the user hates or cannot stand, as a negated like, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.dislikes import CONFIDENCE, stated_dislikes
from pipelines.parse import DialogueParser
from schemas.events import Role
from schemas.facts import ExtractedFact
from schemas.memory import Polarity


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def dislikes(
    nlp: Any, text: str, *facts: ExtractedFact, role: Role = Role.USER
) -> list[tuple[str, str, Polarity]]:
    out = stated_dislikes(turn(text, role), nlp(text), list(facts))
    return [(f.predicate, f.object, f.polarity) for f in out]


NOT = Polarity.NEGATED


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Mate you know I can't stand Auckland. Traffic, noise, $12 coffees.", "auckland"),
        ("Cold already :( I hate the winter here. but I like my work", "winter"),
        # the thing without what follows it, and with no subject said
        ("crowd was feral tho, can't stand the weekend kooks", "weekend kooks"),
        ("and i can't stand the jazz fusion he puts on either", "jazz fusion"),
        ("ah cannae stand whisky onywey", "whisky"),
        ("I refuse to drive at night now, I hate driving at night", "driving at night"),
    ],
)
def test_a_thing_the_user_cannot_stand_is_a_negated_like(nlp: Any, text: str, value: str) -> None:
    assert dislikes(nlp, text) == [("likes", value, NOT)]


@pytest.mark.parametrize(
    "text",
    [
        # someone else's dislike, a denied one, a noun, a wish
        "Frijol hates her.",
        "Tommy hates olives.",
        "I don't hate it, it's fine.",
        "which in a Vietnamese family is basically a hate crime.",
        "I'd hate to leave it to last.",
        # standing, not bearing
        "gave that up, cant stand on the rocks wi ma knee.",
        # pointing back at something said before: the tagger's to resolve
        "I can't stand that place, way too loud",
        "can't stand it.",
        # a time is a booking's constraint
        "I hate Mondays.",
        # a question asks
        "Do you hate olives?",
    ],
)
def test_no_dislike_is_read_where_none_of_the_users_is_said(nlp: Any, text: str) -> None:
    assert dislikes(nlp, text) == []


def test_a_channel_the_user_hates_is_a_channel_refused(nlp: Any) -> None:
    assert dislikes(nlp, "dont call me tho. i hate phone calls") == [
        ("contact_channel", "call", NOT)
    ]


def test_the_taggers_affirmed_reading_of_the_thing_gives_way(nlp: Any) -> None:
    text = "ah cannae stand whisky"
    assert dislikes(nlp, text, fact("likes", "whisky")) == [("likes", "whisky", NOT)]


def test_a_dislike_the_tagger_read_is_kept_once(nlp: Any) -> None:
    text = "I hate olives"
    tagged = fact("likes", "olives", Polarity.NEGATED)
    assert dislikes(nlp, text, tagged) == [("likes", "olives", NOT)]


def test_an_agents_turn_and_a_hedge(nlp: Any) -> None:
    assert dislikes(nlp, "I hate waiting rooms, honestly", role=Role.AGENT) == []
    text = "I think I hate the new office."
    out = stated_dislikes(turn(text), nlp(text), [])
    assert [(f.object, f.hedged, f.confidence < CONFIDENCE) for f in out] == [
        ("new office", True, True)
    ]
