"""The learned tagger's triples as facts, and the rules that add to them."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.extract.learned.facts import (
    CONFIDENCE_FROM_CONTEXT,
    CONFIDENCE_HEDGED,
    CONFIDENCE_SURE,
    CONFIDENCE_UNSURE,
    combine,
    learned_fact,
)
from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.parse.model import Intent, ParsedTurn
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import MemoryKind, Polarity

T0 = datetime(2027, 3, 1, 9, tzinfo=UTC)


def turn(role: Role = Role.USER) -> DialogueEvent:
    return DialogueEvent(
        event_id="e1",
        tenant_id="acme",
        user_id="u1",
        session_id="s1",
        turn_index=0,
        role=role,
        text="whatever was said",
        ts=T0,
    )


PARSED = ParsedTurn(
    event_id="e1", role=Role.USER, session_id="s1", turn_index=0, lang="en", intent=Intent.INFORM
)


def triple(predicate: str, obj: str, **kw: object) -> LearnedTriple:
    values: dict[str, object] = {
        "negated": False,
        "hedged": False,
        "confidence": 0.9,
        "from_context": False,
    }
    values.update(kw)
    return LearnedTriple(predicate, obj, **values)  # type: ignore[arg-type]


def test_a_triple_becomes_a_fact_on_the_gate_scale() -> None:
    fact = learned_fact(turn(), PARSED, triple("appointment_time", "monday 2pm"), update=False)
    assert (fact.predicate, fact.object, fact.polarity) == (
        "appointment_time",
        "monday 2pm",
        Polarity.AFFIRMED,
    )
    assert fact.confidence == CONFIDENCE_SURE and fact.kind is MemoryKind.STATUS
    assert fact.fields == {"TIME": "monday 2pm"} and fact.asserted_by is Assertor.USER
    unsure = learned_fact(turn(), PARSED, triple("likes", "jazz", confidence=0.3), update=False)
    assert unsure.confidence == CONFIDENCE_UNSURE
    hedged = learned_fact(turn(), PARSED, triple("plan", "30gb", hedged=True), update=False)
    assert hedged.confidence == CONFIDENCE_HEDGED and hedged.hedged
    yes = learned_fact(turn(), PARSED, triple("plan", "30gb", from_context=True), update=True)
    assert yes.confidence == CONFIDENCE_FROM_CONTEXT and yes.is_update


def test_a_negated_constraint_is_a_rule_and_an_agent_speaks_for_itself() -> None:
    rule = learned_fact(
        turn(), PARSED, triple("contact_time", "before 9", negated=True), update=False
    )
    assert rule.kind is MemoryKind.RULE and rule.text == "contact_time NOT before 9"
    dislike = learned_fact(turn(), PARSED, triple("likes", "coriander", negated=True), update=False)
    assert dislike.kind is MemoryKind.PREFERENCE
    said = learned_fact(
        turn(Role.AGENT), PARSED, triple("appointment_time", "friday"), update=False
    )
    assert said.asserted_by is Assertor.AGENT


def test_rules_add_only_closed_form_values_the_tagger_did_not_state() -> None:
    event = turn()

    def fact(predicate: str, obj: str) -> ExtractedFact:
        return learned_fact(event, PARSED, triple(predicate, obj), update=False)

    learned = [fact("phone_number", "07700900123"), fact("likes", "jazz")]
    rules = [
        fact("phone_number", "+44 7700 900123"),  # the same number: not added twice
        fact("email", "sam@example.com"),  # a closed form the tagger missed: added
        fact("appointment_time", "friday"),  # not an override predicate: the tagger decides
    ]
    combined = combine(learned, rules)
    assert [(f.predicate, f.object) for f in combined] == [
        ("phone_number", "07700900123"),
        ("likes", "jazz"),
        ("email", "sam@example.com"),
    ]
