"""A dated event as its name and its date, read from the parse, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.endings import KnownValue
from pipelines.extract.events import answered_events, dated_events, moved_events
from pipelines.parse import DialogueParser
from schemas.events import Role
from schemas.facts import ExtractedFact
from schemas.memory import Polarity


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def events(nlp: Any, text: str, *facts: ExtractedFact, role: Role = Role.USER) -> set[str]:
    out = dated_events(turn(text, role), nlp(text), list(facts))
    return {f.object for f in out if f.predicate == "event"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Meniscus is torn, yes. Operation is 14 april in Santry.", "operation 14 april"),
        ("Dayo's graduation is 29 May, then college.", "dayo's graduation 29 may"),
        (
            "Back operation at Treliske on the 12th of May, then six weeks off.",
            "back operation 12 may",
        ),
        ("She's expecting! Baby's due in July.", "baby due july"),
        # of two dates, the one said of the event
        ("submitting my thesis in may, viva is set for july.", "viva july"),
    ],
)
def test_an_event_takes_the_date_said_of_it(nlp: Any, text: str, value: str) -> None:
    assert value in events(nlp, text)


def test_the_taggers_part_gives_way_to_the_whole(nlp: Any) -> None:
    text = "Back operation at Treliske on the 12th of May, then six weeks off."
    said = events(nlp, text, fact("event", "back operation at treliske 12th of may"))
    assert said == {"back operation 12 may"}


@pytest.mark.parametrize(
    "text",
    [
        # the event dates something else, or is no event at all
        "me and my gang going Osaka in June, after exams",
        "still at Zalando, senior test engineer since January.",
        # denied, asked, hedged
        "The wedding is not on 6 June.",
        "Is the wedding still 6 June?",
        "The wedding might be in August, nothing fixed yet.",
        "viva is pencilled in for july.",
    ],
)
def test_no_event_is_read_where_none_is_stated(nlp: Any, text: str) -> None:
    assert events(nlp, text) == set()


def test_the_agents_turns_are_left_to_the_tagger(nlp: Any) -> None:
    assert events(nlp, "Your operation is 14 April.", role=Role.AGENT) == set()


def moved(text: str, held: list[str], last: str = "", *facts: ExtractedFact) -> list[ExtractedFact]:
    known = [KnownValue(predicate="event", object=value) for value in held]
    return [f for f in moved_events(turn(text), list(facts), known, last) if f.predicate == "event"]


def test_a_moved_event_is_the_held_one_at_its_new_date() -> None:
    held = ["dayo's graduation 29 may", "hip operation 14 april"]
    out = moved(
        "No, they moved it to 1 June.",
        held,
        "Is Dayo's graduation still 29 May?",
        fact("event", "dayo's graduation 29 may", Polarity.NEGATED),
    )
    assert [(f.object, f.polarity, f.is_update) for f in out] == [
        ("dayo's graduation 1 june", Polarity.AFFIRMED, True)
    ]


def test_a_pronoun_takes_the_one_held_event() -> None:
    out = moved(
        "They've moved it, surgeon's off sick, so it's the 28th of May now.",
        ["hip operation 14 may"],
    )
    assert [f.object for f in out] == ["hip operation 28 may"]


@pytest.mark.parametrize(
    ("text", "held"),
    [
        # two held events and nothing says which
        ("They moved it to 1 June.", ["graduation 29 may", "operation 14 april"]),
        # no move, or an unsure one
        ("It's on 1 June.", ["graduation 29 may"]),
        ("They might move it to 1 June.", ["graduation 29 may"]),
        ("Did they move it to 1 June?", ["graduation 29 may"]),
    ],
)
def test_no_event_is_moved_without_a_clear_move_of_one(text: str, held: list[str]) -> None:
    assert moved(text, held) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "oh and my sister Kat's getting married 14 June, so that's my summer sorted",
            "sister kat's wedding 14 june",
        ),
        ("Jess is getting married in October, the 17th.", "jess's wedding october"),
        ("We're getting married on 3 May next year!", "wedding 3 may"),
    ],
)
def test_getting_married_is_a_wedding_of_whoever_marries(nlp: Any, text: str, value: str) -> None:
    assert value in events(nlp, text)


def test_no_wedding_without_its_date_or_when_denied(nlp: Any) -> None:
    assert events(nlp, "I'm getting married!") == set()
    assert events(nlp, "We're not getting married in June after all.") == set()


def answered(nlp: Any, text: str, question: str, *facts: ExtractedFact) -> list[ExtractedFact]:
    return answered_events(turn(text), list(facts), question, nlp)


def test_a_date_answering_an_event_question_dates_that_event(nlp: Any) -> None:
    (sure,) = answered(nlp, "19 april, manchester", "When's the marathon?")
    assert (sure.object, sure.hedged) == ("marathon 19 april", False)
    unsure = answered(
        nlp,
        "I think so! It's August 22.",
        "Are you going to Jen's wedding?",
        fact("event", "jen's wedding"),
    )
    assert [(f.object, f.hedged) for f in unsure] == [("jen's wedding august 22", True)]
    assert unsure[0].confidence < 0.82


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Fine, I'm off on 12 June.", "How was your week?"),  # the question names no event
        ("When is it, 12 June?", "And the wedding?"),  # asked back
        ("not feb tho, I've got a conference", "When's the wedding?"),  # denied
        # the date comes late in a long turn: it dates something else
        (
            "That is very kind. I should tell you that I no longer drive; I sold it in the summer.",
            "And the operation?",
        ),
    ],
)
def test_no_answered_event_without_an_event_question_and_a_plain_date(
    nlp: Any, text: str, question: str
) -> None:
    assert answered(nlp, text, question) == []


def test_an_answer_with_its_own_dated_event_is_left_as_said(nlp: Any) -> None:
    own = fact("event", "driving test 14 april")
    assert answered(nlp, "14 april at chilwell", "When's the test?", own) == [own]
