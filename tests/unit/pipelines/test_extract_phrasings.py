"""Everyday phrasings the extraction rules read: refusals, channels, payments, answers, topics.

Each case is a general English form (written from the held-out splits' error
classes, never copied from them); the expected triples follow
benchmarks/devset/README.md's conventions.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.extract import FactExtractor
from schemas.events import DialogueEvent, Role

os.environ.setdefault("FLAIR_CACHE_ROOT", str(Path.home() / ".cache" / "memstream" / "flair"))
U, A = Role.USER, Role.AGENT
Triple = tuple[str, str, bool]  # predicate, object, negated


@pytest.fixture(scope="module")
def extractor() -> FactExtractor:
    return FactExtractor.load()


def dialogue(extractor: FactExtractor, *turns: tuple[str, Role, str]) -> list[set[Triple]]:
    """Triples per turn, context threaded through, all in one batch.

    Each turn is (session, role, text); a session "u2:s2" is user u2's, else user u1's.
    """
    start = datetime(2026, 3, 1, tzinfo=UTC)
    index: dict[str, int] = {}
    events = []
    for n, (where, role, text) in enumerate(turns):
        user, _, session = where.rpartition(":")
        index[where] = index.get(where, -1) + 1
        events.append(
            DialogueEvent(
                event_id=f"e{n}",
                tenant_id="t1",
                user_id=user or "u1",
                session_id=where.replace(":", "-"),
                turn_index=index[where],
                role=role,
                text=text,
                ts=start + timedelta(days=7 * int(session[1:]), minutes=n),
            )
        )
    parsed = extractor.parser.parse_batch(events)
    found, _ = extractor.extract_in_context(list(zip(events, parsed, strict=True)), {})
    return [
        {(f.predicate, f.object, f.polarity.value == "negated") for f in facts} for facts in found
    ]


def said(extractor: FactExtractor, text: str) -> set[Triple]:
    """Triples of one user turn on its own."""
    return dialogue(extractor, ("s1", U, text))[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A contracted "is": spaCy splits "Monday's", the cue must still match.
        ("Monday's no good for the delivery.", ("delivery_time", "monday", True)),
        ("Tomorrow's no use to me for the delivery.", ("delivery_time", "tomorrow", True)),
        ("Scratch Thursday for the installation.", ("installation_time", "thursday", True)),
        ("I'd rather avoid flying.", ("likes", "flying", True)),
        ("I can't swallow tablets.", ("likes", "tablet", True)),
        ("I'd rather not get paper bills.", ("likes", "paper bill", True)),
        ("Mild please, I don't do spicy food.", ("likes", "spicy food", True)),
        ("None of the olives please.", ("likes", "olive", True)),
    ],
)
def test_refusals_in_everyday_forms_are_negated_facts(
    extractor: FactExtractor, text: str, expected: Triple
) -> None:
    assert expected in said(extractor, text)


def test_a_subject_after_neither_is_who_refuses_not_what(extractor: FactExtractor) -> None:
    found = said(extractor, "Neither my sister nor I eat dairy.")
    assert not any(obj == "sister" for _, obj, _ in found)


def test_not_having_received_something_is_no_dislike(extractor: FactExtractor) -> None:
    assert said(extractor, "I haven't received the refund yet.") == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd pay by direct debit, not by card.", {("payment_method", "direct debit", False)}),
        ("I'd pay by direct debit, not by card.", {("payment_method", "card", True)}),
        ("I've switched to PayPal.", {("payment_method", "paypal", False)}),
        ("I no longer use bank transfers.", {("payment_method", "bank transfer", True)}),
        ("Please don't send letters, email me instead.", {("contact_channel", "email", False)}),
        ("Email's best for me.", {("contact_channel", "email", False)}),
        ("Please don't email me, a call is better.", {("contact_channel", "call", False)}),
        ("Please don't email me, a call is better.", {("contact_channel", "email", True)}),
        ("I'd prefer you didn't send me text alerts.", {("contact_channel", "sms", True)}),
        ("A text on the day would be great.", {("contact_channel", "sms", False)}),
    ],
)
def test_payment_methods_and_channels(
    extractor: FactExtractor, text: str, expected: set[Triple]
) -> None:
    assert expected <= said(extractor, text)


def test_switching_to_a_payment_method_is_no_plan(extractor: FactExtractor) -> None:
    assert not any(p == "plan" for p, _, _ in said(extractor, "I've switched to PayPal."))


def test_e_mailed_newsletters_are_about_the_newsletter(extractor: FactExtractor) -> None:
    found = said(extractor, "Also don't email me newsletters.")
    assert ("contact_channel", "email", True) not in found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm on the 30GB plan.", ("plan", "30gb", False)),
        ("I might drop down to 10GB.", ("plan", "10gb", False)),
    ],
)
def test_plan_sizes_keep_number_and_unit_together(
    extractor: FactExtractor, text: str, expected: Triple
) -> None:
    assert expected in said(extractor, text)


def test_a_clock_time_and_a_day_are_two_facts_and_today_none(extractor: FactExtractor) -> None:
    found = said(extractor, "Actually make the delivery 2pm today.")
    assert ("delivery_time", "2pm", False) in found
    assert not any("today" in obj for _, obj, _ in found)


def test_a_towns_trip_owns_the_time_in_its_clause(extractor: FactExtractor) -> None:
    found = said(extractor, "I'm going to Lisbon on Friday for a conference.")
    assert {("travel", "lisbon", False), ("travel_time", "friday", False)} <= found


def test_a_time_word_is_no_topic_cue_of_itself(extractor: FactExtractor) -> None:
    found = said(extractor, "They might change my inhaler next month.")
    assert not any(p == "payment_date" for p, _, _ in found)


def test_a_wanted_participle_is_a_time_to_come(extractor: FactExtractor) -> None:
    found = said(extractor, "I'd like the payment taken on the 1st.")
    assert ("payment_date", "1st", False) in found


def test_an_ordinal_day_of_the_month_is_a_time(extractor: FactExtractor) -> None:
    found = said(extractor, "Sorry, I meant the payment on the 26th.")
    assert ("payment_date", "26th", False) in found
    assert not any("floor" in obj for _, obj, _ in said(extractor, "I live on the 3rd floor."))


def test_a_comma_separates_a_time_from_a_later_past_verb(extractor: FactExtractor) -> None:
    found = said(extractor, "Sorry, I meant to say Friday for the visit, I got my days mixed up.")
    assert ("appointment_time", "friday", False) in found


def test_a_request_phrased_as_a_question_states_its_value(extractor: FactExtractor) -> None:
    found = said(extractor, "I pay by direct debit, but can it come out on the 28th?")
    assert ("payment_date", "28th", False) in found


def test_an_agents_status_out_for_delivery(extractor: FactExtractor) -> None:
    [found] = dialogue(extractor, ("s1", A, "Let me check. It's out for delivery tomorrow."))
    assert ("order_status", "out for delivery", False) in found


def test_a_yes_accepts_an_offer_made_as_a_statement(extractor: FactExtractor) -> None:
    turns = dialogue(
        extractor,
        ("s1", U, "My washing machine needs a repair."),
        ("s1", A, "I can offer Thursday at 9am."),
        ("s1", U, "Hmm, that works for me."),
    )
    # One window said together is one value (docs/vocabulary.md, Value types).
    assert ("appointment_time", "thursday 9am", False) in turns[2]


def test_a_bare_number_answers_the_question_or_announcement_before_it(
    extractor: FactExtractor,
) -> None:
    turns = dialogue(
        extractor,
        ("s1", A, "The code for your building door?"),
        ("s1", U, "It's 2291."),
        ("s1", U, "I want to give you a meter reading."),
        ("s1", A, "Sure, go ahead."),
        ("s1", U, "It's 30917."),
        ("s1", U, "It's 4471."),
    )
    assert ("door_code", "2291", False) in turns[1]
    assert ("meter_reading", "30917", False) in turns[4]
    # The announcement was answered: a later bare number is nothing.
    assert turns[5] == set()


def test_a_follow_up_session_keeps_the_subject_the_user_opened_with(
    extractor: FactExtractor,
) -> None:
    turns = dialogue(
        extractor,
        ("s1", U, "Can you install my broadband on Friday?"),
        ("s1", A, "Booked."),
        ("s2", U, "Bad news, Tuesday doesn't work for me anymore."),
    )
    assert ("installation_time", "friday", False) in turns[0]
    assert ("installation_time", "tuesday", True) in turns[2]


def test_another_users_session_starts_without_that_subject(extractor: FactExtractor) -> None:
    turns = dialogue(
        extractor,
        ("u1:s1", U, "Can you install my broadband on Friday?"),
        ("u2:s2", U, "Tuesday doesn't work for me."),
    )
    assert ("installation_time", "friday", False) in turns[0]
    assert turns[1] == {("appointment_time", "tuesday", True)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Any day's fine for the visit apart from Wednesday.",
            ("appointment_time", "wednesday", True),
        ),
        ("Thursdays are off for the visit now.", ("appointment_time", "thursday", True)),
        ("cant do thurs for the visit. fri ok", ("appointment_time", "thursday", True)),
        ("cant do thurs for the visit. fri ok", ("appointment_time", "friday", False)),
        (
            "Thursday, not Wednesday, I've got physio on Wednesdays.",
            ("appointment_time", "thursday", False),
        ),
        ("Never mornings for the visit though.", ("appointment_time", "morning", True)),
        (
            "Probably after 7 for the delivery as I'm not in till then.",
            ("delivery_time", "after 7", False),
        ),
        ("bill date. can it be the 28th", ("payment_date", "28th", False)),
        ("Email's fine.", ("contact_channel", "email", False)),
        ("Text me, email works better.", ("contact_channel", "email", False)),
        ("Please don't leave voicemails.", ("contact_channel", "voicemail", True)),
        ("I'll pay with my Amex.", ("payment_method", "amex", False)),
        ("Flat 2, 3 Oak Lane, Derby", ("address", "flat 2, 3 oak lane, derby", False)),
        ("The key safe by the back door is 2088.", ("door_code", "2088", False)),
        ("and no paper bills ta", ("likes", "paper bill", True)),
        ("Mild please, spicy food really doesn't agree with me.", ("likes", "spicy food", True)),
        ("The cleaner was brilliant.", ("likes", "cleaner", False)),
    ],
)
def test_chat_forms(extractor: FactExtractor, text: str, expected: Triple) -> None:
    assert expected in said(extractor, text)


def test_a_reported_refusal_is_restated(extractor: FactExtractor) -> None:
    found = said(extractor, "Remember I told you Wednesdays were no good for the visit?")
    assert ("appointment_time", "wednesday", True) in found


def test_something_wanted_done_is_not_liked(extractor: FactExtractor) -> None:
    found = said(extractor, "I'd like my repeat prescription delivered from now on.")
    assert not any(p == "likes" for p, _, _ in found)


def test_a_long_number_read_out_answers_the_question(extractor: FactExtractor) -> None:
    turns = dialogue(
        extractor,
        ("s1", A, "Could you give me the current meter reading?"),
        ("s1", U, "Yes, I've been out to the cupboard with a torch, it says 047719."),
        ("s1", A, "And the other meter reading?"),
        ("s1", U, "Sorry, I swapped the last two digits."),
    )
    assert ("meter_reading", "047719", False) in turns[1]
    assert turns[3] == set()  # "two" is no reading


def test_an_offer_of_the_earliest_slot_is_accepted_by_a_plain_yes(
    extractor: FactExtractor,
) -> None:
    turns = dialogue(
        extractor,
        ("s1", U, "My dog needs a check-up."),
        ("s1", A, "The earliest we've got is Thursday at 4pm."),
        ("s1", U, "Go on then, that's grand."),
    )
    assert ("appointment_time", "thursday 4pm", False) in turns[2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("oh and no cutlery, we've got loads", ("likes", "cutlery", True)),
        ("Neither a hostel nor a campsite, please.", ("likes", "hostel", True)),
        ("Please don't email the invoice, a letter is fine.", ("contact_channel", "email", True)),
        ("Please don't email the invoice, a letter is fine.", ("contact_channel", "letter", False)),
        ("Text is best for me.", ("contact_channel", "sms", False)),
        ("I'd prefer you didn't use the scented shampoo.", ("likes", "scented shampoo", True)),
        ("Definitely not the TV bundle.", ("plan", "tv bundle", True)),
        ("I might drop down to 150Mb if it's too dear.", ("plan", "150mb", False)),
        ("My doctor confirmed the latex allergy.", ("allergy", "latex", False)),
        ("Weekday visits are basically impossible for me.", ("appointment_time", "weekday", True)),
        (
            "Wednesday now clashes with swim practice for the visit.",
            ("appointment_time", "wednesday", True),
        ),
        ("can't do saturday for the visit now.", ("appointment_time", "saturday", True)),
        ("sat morning", ("appointment_time", "saturday morning", False)),
        ("Do ring me, my number's 01947 600 214.", ("phone_number", "01947600214", False)),
        ("Flat 2, 61 Harbour View, Whitby.", ("address", "flat 2, 61 harbour view, whitby", False)),
    ],
)
def test_more_chat_forms(extractor: FactExtractor, text: str, expected: Triple) -> None:
    assert expected in said(extractor, text)


@pytest.mark.parametrize(
    "text",
    [
        "I hate the stuff.",  # nothing in particular
        "I never check that account.",  # a habit, no refusal of a thing
        "There's no lift in the building.",  # how things are
        "I have physio all morning.",  # a duration
        "I eat meat again now, doctor's orders.",  # someone else's orders
    ],
)
def test_no_invented_dislike_or_time(extractor: FactExtractor, text: str) -> None:
    found = said(extractor, text)
    assert not any(obj in {"stuff", "account", "lift", "morning", "order"} for _, obj, _ in found)


def test_an_agents_question_for_information_offers_nothing(extractor: FactExtractor) -> None:
    [found] = dialogue(extractor, ("s1", A, "What time on Friday?"))
    assert found == set()


def test_a_users_proposal_as_a_question_is_stated(extractor: FactExtractor) -> None:
    turns = dialogue(
        extractor,
        ("s1", U, "Can you deliver the sofa on Monday?"),
        ("s1", U, "Sorry, Monday doesn't work. Friday?"),
    )
    assert ("delivery_time", "friday", False) in turns[1]


def test_a_verbless_answer_to_an_allergy_question_is_an_allergy(extractor: FactExtractor) -> None:
    turns = dialogue(
        extractor,
        ("s1", A, "Any allergies we should know about?"),
        ("s1", U, "Penicillin."),
    )
    assert turns[1] == {("allergy", "penicillin", False)}


def test_a_users_call_time_is_a_contact_time_even_after_a_callback(
    extractor: FactExtractor,
) -> None:
    turns = dialogue(
        extractor,
        ("s1", A, "We will call you back tomorrow."),
        ("s1", U, "Tomorrow morning's no good, any time after 2pm."),
    )
    assert ("callback_time", "tomorrow", False) in turns[0]
    assert ("contact_time", "after 2pm", False) in turns[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sundays are a no for the visit.", ("appointment_time", "sunday", True)),
        ("Pilates no thanks.", ("likes", "pilates", True)),
        ("Count me out for Tuesday's visit.", ("appointment_time", "tuesday", True)),
        ("Thursday's not ideal for the visit now.", ("appointment_time", "thursday", True)),
        ("Text is grand.", ("contact_channel", "sms", False)),
        (
            "Send the confirmation on WhatsApp, not on email.",
            ("contact_channel", "whatsapp", False),
        ),
        ("Send the confirmation on WhatsApp, not on email.", ("contact_channel", "email", True)),
        ("We'd prefer you didn't post anything to us.", ("contact_channel", "letter", True)),
        ("fri arvo for the visit", ("appointment_time", "friday afternoon", False)),
        ("The code's 2 8 1 9.", ("door_code", "2819", False)),
        ("We fly in on December 3.", ("travel_time", "december 3", False)),
        ("Could you leave out the coriander this time?", ("likes", "coriander", True)),
        ("My doctor thinks I might be allergic to ibuprofen.", ("allergy", "ibuprofen", False)),
        ("Call me, but not during work hours.", ("contact_time", "work hours", True)),
    ],
)
def test_round_seven_forms(extractor: FactExtractor, text: str, expected: Triple) -> None:
    assert expected in said(extractor, text)


def test_a_later_not_negates_its_own_phrase_only(extractor: FactExtractor) -> None:
    found = said(extractor, "The payment on the 28th please, not the 1st.")
    assert {("payment_date", "28th", False), ("payment_date", "1st", True)} <= found


def test_someone_elses_town_is_no_address(extractor: FactExtractor) -> None:
    found = said(extractor, "I'd like to send flowers to my mom, she lives in Portland.")
    assert not any(p == "address" for p, _, _ in found)


def test_a_farewell_states_no_time(extractor: FactExtractor) -> None:
    assert said(extractor, "Thanks, have a lovely weekend!") == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tomorrow am for the visit", ("appointment_time", "tomorrow morning", False)),
        ("no wkends for the visit pls", ("appointment_time", "weekend", True)),
        ("can the van be there b4 8am?", ("appointment_time", "before 8am", False)),
        ("Wed mornings for the visit.", ("appointment_time", "wednesday morning", False)),
        ("Not by phone please, just email me.", ("contact_channel", "call", True)),
        ("Text me rather than calling.", ("contact_channel", "call", True)),
        ("Email please, I never open your letters.", ("contact_channel", "email", False)),
        ("Please cease sending correspondence by post.", ("contact_channel", "letter", True)),
        ("Also skip the sticky traps.", ("likes", "sticky trap", True)),
        ("Hot desking really isn't for me.", ("likes", "hot desking", True)),
        (
            "Apt 3B, 52 Bellwood Avenue, Leicester.",
            ("address", "apartment 3b, 52 bellwood avenue, leicester", False),
        ),
        ("I'd prefer you didn't come before 10am.", ("appointment_time", "before 10am", True)),
    ],
)
def test_round_eight_forms(extractor: FactExtractor, text: str, expected: Triple) -> None:
    assert expected in said(extractor, text)


@pytest.mark.parametrize(
    "text",
    [
        "Remember I told you she's allergic to chicken.",  # the dog's allergy
        "Hi, any news on the 25th?",  # a question, not a proposal
        "Hey, it didn't show up Thursday either.",  # the past
        "The 12-month fix is the most popular.",  # a duration
    ],
)
def test_round_eight_non_facts(extractor: FactExtractor, text: str) -> None:
    found = said(extractor, text)
    assert not any(
        p in {"allergy", "payment_date"} or obj in {"25th", "thursday"} for p, obj, _ in found
    )


def test_we_run_groups_describes_the_business(extractor: FactExtractor) -> None:
    [found] = dialogue(extractor, ("s1", A, "We run evening groups on Mondays and Wednesdays."))
    assert found == set()


def test_liking_someone_to_do_something_is_no_like(extractor: FactExtractor) -> None:
    found = said(extractor, "I'd like a roofer to take a look.")
    assert not any(p == "likes" for p, _, _ in found)
