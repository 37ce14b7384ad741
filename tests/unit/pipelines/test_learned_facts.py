"""The learned tagger's triples as facts, and the rules that add to them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pipelines.extract import FactExtractor
from pipelines.extract.context import OfferedFact, offered_form
from pipelines.extract.extractor import in_scope, is_aside
from pipelines.extract.learned.facts import (
    CONFIDENCE_FROM_CONTEXT,
    CONFIDENCE_HEDGED,
    CONFIDENCE_SURE,
    CONFIDENCE_UNSURE,
    combine,
    learned_fact,
)
from pipelines.extract.learned.model import MODEL_PATH
from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.extract.possession import owned_by_other
from pipelines.extract.typed import typed
from pipelines.parse import DialogueParser
from pipelines.parse.model import Intent, ParsedTurn
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span
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


def test_the_taggers_facts_first_then_the_rules_closed_form_values_it_did_not_state() -> None:
    event = turn()

    def fact(predicate: str, obj: str, **kw: object) -> ExtractedFact:
        return learned_fact(event, PARSED, triple(predicate, obj, **kw), update=False)

    learned = [
        fact("likes", "jazz"),  # sure: kept
        fact("plan", "30gb", from_context=True),  # an answer to the turn before: kept
        fact("hobby", "chess", hedged=True),  # hedged: kept, to be held
        fact("pet", "cat", confidence=0.3),  # unsure: dropped
        fact("phone_number", "07700900123"),
    ]
    rules = [
        fact("phone_number", "+44 7700 900123"),  # the tagger's number again: not added
        fact("email", "s@example.com"),  # closed form, missed by the tagger: added
        fact("likes", "tea"),  # free text: the tagger's reading stands
    ]
    combined = combine(learned, rules)
    assert [(f.predicate, f.object) for f in combined] == [
        ("likes", "jazz"),
        ("plan", "30gb"),
        ("hobby", "chess"),
        ("phone_number", "07700900123"),
        ("email", "s@example.com"),
    ]


def test_an_unsure_tag_the_rules_read_too_is_kept_as_sure() -> None:
    event = turn()

    def fact(predicate: str, obj: str, **kw: object) -> ExtractedFact:
        return learned_fact(event, PARSED, triple(predicate, obj, **kw), update=False)

    learned = [
        fact("likes", "swimming", negated=True, confidence=0.5),  # the rules agree: kept
        fact("likes", "maths", negated=True, confidence=0.3),  # the rules say it likes: dropped
        fact("hobby", "golf", confidence=0.3),  # the rules read it as another predicate: dropped
    ]
    rules = [
        fact("likes", "Swimming", negated=True),
        fact("likes", "maths"),
        fact("likes", "golf"),
    ]
    combined = combine(learned, rules)
    assert [(f.object, f.polarity, f.confidence) for f in combined] == [
        ("swimming", Polarity.NEGATED, CONFIDENCE_SURE)
    ]


def test_a_number_a_rule_read_by_its_cue_is_typed_as_the_cue_says() -> None:
    # "Please call me on 0151 234 5678": the tagger read a reference number.
    event = turn()
    tagged = learned_fact(event, PARSED, triple("reference_number", "01512345678"), update=False)
    cued = learned_fact(event, PARSED, triple("phone_number", "0151 234 5678"), update=False)
    cued = cued.model_copy(update={"confidence": 0.9})  # a rule's fact with its cue word
    assert [(f.predicate, f.object) for f in combine([tagged], [cued])] == [
        ("phone_number", "0151 234 5678")
    ]
    # Without a cue (a guessed topic) the tagger's reading stands beside it.
    guessed = cued.model_copy(update={"confidence": 0.84})
    assert [f.predicate for f in combine([tagged], [guessed])] == [
        "reference_number",
        "phone_number",
    ]


def test_a_single_valued_predicate_the_tagger_read_takes_no_second_value_from_the_rules() -> None:
    event = turn()

    def fact(predicate: str, obj: str, **kw: object) -> ExtractedFact:
        return learned_fact(event, PARSED, triple(predicate, obj, **kw), update=False)

    learned = [fact("contact_channel", "email"), fact("reference_number", "AB-12")]
    rules = [
        fact("contact_channel", "post"),  # single-valued, the tagger gave it a value: dropped
        fact("contact_channel", "sms", negated=True),  # the other polarity: added
        fact("reference_number", "CD-34"),  # multi-valued, another value: added
    ]
    combined = combine(learned, rules)
    assert [(f.predicate, f.object, f.polarity) for f in combined] == [
        ("contact_channel", "email", Polarity.AFFIRMED),
        ("reference_number", "AB-12", Polarity.AFFIRMED),
        ("contact_channel", "sms", Polarity.NEGATED),
        ("reference_number", "CD-34", Polarity.AFFIRMED),
    ]


def test_a_standing_window_is_a_rule_beside_the_bookings() -> None:
    weekdays = learned_fact(turn(), PARSED, triple("installation_time", "weekday"), update=False)
    booking = learned_fact(turn(), PARSED, triple("installation_time", "monday 2pm"), update=False)
    assert weekdays.kind is MemoryKind.RULE and booking.kind is MemoryKind.STATUS


def test_a_date_alone_names_no_event() -> None:
    # "I might order again for my daughter's birthday next month": "month" is no event.
    values = ["month", "next saturday", "daughter's birthday", "brother's wedding 14 june"]
    facts = [learned_fact(turn(), PARSED, triple("event", v), update=False) for v in values]
    assert [f.object for f in typed(facts)] == ["daughter's birthday", "brother's wedding 14 june"]


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


@pytest.mark.parametrize(
    ("text", "value", "negated", "hedged"),
    [
        ("I don't eat meat anymore.", "meat", True, False),
        ("Honestly I never liked jazz much.", "jazz", True, False),
        ("I might take the 30GB plan.", "30GB", False, True),
        ("I love jazz, but I don't like opera.", "jazz", False, False),
        ("I love jazz, but I don't like opera.", "opera", True, False),
    ],
)
def test_a_tagged_value_is_read_in_its_sentence(
    nlp: Any, text: str, value: str, negated: bool, hedged: bool
) -> None:
    start = text.index(value)
    tagged = triple("likes", value.casefold(), start=start, end=start + len(value))
    read = in_scope(tagged, nlp(text))
    assert (read.negated, read.hedged) == (negated, hedged)


def test_a_negation_the_tagger_saw_is_kept_and_a_value_from_context_is_left_alone(nlp: Any) -> None:
    doc = nlp("Sure, that works.")
    said = triple("likes", "tea", negated=True, start=6, end=10)
    assert in_scope(said, doc).negated
    answer = triple("plan", "30gb", from_context=True, start=0, end=4)
    assert in_scope(answer, doc) is answer


def test_a_value_from_context_is_held_by_a_hedge_anywhere_in_the_answer(nlp: Any) -> None:
    # Its offsets are in the previous turn: no sentence of this one holds it.
    answer = triple("plan", "200gb", from_context=True, start=40, end=45)
    for text in ("Let me check with my partner and get back to you.", "Maybe. I'll see."):
        assert in_scope(answer, nlp(text)).hedged, text
    assert not in_scope(answer, nlp("Yes, upgrade me to that.")).hedged


@pytest.mark.parametrize(
    ("text", "predicate", "value", "aside"),
    [
        # Someone else did it, in the past: a complaint or a story, no booking.
        ("The driver called me at 11 pm, that's way too late.", "contact_time", "11 pm", True),
        ("The engineer never turned up on Saturday.", "appointment_time", "Saturday", True),
        ("My order from last night was cold.", "delivery_time", "last night", True),
        ("It arrived two days ago.", "delivery_time", "two days ago", True),
        # The speaker's own past arrangement or habit, a state, or what is to come.
        ("I booked it for Monday at 3pm.", "appointment_time", "Monday at 3pm", False),
        ("They moved it to Friday.", "appointment_time", "Friday", False),
        ("I started swimming, 7am Mon Wed Fri.", "appointment_time", "7am Mon Wed Fri", False),
        ("Your payment was due on the 1st.", "payment_date", "1st", False),
        ("Can the engineer come on Saturday?", "appointment_time", "Saturday", False),
        ("I was born on 3 May.", "birthday", "3 May", False),
        # A stop on the way is no destination.
        ("The one via Helsinki, please.", "travel", "Helsinki", True),
        ("We fly to Tokyo with a layover in Doha.", "travel", "Doha", True),
        ("We fly to Tokyo with a layover in Doha.", "travel", "Tokyo", False),
    ],
)
def test_a_value_that_is_no_arrangement_of_the_users_is_an_aside(
    nlp: Any, text: str, predicate: str, value: str, aside: bool
) -> None:
    start = text.index(value)
    tagged = triple(predicate, value.casefold(), start=start, end=start + len(value))
    assert is_aside(tagged, nlp(text)) is aside


@pytest.fixture(scope="module")
def hybrid() -> FactExtractor:
    return FactExtractor.load(DialogueParser.load(), learned_path=MODEL_PATH)


def said(extractor: FactExtractor, *texts: str) -> list[list[ExtractedFact]]:
    return dialogue(extractor, *((Role.USER, text) for text in texts))


def dialogue(extractor: FactExtractor, *turns: tuple[Role, str]) -> list[list[ExtractedFact]]:
    events = session(*turns)
    parsed = extractor.parser.parse_batch(events)
    return extractor.extract_batch(list(zip(events, parsed, strict=True)))


def session(*turns: tuple[Role, str]) -> list[DialogueEvent]:
    """One session's turns as events, a minute apart."""
    return [
        DialogueEvent(
            event_id=f"e{i}",
            tenant_id="acme",
            user_id="u1",
            session_id="s1",
            turn_index=i,
            role=role,
            text=text,
            ts=T0 + timedelta(minutes=i),
        )
        for i, (role, text) in enumerate(turns)
    ]


def test_the_hybrids_facts_name_the_sentence_they_were_read_in(hybrid: FactExtractor) -> None:
    # trace shows this sentence; a window's parts join only within one.
    [facts] = said(hybrid, "Hi there. My phone number is 07700 900123. Thanks!")
    [phone] = [f for f in facts if f.predicate == "phone_number"]
    assert phone.source_span is not None
    assert phone.source_span.text == "My phone number is 07700 900123."


def test_a_hedge_said_alone_holds_the_turns_tagged_values(hybrid: FactExtractor) -> None:
    sure, unsure = said(
        hybrid, "I'm allergic to peanuts.", "I'm allergic to shellfish. Not sure yet though."
    )
    assert sure and all(f.confidence >= 0.82 and not f.hedged for f in sure), sure
    assert unsure and all(f.hedged and f.confidence < 0.82 for f in unsure), unsure


def test_a_hedge_said_alone_holds_the_friends_tagged_values_too(hybrid: FactExtractor) -> None:
    [_, unsure] = dialogue(
        hybrid,
        (Role.USER, "Guess what, I got the job!"),
        (Role.AGENT, "So you're moving to Leeds in May. Not sure yet though?"),
    )
    assert unsure and all(f.hedged and f.confidence < 0.82 for f in unsure), unsure


def test_ones_own_relative_is_not_held_by_a_hedge_about_something_else(
    hybrid: FactExtractor,
) -> None:
    [found] = said(hybrid, "I may be in Edinburgh that week, visiting my sister.")
    [sister] = [f for f in found if f.predicate == "family_member"]
    assert sister.object == "sister" and not sister.hedged and sister.confidence >= 0.82
    # What the sentence hedges is still hedged.
    others = [f for f in found if f.predicate != "family_member"]
    assert others and all(f.hedged for f in others), found


def test_ones_own_relative_is_not_denied_by_a_negation_about_something_else(
    hybrid: FactExtractor,
) -> None:
    [found] = said(hybrid, "My husband doesn't know yet, he thinks the kitten is from my sister.")
    relatives = {(f.object, f.polarity) for f in found if f.predicate == "family_member"}
    assert ("husband", Polarity.AFFIRMED) in relatives, found
    assert ("husband", Polarity.NEGATED) not in relatives, found


def test_a_name_opening_the_answer_is_the_relative_the_friend_asked_after(
    hybrid: FactExtractor,
) -> None:
    [_, answer] = dialogue(
        hybrid,
        (Role.AGENT, "Ha. And your husband and the girls?"),
        (Role.USER, "Mads is fine, busy at the bakery. Ida is 12. Karla is 8 and wants a rabbit."),
    )
    relatives = {f.object for f in answer if f.predicate == "family_member"}
    assert relatives == {"husband mads", "daughter ida", "daughter karla"}, answer


def _same_type(a: str, b: str) -> bool:
    times = {"installation_time", "appointment_time", "travel_time"}
    return a == b or {a, b} <= times


def test_a_piece_of_an_offer_read_from_context_is_the_whole_offer() -> None:
    window = OfferedFact(predicate="installation_time", object="april 15 between 8am and noon")
    flight = OfferedFact(predicate="travel_time", object="10:40am may 11")
    back = OfferedFact(predicate="travel_time", object="may 15 4pm")
    offers = [window, flight, back]
    assert offered_form("installation_time", "noon", offers, _same_type) == window
    assert offered_form("installation_time", "april 15", offers, _same_type) == window
    # "10:40" is the start of the offer's "10:40am"; "may 11" only of the flight out.
    assert offered_form("travel_time", "10:40 may 11", offers, _same_type) == flight
    assert offered_form("travel_time", "may", offers, _same_type) == flight  # the shortest
    # A word the offer does not hold, another type of value, or no offer: as read.
    assert offered_form("travel_time", "may 16", offers, _same_type) is None
    assert offered_form("email", "noon", offers, _same_type) is None
    assert offered_form("installation_time", "noon", [], _same_type) is None


def test_a_stop_on_the_way_offered_and_accepted_is_no_destination(hybrid: FactExtractor) -> None:
    # The yes reads the offer's words: the offer's parse says Helsinki is on the way.
    offer, answer = dialogue(
        hybrid,
        (Role.AGENT, "The 11:20 am departure via Helsinki is available too."),
        (Role.USER, "Yes, that one. Book it."),
    )
    assert not [f for f in offer + answer if f.predicate == "travel"], offer + answer


def test_a_yes_to_an_offer_takes_its_values_whole(hybrid: FactExtractor) -> None:
    # From the context the tagger reads "10:40 may" of "10:40 am flight on May 11".
    offer, answer = dialogue(
        hybrid,
        (Role.AGENT, "I found a 10:40 am flight on May 11, returning May 15 at 4 pm."),
        (Role.USER, "Sounds good."),
    )
    offered = {f.object for f in offer if f.predicate == "travel_time"}
    accepted = [f for f in answer if f.predicate == "travel_time"]
    assert accepted and {f.object for f in accepted} <= offered, (offered, answer)
    assert all(f.asserted_by is Assertor.USER for f in accepted)


def test_an_answers_value_is_read_the_same_however_the_stream_is_batched(
    hybrid: FactExtractor,
) -> None:
    # Flink hands the extractor one turn at a time, Faust a batch: the offer's
    # parse must come from the context text, never from the batch's other turns.
    turns = [
        (Role.AGENT, "The 11:20 am departure via Helsinki is available too."),
        (Role.USER, "Yes, that one. Book it."),
        (Role.AGENT, "The driver called you at 11 pm, is that right?"),
        (Role.USER, "Yes, way too late."),
    ]
    events = session(*turns)
    pairs = list(zip(events, hybrid.parser.parse_batch(events), strict=True))
    whole, _ = hybrid.extract_in_context(pairs, {})
    one_by_one, contexts = [], {}
    for pair in pairs:
        [facts], contexts = hybrid.extract_in_context([pair], contexts)
        one_by_one.append(facts)
    assert [[f.text for f in facts] for facts in one_by_one] == [
        [f.text for f in facts] for facts in whole
    ]
    assert not [f for facts in whole for f in facts if f.predicate == "travel"], whole


def test_a_value_that_belongs_to_someone_else_is_not_the_users(hybrid: FactExtractor) -> None:
    # pipelines/extract/possession.py: the owner is read from the possessive in
    # front of the value's noun, or, for a bare answer, in the question it answers.
    turns = dialogue(
        hybrid,
        (Role.USER, "My husband's phone is 555-0187."),
        (Role.AGENT, "Thanks. And what's his email?"),
        (Role.USER, "tom.lee@example.com"),
        (Role.AGENT, "What's her name as on the passport?"),
        (Role.USER, "Yuki Tanaka."),
        (Role.AGENT, "And what's your own number?"),
        (Role.USER, "555-0111."),
        (Role.USER, "My email is ana.lee@example.com, my husband's is tom.lee@example.com."),
    )
    values = [{(f.predicate, f.object) for f in facts} for facts in turns]
    assert not {p for p, _ in values[0]} & {"phone_number", "secondary_phone"}, values[0]
    assert not [v for v in values[2] if v[0] == "email"], values[2]
    assert not [v for v in values[4] if v[0] == "name"], values[4]
    assert ("phone_number", "5550111") in values[6], values[6]
    # Her own said beside his: the sentence is not taken as his alone.
    assert ("email", "ana.lee@example.com") in values[7], values[7]


@pytest.mark.parametrize(
    ("predicate", "sentence", "before", "others"),
    [
        ("email", "What's your account's email?", "", False),  # an account is no person
        ("email", "x@y.com", "What's your account's email?", False),
        ("email", "x@y.com", "Lovely. What's your husband's email?", True),
        ("phone_number", "Her number is 555-0101.", "", True),
        ("phone_number", "Her number is 555-0101 and mine is 555-0102.", "", False),
        ("phone_number", "Call me on 555-0101, my sister will pass it on.", "And his?", False),
        ("name", "Anna.", "What's your little sister's name?", True),
        ("name", "I'm Anna, and this is about my mum's order.", "", False),
        ("occupation", "teacher", "What does your wife do?", False),  # no noun to own
    ],
)
def test_whose_value_a_sentence_states(
    predicate: str, sentence: str, before: str, others: bool
) -> None:
    fact = learned_fact(turn(), PARSED, triple(predicate, "v"), update=False)
    fact = fact.model_copy(update={"source_span": Span(label="S", text=sentence, start=0, end=1)})
    assert owned_by_other(fact, sentence, before) is others


def test_a_plain_yes_to_an_offered_time_is_kept_beside_the_taggers_facts(
    hybrid: FactExtractor,
) -> None:
    # The tagger's facts keep only the rules' closed-form values: a yes that
    # accepted a time was dropped there, so "Perfect." stored nothing.
    _, answer = dialogue(hybrid, (Role.AGENT, "Saturday 21 March at 10?"), (Role.USER, "Perfect."))
    assert [(f.predicate, f.object, f.asserted_by) for f in answer] == [
        ("appointment_time", "saturday 21 march 10", Assertor.USER)
    ]


@pytest.mark.parametrize(
    "offer",
    [
        "Amira can do Thursday 25 June at 6:30pm.",
        "They can start Thursday 25 June at 6:30pm.",
        "Dr Patel has Thursday 25 June at 6:30pm.",
        "I've got Thursday 25 June at 6:30pm.",
        "There's a slot at the Leeds branch on Thursday 25 June at 6:30pm.",
        "I'll pencil in Thursday 25 June at 6:30pm.",
    ],
)
def test_a_yes_accepts_a_time_someone_has_free(hybrid: FactExtractor, offer: str) -> None:
    _, answer = dialogue(hybrid, (Role.AGENT, offer), (Role.USER, "Lovely."))
    assert ("appointment_time", "thursday 25 june 6:30pm") in {
        (f.predicate, f.object) for f in answer if f.asserted_by is Assertor.USER
    }, answer


def test_a_yes_to_a_choice_of_two_times_picks_neither(hybrid: FactExtractor) -> None:
    offer, answer = dialogue(
        hybrid,
        (Role.AGENT, "Dr Patel has Tuesday 14th at 8am or Thursday 16th at 8am."),
        (Role.USER, "Great."),
    )
    assert len([f for f in offer if f.predicate == "appointment_time"]) == 2, offer
    assert not answer


def _users(facts: list[ExtractedFact]) -> set[tuple[str, str, Polarity]]:
    return {(f.predicate, f.object, f.polarity) for f in facts if f.asserted_by is Assertor.USER}


def test_a_yes_on_the_speakers_own_condition_accepts_the_offer_unsure(
    hybrid: FactExtractor,
) -> None:
    _, answer = dialogue(
        hybrid,
        (Role.AGENT, "Can we book your boiler service for Tuesday the 9th?"),
        (Role.USER, "Yes, if I can get the morning off."),
    )
    times = [f for f in answer if f.predicate.endswith("_time")]
    assert times and all(f.hedged and f.confidence < 0.82 for f in times), answer
    _, plain = dialogue(
        hybrid,
        (Role.AGENT, "Can we book your boiler service for Tuesday the 9th?"),
        (Role.USER, "Yes, that's fine."),
    )
    assert [f for f in plain if f.predicate.endswith("_time") and not f.hedged], plain


def test_a_time_of_the_users_own_sets_the_offered_one_aside(hybrid: FactExtractor) -> None:
    # The tagger reads the offer as context: "Make it 6:30 pm." took "saturday 7pm",
    # and the user's own, less sure time was dropped.
    _, answer = dialogue(
        hybrid,
        (Role.AGENT, "Saturday 7 pm, to 12 Birch Court?"),
        (Role.USER, "Make it 6:30 pm."),
    )
    # Which booking it times (delivery or appointment) is the tagger's call.
    times = {o for p, o, _ in _users(answer) if p.endswith("_time")}
    assert times == {"6:30pm"}, answer


def test_naming_one_of_two_offered_times_keeps_only_that_one(hybrid: FactExtractor) -> None:
    _, answer = dialogue(
        hybrid,
        (Role.AGENT, "Kenji has Wednesday July 22 at 6pm or Thursday July 23 at 7pm."),
        (Role.USER, "thursday the 23rd"),
    )
    objects = {o for _, o, _ in _users(answer)}
    assert "thursday 23rd" in objects
    assert "wednesday july 22 6pm" not in objects, answer


@pytest.mark.parametrize(
    ("offer", "answer", "kept"),
    [
        # A part of the offered time accepts it whole.
        ("She can do Wednesday at 6pm that week instead.", "Wednesday's fine.", "wednesday 6pm"),
        # A yes with no change cue accepts it, whatever else the turn says.
        ("Would Tuesday at 10am suit?", "Yes, and I'm away from the 20th.", "tuesday 10am"),
    ],
)
def test_an_offered_time_the_user_accepts_stays(
    hybrid: FactExtractor, offer: str, answer: str, kept: str
) -> None:
    _, facts = dialogue(hybrid, (Role.AGENT, offer), (Role.USER, answer))
    assert kept in {o for _, o, _ in _users(facts)}, facts


def test_a_bare_name_answering_whats_her_name_names_the_relative(hybrid: FactExtractor) -> None:
    turns = dialogue(
        hybrid,
        (Role.USER, "Hi, small change for October: my sister is joining us."),
        (Role.AGENT, "I'll request a vegetarian meal for her. What's her name as on the passport?"),
        (Role.USER, "Yuki Tanaka."),
        (Role.AGENT, "Added Yuki Tanaka to the booking."),
    )
    assert ("family_member", "sister yuki tanaka", Polarity.AFFIRMED) in _users(turns[2])
    # Her name is not the user's: neither from the answer nor from the agent's echo.
    assert not [f for t in turns for f in t if f.predicate == "name"], turns


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Exciting! What's his name?", True),
        ("Exciting! What's her name?", False),  # a son is no "her"
        ("Dogs are welcome on Fridays. What's his name?", False),  # the dog, not the son
    ],
)
def test_the_relative_named_must_fit_the_question(
    hybrid: FactExtractor, question: str, named: bool
) -> None:
    turns = dialogue(
        hybrid,
        (Role.USER, "My son starts school tomorrow."),
        (Role.AGENT, question),
        (Role.USER, "Leo."),
    )
    assert (("family_member", "son leo", Polarity.AFFIRMED) in _users(turns[2])) is named, turns
