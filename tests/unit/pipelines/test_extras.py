"""What an agent offers to sell, and the user's yes or no to it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipelines.extract import FactExtractor
from pipelines.extract.extras import offered_extras
from pipelines.parse import DialogueParser
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor
from schemas.memory import Polarity

T0 = datetime(2026, 3, 2, 10, tzinfo=UTC)


def turn(text: str, role: Role = Role.AGENT, index: int = 0) -> DialogueEvent:
    return DialogueEvent(
        event_id=f"e{index}",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=index,
        role=role,
        text=text,
        ts=T0 + timedelta(minutes=index),
    )


@pytest.fixture(scope="module")
def parser() -> DialogueParser:
    return DialogueParser.load()


def offered(parser: DialogueParser, text: str, role: Role = Role.AGENT) -> set[tuple[str, str]]:
    event = turn(text, role)
    doc = parser.nlp(text)
    return {(f.predicate, f.object) for f in offered_extras(event, doc, [])}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "Would you like our packing service the day before as well?",
            ("ordered", "packing service"),
        ),
        (
            "Fancy our lead climbing course? Four Saturdays at 10am, £90.",
            ("ordered", "lead climbing course"),
        ),
        ("Would you like a mock test the week before? It's $75.", ("ordered", "mock test")),
        ("Shall I add the wax add-on? £4 a month.", ("ordered", "wax add-on")),
        ("Would you like to join our service plan? £8 a month.", ("plan", "service")),
        (
            "While I have you, would you like to add our full cover for £11 a day?",
            ("plan", "full cover"),
        ),
        ("Would you like to upgrade to police response now?", ("ordered", "police response")),
    ],
)
def test_an_agent_offer_of_a_thing_sold_is_offered(
    parser: DialogueParser, text: str, value: tuple[str, str]
) -> None:
    assert offered(parser, text) == {value}


@pytest.mark.parametrize(
    "text",
    [
        "Fancy a pint later?",  # a friend's offer: nothing is sold
        "How about Tuesday at 10? It's £40.",  # a time, which the tagger reads
        "Would you like single lessons at £38 or a block of 10 for £350?",  # a choice
        "Would you like text alerts about your collections? They're free.",  # a channel
        "She'd be £11.40 a month on Lifetime. Shall I add her?",  # a person
        "Do you want to book your practical test?",  # an appointment, not a purchase
        "We have the packing service.",  # no question
    ],
)
def test_no_offer_is_read_where_nothing_is_sold(parser: DialogueParser, text: str) -> None:
    assert offered(parser, text) == set()


def test_a_user_turn_offers_nothing(parser: DialogueParser) -> None:
    assert offered(parser, "Would you like our packing service? £40.", Role.USER) == set()


def test_the_offer_is_the_agents_and_the_yes_or_no_the_users(parser: DialogueParser) -> None:
    extractor = FactExtractor.load(parser)
    texts = [
        (Role.AGENT, "Would you like our packing service the day before as well? It's £80."),
        (Role.USER, "Yes please."),
        (Role.AGENT, "Would you like goods-in-transit insurance on top? It's £45."),
        (Role.USER, "No thanks."),
    ]
    events = [turn(text, role, i) for i, (role, text) in enumerate(texts)]
    facts, _ = extractor.extract_in_context(
        zip(events, parser.parse_batch(events), strict=True), {}
    )
    said = [
        {
            (f.predicate, f.object, f.polarity, f.asserted_by)
            for f in found
            if f.predicate == "ordered"
        }
        for found in facts
    ]
    assert said == [
        {("ordered", "packing service", Polarity.AFFIRMED, Assertor.AGENT)},
        {("ordered", "packing service", Polarity.AFFIRMED, Assertor.USER)},
        {("ordered", "goods-in-transit insurance", Polarity.AFFIRMED, Assertor.AGENT)},
        {("ordered", "goods-in-transit insurance", Polarity.NEGATED, Assertor.USER)},
    ]
