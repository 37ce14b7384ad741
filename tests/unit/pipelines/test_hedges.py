"""Which sentences say the speaker is unsure (LABELLING.md's hedge), and which do not."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.extract.polarity import (
    answers_on_condition,
    is_conditional,
    is_hedged,
    presupposed,
)
from pipelines.parse import DialogueParser


@pytest.mark.parametrize(
    "text",
    [
        "Maybe Tuesday.",
        "I might switch to the premium plan.",
        "I'm thinking of getting a dog.",
        "We're considering Portugal for the summer.",
        "Haven't decided between the blue one and the grey one.",
        "I'm still in two minds about the course.",
        "We may go to Cork in June.",
        "Fingers crossed it's Friday.",
        "No idea if I'll make it, we'll see.",
        "Toying with the idea of a half marathon.",
        "I don't know yet whether Sam's coming.",
        "Thursday prob, depends on work.",
        "Pretty sure it's the 14th.",
        "We're off to Crete in June, unless the flights go up.",
        "Nothing booked, we're thinking Lisbon.",
        "I'll try to get there for 7.",
        "Provisionally the 3rd at 2pm.",
        "The physio reckons it's a stress fracture.",
        "My GP thinks it's just a virus.",
        "I've gone vegan. Trying to, anyway.",
        "Around the 8th, will confirm once my leave is approved.",
        "The 14th to the 21st, if it gets approved.",
        "Let me check with my partner and get back to you.",
        "I applied to transfer to the city branch, see how.",
        "The GP is talking about taking me off metformin.",
        "I'll let you know about the 200GB plan.",
    ],
)
def test_an_unsure_speaker_is_hedged(text: str) -> None:
    assert is_hedged(text)


@pytest.mark.parametrize(
    "text",
    [
        "We went to Cork in May.",
        "I decided on the blue one.",
        "Book me in for Friday at 10.",
        "My sister is vegan.",
        "I know exactly what I want: the 500 Mbps plan.",
        "May suits me better than June.",
        "It's kind of a long story: the boiler broke on Monday.",
        "I was hoping for under £250.",
        "The problem is the router: it drops out every evening.",
        "I confirm the booking for the 14th.",
        "My leave was approved, we fly on the 14th.",
        "Let me know if the technician runs late.",
        "We talked it through and booked the 14th.",
    ],
)
def test_a_sure_speaker_is_not(text: str) -> None:
    assert not is_hedged(text)


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def _conditional(nlp: Any, text: str, word: str) -> bool:
    doc = nlp(text)
    token = next(t for t in doc if t.text == word)
    return is_conditional(doc[token.i : token.i + 1])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("We are going to Lourdes in September with the parish if the hip is right", "Lourdes"),
        ("If mi come, mi woulda fly out di 20th of August", "August"),
        ("If I pass, I want to work in Texas.", "Texas"),
        ("We're moving to Leeds in May if the sale goes through", "Leeds"),
        # the condition's own value is no more certain than what hangs on it
        ("If I get the job at Google, we move in May", "Google"),
        # "if I can" with more after it is a condition, not the set phrase
        ("We'll take the flat in Leith if we can get the deposit together", "Leith"),
    ],
)
def test_a_value_hanging_on_the_speakers_condition_is_conditional(
    nlp: Any, text: str, value: str
) -> None:
    assert _conditional(nlp, text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # a condition on the listener, or on who serves the speaker
        ("By card, if you take cards.", "card"),
        ("Thursday at 5:30 would suit me best, if she's free then.", "Thursday"),
        # set phrases that condition nothing
        ("Stuffed, if I'm honest. Doc says it's osteoarthritis.", "osteoarthritis"),
        ("I'd rather see Dr Osei if I can, he knows my history.", "Osei"),
        ("I work at Tesco, if that matters", "Tesco"),
        # a condition on another clause of the sentence
        ("dress fitting's tuesday btw, if the zip goes up it's a miracle", "tuesday"),
    ],
)
def test_other_conditions_leave_the_value_as_said(nlp: Any, text: str, value: str) -> None:
    assert not _conditional(nlp, text, value)


@pytest.mark.parametrize(
    "text",
    [
        "Wouldn't miss it, if the cattle let me.",
        "Aye, if the hip behaves. Sailing from Rosyth.",
        "Yes, if I can get the day off.",
        "Sounds good if the weather holds",
    ],
)
def test_a_reply_that_sets_its_own_condition_answers_on_condition(nlp: Any, text: str) -> None:
    assert answers_on_condition(nlp(text))


@pytest.mark.parametrize(
    "text",
    [
        "Yes please.",
        # the listener's condition, and a set phrase
        "Sure, if you can do it by Friday.",
        "Yes, if I'm honest I'd forgotten.",
        # a condition after the reply is about what the turn goes on to say
        "Yes, the 14th. If it rains we'll eat inside.",
    ],
)
def test_a_plain_or_otherwise_conditioned_reply_does_not(nlp: Any, text: str) -> None:
    assert not answers_on_condition(nlp(text))


def _presupposed(nlp: Any, text: str, words: str) -> bool:
    doc = nlp(text)
    start = text.index(words)
    span = doc.char_span(start, start + len(words), alignment_mode="expand")
    return presupposed(span)


@pytest.mark.parametrize(
    ("text", "relative"),
    [
        ("My wife Marijke thinks I am crazy.", "wife Marijke"),
        ("I may be in Edinburgh that week, visiting my sister.", "sister"),
        ("8 now prob, maybe 9 if my cousin comes", "cousin"),
        ("My partner Sam might answer the door, is that okay?", "partner Sam"),
        ("Maybe more, I must check with my husband.", "husband"),
        ("we might get our little cat a friend", "cat"),
    ],
)
def test_ones_own_relative_is_there_whatever_the_sentence_hedges(
    nlp: Any, text: str, relative: str
) -> None:
    assert _presupposed(nlp, text, relative)


@pytest.mark.parametrize(
    ("text", "relative"),
    [
        # the relation itself is what is claimed, and hedged
        ("She's my girlfriend now I guess?", "girlfriend"),
        ("tbh there is someone... my boyfriend I guess??", "boyfriend"),
        ("Maybe my sister.", "sister"),
        # not said as one's own
        ("I'd like to maybe get a dog", "dog"),
    ],
)
def test_a_relation_claimed_or_not_ones_own_is_not_presupposed(
    nlp: Any, text: str, relative: str
) -> None:
    assert not _presupposed(nlp, text, relative)
