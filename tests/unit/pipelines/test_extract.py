"""Extract stage: the issue's examples, hedges, corrections, agent facts, CRM, canonical objects."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.extract import FactExtractor, extract_crm
from pipelines.extract.context import DialogueContext
from schemas.events import CrmWebhook, DialogueEvent, FieldChange, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import MemoryKind, Polarity

os.environ.setdefault("FLAIR_CACHE_ROOT", str(Path.home() / ".cache" / "memstream" / "flair"))
COMMIT = 0.82  # the review gate's commit threshold (docs/architecture.md, Stages)
TS = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def turn(text: str, role: Role = Role.USER, lang: str = "en") -> DialogueEvent:
    return DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id="s1",
        turn_index=0,
        role=role,
        text=text,
        lang=lang,
        ts=TS,
    )


@pytest.fixture(scope="module")
def extractor() -> FactExtractor:
    return FactExtractor.load()


def facts(extractor: FactExtractor, text: str, role: Role = Role.USER) -> list[ExtractedFact]:
    event = turn(text, role)
    return extractor.extract(event, extractor.parser.parse(event))


def triples(found: list[ExtractedFact]) -> set[tuple[str, str, Polarity]]:
    return {(f.predicate, f.object, f.polarity) for f in found}


NEG, AFF = Polarity.NEGATED, Polarity.AFFIRMED


def test_weekend_installation_refused(extractor: FactExtractor) -> None:
    [fact] = facts(extractor, "I don't accept weekend installation.")
    assert (fact.subject, fact.predicate, fact.object, fact.polarity) == (
        "user",
        "installation_time",
        "weekend",
        NEG,
    )
    assert fact.kind is MemoryKind.RULE
    assert fact.text == "installation_time NOT weekend"
    assert fact.confidence >= COMMIT


def test_no_calls_before_nine(extractor: FactExtractor) -> None:
    assert triples(facts(extractor, "No calls before 9.")) == {("contact_time", "before 9", NEG)}


@pytest.mark.parametrize(
    "text",
    [
        "Please don't call me, I'm at work all day.",
        "dont phone me in class tho",
        "Email's better, don't ring me unless it's urgent.",
        "Never ring the shop landline, nobody hears it.",
    ],
)
def test_a_refused_call_is_a_refused_channel(extractor: FactExtractor, text: str) -> None:
    assert ("contact_channel", "call", NEG) in triples(facts(extractor, text))


@pytest.mark.parametrize(
    "text", ["Don't call me before 9.", "You didn't call me back yesterday!", "Call me at 5."]
)
def test_a_call_bounded_by_a_time_or_complained_of_refuses_no_channel(
    extractor: FactExtractor, text: str
) -> None:
    assert not any(p == "contact_channel" for p, _, _ in triples(facts(extractor, text)))


def test_monday_but_not_friday(extractor: FactExtractor) -> None:
    assert triples(facts(extractor, "We can install Monday but not Friday.")) == {
        ("installation_time", "monday", AFF),
        ("installation_time", "friday", NEG),
    }


def test_hedge_lowers_confidence_below_commit(extractor: FactExtractor) -> None:
    [fact] = facts(extractor, "Maybe deliver it next week.")
    assert (fact.predicate, fact.object, fact.polarity) == ("delivery_time", "next week", AFF)
    assert fact.hedged
    assert fact.confidence < COMMIT
    [plan] = facts(extractor, "I might switch to the premium plan.")
    assert plan.hedged and plan.confidence < COMMIT and plan.predicate == "plan"
    [sure] = facts(extractor, "Deliver it next week.")
    assert not sure.hedged and sure.confidence >= COMMIT


def test_a_hedge_said_on_its_own_holds_the_facts_said_before_it(extractor: FactExtractor) -> None:
    # The dated event is composed after the rules and the tagger read their own hedges.
    found = facts(extractor, "Want it again. Kington show, 12 September. Probably.")
    [show] = [f for f in found if f.predicate == "event"]
    assert show.object == "kington show 12 september"
    assert all(f.hedged and f.confidence < COMMIT for f in found)
    found = facts(extractor, "Want it again. Kington show, 12 September. Definitely.")
    assert found and not any(f.hedged or f.confidence < COMMIT for f in found)
    # A hedge about one of the turn's own values is that value's, not the turn's.
    found = facts(extractor, "Kington show, 12 September. Maybe the 13th for the dog show.")
    assert [f.hedged for f in found if f.object == "kington show 12 september"] == [False]


def test_a_hedge_with_a_clause_of_its_own_or_opening_the_turn_holds_nothing_else(
    extractor: FactExtractor,
) -> None:
    # Opening the turn, it answers the other speaker's question.
    found = facts(extractor, "We'll see. Also we're going to Italy in May!")
    assert found and not any(f.hedged for f in found), found
    # With a clause of its own, it hedges that clause, not the sentence before.
    found = facts(extractor, "We're flying to Lisbon on 3 June. Hopefully the strike is over.")
    assert found and not any(f.hedged for f in found), found
    # After a sentence with no fact, it is about that sentence.
    found = facts(extractor, "We're flying to Lisbon on 3 June. My knee is bad again. We'll see.")
    assert found and not any(f.hedged for f in found), found
    # Without a clause, it goes with the sentence it follows, whatever it adds.
    found = facts(extractor, "We're flying to Lisbon on 3 June. Probably, not sure yet.")
    assert found and all(f.hedged and f.confidence < COMMIT for f in found), found


def test_a_hedge_said_on_its_own_holds_the_other_speakers_facts_too(
    extractor: FactExtractor,
) -> None:
    # One pass reads it for both voices: a friend's "probably" is as unsure as the user's.
    found = facts(extractor, "Your delivery is next Thursday. Probably.", Role.AGENT)
    assert found and all(f.hedged and f.confidence < COMMIT for f in found), found
    found = facts(extractor, "Your delivery is next Thursday. Definitely.", Role.AGENT)
    assert found and not any(f.hedged for f in found), found


def test_correction_marks_update(extractor: FactExtractor) -> None:
    [fact] = facts(extractor, "Actually my new number is 0151 987 6543.")
    assert (fact.predicate, fact.object, fact.is_update) == ("phone_number", "01519876543", True)
    assert fact.fields == {"NUMBER": "01519876543"}
    changed = facts(extractor, "I changed my mind, please deliver on Thursday instead.")
    assert [(f.predicate, f.object, f.is_update) for f in changed] == [
        ("delivery_time", "thursday", True)
    ]
    [plain] = facts(extractor, "My number is 0151 987 6543.")
    assert not plain.is_update


def test_agent_statements_are_asserted_by_the_agent(extractor: FactExtractor) -> None:
    found = facts(extractor, "I've registered the installation for Tuesday.", Role.AGENT)
    assert [(f.predicate, f.object, f.asserted_by) for f in found] == [
        ("installation_time", "tuesday", Assertor.AGENT)
    ]
    [promise] = facts(extractor, "I'll call you back on Friday.", Role.AGENT)
    assert (promise.predicate, promise.kind) == ("callback_time", MemoryKind.COMMITMENT)


def test_same_fact_stated_twice_gives_the_same_triple(extractor: FactExtractor) -> None:
    first = triples(facts(extractor, "Please never call me on Mondays."))
    second = triples(facts(extractor, "Don't call me on Monday."))
    assert first == second == {("contact_time", "monday", NEG)}


def test_object_facts(extractor: FactExtractor) -> None:
    found = triples(
        facts(extractor, "I'm vegetarian and allergic to peanuts, and I love Italian food.")
    )
    assert found == {
        ("diet", "vegetarian", AFF),
        ("allergy", "peanut", AFF),
        ("likes", "italian food", AFF),
    }
    assert triples(facts(extractor, "My email is Jana.K@Example.org, I pay by credit card.")) == {
        ("email", "jana.k@example.org", AFF),
        ("payment_method", "credit card", AFF),
    }
    assert triples(facts(extractor, "I live in 14 Baker Street, London.")) == {
        ("address", "14 baker street, london", AFF)
    }


def test_chit_chat_questions_and_cancellations_yield_nothing(extractor: FactExtractor) -> None:
    for text in ("Hi there, thanks a lot!", "Do you deliver on Mondays?", "Never mind, no need."):
        assert facts(extractor, text) == []


def test_third_party_likes_are_not_the_users(extractor: FactExtractor) -> None:
    assert facts(extractor, "She doesn't like roses.") == []


def test_extract_batch_matches_single_extraction(extractor: FactExtractor) -> None:
    texts = ["No calls before 9.", "Hello!", "I'm flying to Berlin.", "I live in Glasgow."]
    events = [turn(t) for t in texts]
    pairs = list(zip(events, extractor.parser.parse_batch(events), strict=True))
    batch = extractor.extract_batch(pairs)
    assert [triples(f) for f in batch] == [triples(facts(extractor, t)) for t in texts]
    assert batch[1] == []


def test_crm_changes_are_authoritative_facts() -> None:
    hook = CrmWebhook(
        event_id="crm-1",
        tenant_id="t1",
        user_id="u1",
        ts=TS,
        source="salesforce",
        entity="contact",
        changes={
            "Phone": FieldChange(old="0151 234 5678", new="+44 151 987 6543"),
            "Plan": FieldChange(old=None, new="Premium"),
            "Loyalty Tier": FieldChange(old="gold", new=None),
        },
    )
    found = {f.predicate: f for f in extract_crm(hook)}
    assert set(found) == {"phone_number", "plan", "loyalty_tier"}
    phone = found["phone_number"]
    assert (phone.object, phone.polarity, phone.is_update) == ("+441519876543", AFF, True)
    assert all(f.confidence == 1.0 and f.authoritative for f in found.values())
    assert all(f.asserted_by is Assertor.CRM for f in found.values())
    assert (found["plan"].object, found["plan"].is_update) == ("premium", False)
    assert (found["loyalty_tier"].object, found["loyalty_tier"].polarity) == ("gold", NEG)


# --- turn context: earlier turns of the session give short answers their meaning ----
def conversation(
    extractor: FactExtractor,
    lines: list[tuple[Role, str]],
    contexts: dict[str, DialogueContext] | None = None,
) -> tuple[list[list[ExtractedFact]], dict[str, DialogueContext]]:
    events = [
        turn(text, role).model_copy(update={"turn_index": i, "event_id": f"e{i}"})
        for i, (role, text) in enumerate(lines)
    ]
    pairs = list(zip(events, extractor.parser.parse_batch(events), strict=True))
    return extractor.extract_in_context(pairs, contexts or {})


USER, AGENT = Role.USER, Role.AGENT


def test_a_bare_time_answer_takes_the_topic_of_the_question(extractor: FactExtractor) -> None:
    found, _ = conversation(
        extractor, [(AGENT, "When should we deliver the parcel?"), (USER, "Sunday morning.")]
    )
    assert triples(found[1]) == {("delivery_time", "sunday morning", AFF)}
    # Without the question the same answer falls back to an appointment time.
    assert triples(facts(extractor, "Sunday morning.")) == {
        ("appointment_time", "sunday morning", AFF)
    }


def test_context_carries_over_batches_and_round_trips_as_json(extractor: FactExtractor) -> None:
    _, contexts = conversation(extractor, [(AGENT, "Which day suits you for the installation?")])
    stored = {
        k: DialogueContext.model_validate_json(v.model_dump_json()) for k, v in contexts.items()
    }
    event = turn("Wednesday works.").model_copy(update={"turn_index": 1})
    found, _ = extractor.extract_in_context([(event, extractor.parser.parse(event))], stored)
    assert triples(found[0]) == {("installation_time", "wednesday", AFF)}


def test_a_topic_expires_after_a_few_turns(extractor: FactExtractor) -> None:
    lines = [(AGENT, "When should we deliver?")] + [(USER, "Hmm, let me check.")] * 5
    found, _ = conversation(extractor, [*lines, (USER, "Friday.")])
    assert triples(found[-1]) == {("appointment_time", "friday", AFF)}


def test_a_yes_to_an_offer_makes_it_the_users_fact(extractor: FactExtractor) -> None:
    found, _ = conversation(
        extractor,
        [(AGENT, "Would Saturday morning suit you for the visit?"), (USER, "Yes, that works.")],
    )
    assert [(f.asserted_by, f.polarity) for f in found[0]] == [(Assertor.AGENT, AFF)]
    [fact] = found[1]
    assert (fact.predicate, fact.object, fact.polarity) == (
        "appointment_time",
        "saturday morning",
        AFF,
    )
    assert fact.asserted_by is Assertor.USER
    assert fact.confidence >= COMMIT


def test_a_plain_no_to_an_offer_refuses_it(extractor: FactExtractor) -> None:
    found, _ = conversation(
        extractor, [(AGENT, "Would you like our seasonal newsletter?"), (USER, "No thank you.")]
    )
    [fact] = found[1]
    assert (fact.predicate, fact.object, fact.polarity) == ("contact_channel", "newsletter", NEG)
    assert fact.asserted_by is Assertor.USER
    assert fact.confidence >= COMMIT


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Would Tuesday suit for the visit?", "No, Thursday is better."),  # a counter-offer
        ("Changed to email only. Anything else?", "No, that's it, thanks."),  # not offered
        ("Would you like our newsletter?", "No problem, sign me up."),  # an acceptance
        ("Would you like our newsletter?", "Maybe later."),  # not a no
    ],
)
def test_no_refusal_of_what_the_question_did_not_offer(
    extractor: FactExtractor, question: str, answer: str
) -> None:
    found, _ = conversation(extractor, [(AGENT, question), (USER, answer)])
    assert not any(f.polarity is NEG and f.fields.get("REFUSED") for f in found[1])
    # Tuesday stays un-refused: the user gave another day instead.
    assert ("appointment_time", "tuesday", NEG) not in triples(found[1])


def test_a_yes_after_a_statement_or_a_hedged_yes_commits_nothing(
    extractor: FactExtractor,
) -> None:
    found, _ = conversation(extractor, [(AGENT, "Thursday at 11am then."), (USER, "Yes.")])
    assert found[1] == []
    found, _ = conversation(extractor, [(AGENT, "Is Friday fine?"), (USER, "Yes, but not Friday.")])
    assert ("appointment_time", "friday", AFF) not in triples(found[1])
    found, _ = conversation(extractor, [(AGENT, "Is Friday fine?"), (USER, "Ok, maybe.")])
    assert all(f.confidence < COMMIT for f in found[1])


def test_a_town_without_a_cue_takes_the_previous_place_topic(extractor: FactExtractor) -> None:
    found, _ = conversation(
        extractor,
        [(USER, "I'm flying to Madrid next week."), (USER, "It's Lyon, not Nice.")],
    )
    assert {("travel", "lyon", AFF), ("travel", "nice", NEG)} <= triples(found[1])


def test_an_engineer_sent_on_a_day_is_an_appointment(extractor: FactExtractor) -> None:
    found = facts(extractor, "I can send an engineer on Saturday.", Role.AGENT)
    assert triples(found) == {("appointment_time", "saturday", AFF)}


@pytest.mark.parametrize(
    ("text", "update"),
    [
        ("I'm pescatarian now.", True),
        ("The new gate code is 3391.", True),
        ("Please move the installation to Friday.", True),
        ("I'm pescatarian.", False),
        ("I'm busy right now, call me on Friday.", False),
    ],
)
def test_update_cues_mark_updates_without_a_correction_act(
    extractor: FactExtractor, text: str, update: bool
) -> None:
    found = facts(extractor, text)
    assert found
    assert all(f.is_update is update for f in found)


def test_a_verbless_answer_to_a_choice_question_is_a_like(extractor: FactExtractor) -> None:
    found, _ = conversation(
        extractor, [(AGENT, "Which seat would you like on the train?"), (USER, "Aisle, please.")]
    )
    assert triples(found[1]) == {("likes", "aisle", AFF)}
    found, _ = conversation(
        extractor, [(AGENT, "What seems to be the problem?"), (USER, "The bathroom tap drips.")]
    )
    assert found[1] == []
