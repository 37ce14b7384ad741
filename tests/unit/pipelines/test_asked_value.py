"""The kind of value a recall query asks for, and the texts that carry one."""

from __future__ import annotations

import pytest

from pipelines.asked_value import ValueKind, asked_kind, carries


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("When are the bathroom fitters starting?", ValueKind.TIME),
        ("What dates is my Advanced course on now?", ValueKind.TIME),
        ("Until when am I keeping the storage unit?", ValueKind.TIME),
        ("how long is Gran staying with us", ValueKind.TIME),
        ("What's the bathroom job costing us in total now?", ValueKind.MONEY),
        ("How much is the deposit?", ValueKind.MONEY),
        ("How many people are coming to the party?", ValueKind.COUNT),
        ("Who's instructing me on the Advanced course?", None),
        ("Where does my sister live?", None),
        # Two kinds at once: no single kind of answer.
        ("When do I pay the deposit?", None),
    ],
)
def test_the_question_words_name_the_kind_of_answer(query: str, kind: ValueKind | None) -> None:
    assert asked_kind(query) is kind


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (ValueKind.TIME, "We can start on Monday 4th October with a 25% deposit"),
        (ValueKind.TIME, "The 1st, yes please"),
        (ValueKind.TIME, "make it half 6pm"),
        (ValueKind.TIME, "back in two weeks"),
        (ValueKind.TIME, "keys on 15/08"),
        (ValueKind.MONEY, "So that's £9,130 all in"),
        (ValueKind.MONEY, "it came to 40 quid"),
        (ValueKind.MONEY, "about 3k for the lot"),
        (ValueKind.COUNT, "there'll be twelve of us"),
    ],
)
def test_a_value_of_the_kind_is_found_in_everyday_writing(kind: ValueKind, text: str) -> None:
    assert carries(kind, text)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (ValueKind.TIME, "the marketing team sent flowers"),
        (ValueKind.TIME, "such a decent surgeon"),
        (ValueKind.MONEY, "we have 3 kids"),
        (ValueKind.COUNT, "sounds lovely, thanks"),
    ],
)
def test_a_text_without_such_a_value_carries_none(kind: ValueKind, text: str) -> None:
    assert not carries(kind, text)
