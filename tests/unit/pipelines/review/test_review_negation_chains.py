"""Version chains that keep negations: a negated constraint is its own chain."""

from __future__ import annotations

from review_helpers import DAY, T0, Feed, fact, of, record

from schemas.memory import Polarity
from schemas.ops import OpType


def current(feed: Feed) -> set[tuple[str, str, str]]:
    return {(r.predicate, r.object, r.polarity.value) for r in feed.current(T0 + 30 * DAY)}


def test_a_negation_survives_an_unrelated_affirmed_value() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "contact_channel", "sms", polarity=Polarity.NEGATED))
    ops = feed.say("e2", fact("e2", "contact_channel", "email"), ts=T0 + DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    assert current(feed) == {
        ("contact_channel", "sms", "negated"),
        ("contact_channel", "email", "affirmed"),
    }


def test_an_explicit_reversal_ends_the_negation() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "contact_channel", "sms", polarity=Polarity.NEGATED))
    ops = feed.say("e2", fact("e2", "contact_channel", "SMS", is_update=True), ts=T0 + DAY)
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).polarity is Polarity.NEGATED and record(closed).object == "sms"
    assert current(feed) == {("contact_channel", "SMS", "affirmed")}


def test_a_negation_ends_the_same_affirmed_value_but_not_another() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "contact_time", "weekday"))
    ops = feed.say(
        "e2", fact("e2", "contact_time", "before 9", polarity=Polarity.NEGATED), ts=T0 + DAY
    )
    assert not of(ops, OpType.CLOSE_FACT)  # "not before 9" says nothing against weekdays
    ops = feed.say(
        "e3", fact("e3", "contact_time", "weekday", polarity=Polarity.NEGATED), ts=T0 + 2 * DAY
    )
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).object == "weekday" and record(closed).polarity is Polarity.AFFIRMED
    assert current(feed) == {
        ("contact_time", "before 9", "negated"),
        ("contact_time", "weekday", "negated"),
    }


def test_negations_of_two_values_are_two_chains() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "delivery_time", "monday", polarity=Polarity.NEGATED))
    feed.say("e2", fact("e2", "delivery_time", "wednesday", polarity=Polarity.NEGATED))
    chains = {r.chain_id for r in feed.current(T0 + DAY)}
    assert len(chains) == 2


def test_a_standing_window_and_a_booking_are_two_chains() -> None:
    # "Weekdays only" constrains every installation; "Monday at 2pm" is one of them.
    feed = Feed()
    feed.say("e1", fact("e1", "installation_time", "weekdays only"))
    ops = feed.say("e2", fact("e2", "installation_time", "monday 2pm"), ts=T0 + DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    ops = feed.say(
        "e3", fact("e3", "installation_time", "thursday 9am", is_update=True), ts=T0 + 2 * DAY
    )
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).object == "monday 2pm"
    # A new standing window updates the old one, and leaves the booking alone.
    ops = feed.say(
        "e4", fact("e4", "installation_time", "weekends", is_update=True), ts=T0 + 3 * DAY
    )
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).object == "weekdays only"
    assert {o for p, o, _ in current(feed)} == {"thursday 9am", "weekends"}


def test_a_time_that_narrows_a_negated_one_reverses_it() -> None:
    # "Tuesday instead of Monday" ... "let's keep Monday at 2pm after all".
    feed = Feed()
    feed.say("e1", fact("e1", "appointment_time", "monday", polarity=Polarity.NEGATED))
    ops = feed.say("e2", fact("e2", "appointment_time", "monday 2pm", is_update=True), ts=T0 + DAY)
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).object == "monday" and record(closed).polarity is Polarity.NEGATED
    # And "not Monday" ends the booking it contains; "not Friday" would not.
    feed.say("e3", fact("e3", "appointment_time", "friday", polarity=Polarity.NEGATED))
    assert ("appointment_time", "monday 2pm", "affirmed") in current(feed)
    ops = feed.say(
        "e4", fact("e4", "appointment_time", "monday", polarity=Polarity.NEGATED), ts=T0 + 2 * DAY
    )
    (closed,) = of(ops, OpType.CLOSE_FACT)
    assert record(closed).object == "monday 2pm"
