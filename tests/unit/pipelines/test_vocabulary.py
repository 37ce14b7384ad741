"""The predicate vocabulary: validated on load; each value type normalises, identifies, checks."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipelines.vocabulary import VOCABULARY_FILE, Cardinality, default_vocabulary, load_vocabulary
from pipelines.vocabulary.values import last_day_named
from schemas.memory import MemoryKind

ROOT = Path(__file__).resolve().parents[3]
V = default_vocabulary()


def test_every_predicate_is_documented_with_its_type() -> None:
    doc = (ROOT / "docs" / "vocabulary.md").read_text(encoding="utf-8")
    for name, spec in V.predicates.items():
        assert re.search(rf"\| `{name}` \| {spec.type} \| {spec.cardinality.value} \|", doc), name


def test_aliases_resolve_and_unknown_predicates_stay_open_text() -> None:
    assert V.canonical("preferred_phone") == "phone_number"
    assert V.canonical("Notification_Channel") == "contact_channel"
    assert V.spec("allergic_to").multi_valued
    unknown = V.spec("service_credit_eur")
    assert unknown.name == "service_credit_eur" and unknown.cardinality is Cardinality.SINGLE
    assert not V.knows("service_credit_eur") and V.knows("mobile")


def test_ttl_classes() -> None:
    assert V.ttl("travel") == timedelta(days=2)
    assert V.ttl("order_status") == timedelta(days=7)
    assert V.ttl("phone_number") is None


@pytest.mark.parametrize(
    ("predicate", "said", "canonical"),
    [
        ("phone_number", "+44 7700 900456", "+447700900456"),
        ("email", " Sam.Lee@Example.COM.", "sam.lee@example.com"),
        (
            "address",
            "42 Maple Street, Apt 3B, Springfield",
            "42 maple street, apartment 3b, springfield",
        ),
        ("address", "St Albans Rd", "st albans road"),
        ("appointment_time", "Monday at 2 pm", "monday 2pm"),
        ("appointment_time", "next Thursdays", "thursday"),
        ("appointment_time", "2:00 p.m.", "2pm"),
        ("appointment_time", "9:30 am", "9:30am"),
        # A particle or an adverb of time ends the sentence, not the value.
        ("occupation", "farm technician noo", "farm technician"),
        ("occupation", "charge nurse pala", "charge nurse"),
        ("likes", "bland food sha", "bland food"),
        ("payment_method", "direct debit for now", "direct debit"),
        ("lives_in", "Dublin now", "dublin"),
        ("hobby", "la la land", "la la land"),
        # A dotted clock, a comma between a window's parts and "around" are spellings.
        ("appointment_time", "Thursday 22nd at 2.15pm", "thursday 22nd 2:15pm"),
        ("appointment_time", "at 10.45", "10:45"),
        ("travel_time", "Friday 16th, evening", "friday 16th evening"),
        ("appointment_time", "Friday the 19th, around 8am", "friday 19th 8am"),
        ("travel_time", "12.05.2026", "12.05.2026"),
        # A day beside its month is a plain number; alone, "15th" is no hour.
        ("travel_time", "the 28th of August", "28 august"),
        ("travel_time", "March 14th", "march 14"),
        ("travel_time", "Monday the 3rd of July at 2pm", "monday 3 july 2pm"),
        ("travel_time", "4th to 18th April", "4 to 18 april"),
        ("appointment_time", "the 15th", "15th"),
        ("appointment_time", "Saturday the 25th", "saturday 25th"),
        # A clock said in words is written as a clock (benchmarks/devset/LABELLING.md).
        (
            "appointment_time",
            "the 8th of December at two o'clock in the afternoon",
            "8 december 2pm",
        ),
        ("appointment_time", "half past nine in the morning", "9:30am"),
        ("appointment_time", "Tuesday at quarter past ten", "tuesday 10:15"),
        ("appointment_time", "quarter to one", "12:45"),
        ("contact_time", "not before 10 in the morning", "not before 10am"),
        ("contact_time", "Thursday in the afternoon", "thursday afternoon"),
        ("travel_time", "7 at night", "7pm"),
        # After its month a number is a day: "May 3 in the afternoon" is no 3pm.
        ("appointment_time", "May 3 in the afternoon", "may 3 afternoon"),
        ("appointment_time", "May 3 at 4 in the afternoon", "may 3 4pm"),
        ("appointment_time", "8 o'clock", "8 o'clock"),  # no part of the day: no am or pm
        ("installation_time", "2026-03-09T14:00:00Z", "2026-03-09 2pm"),
        ("delivery_time", "2026-03-09", "2026-03-09"),
        ("plan", "the 500 Mbps fibre plan", "500mbps fiber"),
        ("budget", "300 quid", "300 gbp"),
        ("budget", "£12.50", "12.5 gbp"),
        # an amount's scale and words are its number
        ("budget", "£35k", "35000 gbp"),
        ("budget", "20 thousand pound", "20000 gbp"),
        ("budget", "four and a half thousand", "4500"),
        ("budget", "twelve hundred pounds", "1200 gbp"),
        ("budget", "a tenner", "10"),
        ("budget", "R5,000", "5000 zar"),
        ("budget", "Rs 45,000", "45000 inr"),
        ("budget", "A$500", "500 aud"),
        ("budget", "2 for 1", "2"),
        ("age", "34 years old", "34"),
        ("preferred_language", "zh", "chinese"),
        ("preferred_language", "English", "english"),
        ("contact_channel", "text messages", "sms"),
        ("contact_channel", "by post", "letter"),
        ("door_code", " 45 12 ", "4512"),
        ("likes", "The spicy noodles!", "spicy noodles"),
        ("pet", "our wee labrador pup Nugget", "labrador nugget"),
        ("pet", "border collie girl, Rosie", "border collie rosie"),
        ("pet", "a little rescue cat called Pwdin", "rescue cat pwdin"),
        ("pet", "ginger kitten Suya", "ginger kitten suya"),
        ("family_member", "granddaughter, Imogen", "granddaughter imogen"),
        # An address's parts are comma-separated however they were said.
        (
            "address",
            "22 Agincourt Avenue, Belfast BT7 1QA",
            "22 agincourt avenue, belfast, bt7 1qa",
        ),
        ("address", "27 cotham grove bristol bs6 6at", "27 cotham grove, bristol, bs6 6at"),
        ("address", "14 Albert Street Brunswick", "14 albert street, brunswick"),
        ("address", "12 Park Road Leeds", "12 park road, leeds"),
        ("address", "100 Queen St W Toronto", "100 queen street w, toronto"),
        (
            "address",
            "flat 4, 27 caledonian road, london n19dx",
            "flat 4, 27 caledonian road, london, n1 9dx",
        ),
        ("address", "SE15 4QY", "se15 4qy"),
        ("address", "road 7, dhanmondi", "road 7, dhanmondi"),
        ("address", "5 High Street", "5 high street"),
        # A dated value's day beside its month is a plain number; other ordinals stay.
        ("event", "knee replacement 10th of March", "knee replacement 10 march"),
        ("event", "grand reopening July 18th", "grand reopening july 18"),
        ("event", "mum's 70th on the 27th of December", "mum's 70th on 27 december"),
        ("event", "interview 3rd", "interview 3rd"),
    ],
)
def test_values_have_one_canonical_form(predicate: str, said: str, canonical: str) -> None:
    assert V.spec(predicate).normalise(said) == canonical


@pytest.mark.parametrize(
    ("predicate", "a", "b", "same"),
    [
        ("plan", "500mbps", "fiber-500", True),
        ("plan", "500mbps fiber", "500mbps", True),
        ("plan", "fiber-1000", "1gbps", True),  # speeds compare in Mbps
        ("plan", "fiber-500", "fiber-1000", False),
        ("plan", "30gb", "unlimited", False),
        ("phone_number", "5550178", "+15550178", True),
        ("phone_number", "07700900456", "+447700900456", True),
        ("phone_number", "5550178", "5550199", False),
        ("phone_number", "0178", "5550178", False),  # too short to be the same number
        ("address", "elm street 31", "31 elm street", True),
        ("installation_time", "2pm monday", "monday 2pm", True),
        ("installation_time", "monday", "monday 2pm", False),
        ("travel_time", "3rd of July", "July 3", True),
        ("travel_time", "14 march", "March 14th", True),
        ("travel_time", "3 july", "4 july", False),
        ("likes", "spicy dishes", "spicy dish", True),
        ("email", "a@b.co", "a@b.com", False),
        ("address", "12 birch court, apartment 4, lakeside", "12 birch court", True),
        ("address", "77 Cedar Road", "77 cedar road, flat 2", True),
        ("address", "12 birch court, apartment 4", "12 birch court, apartment 5", False),
        ("address", "31 elm street", "77 cedar road", False),
        ("address", "77 cedar road, flat 2", "flat 2", False),
        # Free text: content words, stemmed, in any order.
        ("plans_to", "move to exeter", "moving to Exeter", True),
        ("budget", "5000", "R5,000", True),  # one amount, its currency said once
        ("budget", "5000 gbp", "5000 usd", False),
        ("budget", "320k", "320000 gbp", True),
        ("plans_to", "doing childminding", "do childminding", True),  # a two-letter verb
        ("plans_to", "going home", "go home", True),
        ("hobby", "bring", "br", False),
        ("pet", "cat pepper", "Pepper the cat", True),
        ("event", "wedding in september", "wedding september", True),
        ("likes", "running", "run", True),
        ("likes", "spicy food", "not spicy food", False),
        ("plans_to", "move to exeter", "move to leeds", False),
        ("hobby", "chess", "chess club", False),
        # A possessive and a day's ordinal are spellings of the words they sit on.
        ("event", "grandad's 90th saturday", "grandads 90th Saturday", True),
        ("event", "moving day's 1st of march", "moving day 1 march", True),
        ("employer", "Griffin’s", "griffins", True),
        ("family_member", "daughter susan's", "daughter susan", True),
        ("event", "dad's 60th", "dad's 70th", False),
        ("event", "mum's party", "mum party 2", False),
        # A number in words is the number.
        ("event", "tenth wedding anniversary", "10th wedding anniversary", True),
        ("event", "dad's sixtieth", "dad's 60th", True),
        ("pet", "two cats", "2 cats", True),
        ("event", "dad's sixtieth", "dad's 70th", False),
    ],
)
def test_surface_forms_of_one_value_are_the_same_value(
    predicate: str, a: str, b: str, same: bool
) -> None:
    spec = V.spec(predicate)
    assert spec.same_value(spec.normalise(a), spec.normalise(b)) is same


@pytest.mark.parametrize(
    ("predicate", "value", "fits"),
    [
        ("appointment_time", "am", False),
        ("appointment_time", "6 am", True),
        ("address", "1 gbps", False),
        ("address", "english", False),
        ("address", "monday 2pm", False),
        ("address", "17 harbor road, unit 5, bayview", True),
        ("address", "77 cedar road, flat 2", True),
        ("lives_in", "anything at all", True),
        ("phone_number", "ask my assistant", False),
        ("phone_number", "+33 (0)1 42 68 53 00", True),
        ("phone_number", "123", False),
        ("email", "ana at example", False),
        ("email", "ana@example.com", True),
        ("age", "42", True),
        ("age", "130", False),
        ("appointment_time", "thursday between 9 and 11am", True),
        ("appointment_time", "end of the month", True),
        ("appointment_time", "the blue one", False),
        ("appointment_time", "12", False),
        ("delivery_time", "7", False),
        ("delivery_time", "7pm", True),
        ("delivery_time", "the 12th", True),
        ("delivery_time", "next", False),  # cut from "next Wednesday"
        ("delivery_time", "before", False),
        ("delivery_time", "next week", True),
        ("delivery_time", "early next week", True),
        ("preferred_language", "klingon", False),
        ("contact_channel", "pigeon", False),
        ("diet", "vegan", True),
        ("diet", "spaghetti", False),
        ("order_status", "shipped", True),
        ("budget", "300 gbp", True),
        ("plan", "500 Mbps", True),
        ("plan", "premium", True),
        ("plan", "480", False),
        ("plan", "Mbps", False),  # cut from "the price of 500 Mbps"
        ("plan", "gb", False),
        ("budget", "lots", False),
        ("name", "priya", True),
        ("name", "5550178", False),
        ("likes", "x" * 201, False),
        ("likes", "🙂", False),
        ("pet", "little", False),
        ("pet", "cat", True),
    ],
)
def test_values_that_do_not_fit_their_type_have_a_reason(
    predicate: str, value: str, fits: bool
) -> None:
    spec = V.spec(predicate)
    problem = spec.problem(spec.normalise(value))
    assert (problem is None) is fits
    if problem is not None:
        assert spec.name in problem


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "predicates.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_broken_vocabulary_is_an_error_at_start_up(tmp_path: Path) -> None:
    base = VOCABULARY_FILE.read_text(encoding="utf-8")
    with pytest.raises(ValidationError, match="unknown type"):
        load_vocabulary(_write(tmp_path, base.replace('type = "phone"', 'type = "fone"')))
    with pytest.raises(ValidationError, match="names both"):
        load_vocabulary(
            _write(tmp_path, base.replace('aliases = ["email_address"', 'aliases = ["mobile"'))
        )
    with pytest.raises(ValidationError, match="ttl class"):
        load_vocabulary(_write(tmp_path, base.replace('ttl = "trip"', 'ttl = "voyage"', 1)))
    with pytest.raises(ValidationError, match="extra"):
        load_vocabulary(
            _write(
                tmp_path,
                base
                + "\n[predicates.x]\ntype='text'\ncardinality='single'\nkind='fact'"
                + "\nnegation='ended'\nttl='none'\ncolour='red'\n",
            )
        )


@pytest.mark.parametrize(
    ("said", "standing"),
    [
        ("weekdays only", True),
        ("mornings", True),
        ("after 6pm", True),
        ("between 9 and 5", True),
        ("weekday evenings", True),
        ("monday 2pm", False),  # one booking
        ("tomorrow morning", False),
        ("2pm", False),  # a slot on a day left unsaid
        ("15th april", False),
        ("2026-03-09 2pm", False),
        ("next week", False),
        ("15 between 8am and 10am", False),  # the 15th of a month
    ],
)
def test_a_standing_window_recurs_and_a_booking_names_one_occasion(
    said: str, standing: bool
) -> None:
    assert default_vocabulary().spec("installation_time").standing(said) is standing
    assert default_vocabulary().spec("installation_time").kind_of(said, negated=False) is (
        MemoryKind.RULE if standing else MemoryKind.STATUS
    )
    assert not default_vocabulary().spec("birthday").standing(said)  # a date, never a window


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("tomorrow", date(2026, 3, 15)),
        ("may 13 to 15", date(2026, 5, 15)),  # a range ends on its last day
        ("3rd - 17th october", date(2026, 10, 17)),
        ("october", date(2026, 10, 31)),  # a month alone: all of it
        ("january", date(2027, 1, 31)),  # the next one
        ("the 11th", date(2026, 4, 11)),  # this month's 11th is past
        ("monday 2pm", date(2026, 3, 16)),
        ("2026-05-16 16:00", date(2026, 5, 16)),
        ("2026-03-09 9am", None),  # past
        ("weekday", None),  # a standing window names no day
        ("after 7pm", None),
        ("today", None),  # not ahead
    ],
)
def test_the_last_day_a_time_names_when_it_is_still_ahead(value: str, day: date | None) -> None:
    said = datetime(2026, 3, 14, 17, 50, tzinfo=UTC)  # a Saturday
    assert last_day_named(value, said) == day
