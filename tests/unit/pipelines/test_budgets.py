"""The most the user will spend, read from the words that cap an amount, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.budgets import stated_budgets
from pipelines.parse import DialogueParser
from schemas.events import Role
from schemas.facts import Assertor, ExtractedFact


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def read(nlp: Any, text: str, *facts: ExtractedFact, role: Role = Role.USER) -> list[ExtractedFact]:
    return stated_budgets(turn(text, role), nlp(text), list(facts))


def budgets(facts: list[ExtractedFact]) -> list[str]:
    return [f.object for f in facts if f.predicate == "budget"]


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        # a cap word before the amount
        ("I'd like to keep it under four thousand pounds, all told.", "4000 gbp"),
        ("Budget wise I can't go over 2k all in, client's squeezing me.", "2000"),
        ("Well, I can't pay more than £350, or I'll go elsewhere.", "350 gbp"),
        ("Meet and greet's daylight robbery. Nothing over 100 if you can help it.", "100"),
        ("Oof. Go on so, we'll stretch to ten grand.", "10000"),
        ("ok. i really cant go over a tenner a drop or the margins die", "10"),
        ("Too much. Max is 800 this time.", "800"),
        ("My budget is twelve hundred pounds, not a penny more.", "1200 gbp"),
        # or after it
        ("Yes. CAD 600 was my max, so fine.", "600 cad"),
        ("400 max", "400"),
        ("Two thousand, top whack.", "2000"),
        ("Nothing fancy, 280k max, not a penny more", "280000"),
        # any amount the money normaliser reads (pipelines/vocabulary/values.py)
        ("Honestly no more than seventeen hundred for the lot.", "1700"),
        ("We can go up to 40,000 rupees for the whole thing.", "40000 inr"),
        ("Keep it under NZ$300 please, it's a gift.", "300 nzd"),
    ],
)
def test_a_capped_amount_is_the_users_budget(nlp: Any, text: str, budget: str) -> None:
    assert budgets(read(nlp, text)) == [budget]


@pytest.mark.parametrize(
    "text",
    [
        "It cost me £350 last time.",  # a price, no cap
        "I have two kids under 5.",  # not money
        "How much is it if I keep it under 100?",  # asked
    ],
)
def test_an_amount_without_a_cap_is_no_budget(nlp: Any, text: str) -> None:
    assert budgets(read(nlp, text)) == []


def test_the_other_speaker_restates_a_limit_only_with_a_word_that_names_one(nlp: Any) -> None:
    out = read(nlp, "That's noted, a budget of £4,000. Any family?", role=Role.AGENT)
    assert [(f.object, f.asserted_by) for f in out] == [("4000 gbp", Assertor.AGENT)]
    assert budgets(read(nlp, "It's €65 fitted, over your €150.", role=Role.AGENT)) == ["150 eur"]
    # An offer is no limit of the user's.
    assert budgets(read(nlp, "We can do it for under £200.", role=Role.AGENT)) == []


def test_a_budget_the_tagger_read_is_not_said_twice(nlp: Any) -> None:
    out = read(nlp, "Nothing over 100 if you can help it.", fact("budget", "100 gbp"))
    assert budgets(out) == ["100 gbp"]
