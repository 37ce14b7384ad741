"""A day and a clock said apart in one turn are one moment, over plain facts."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.extract.moments import one_moment
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity


def fact(predicate: str, value: str, **more: object) -> ExtractedFact:
    return ExtractedFact(
        tenant_id="t",
        user_id="u",
        event_id="e1",
        event_ts=datetime(2026, 3, 1, tzinfo=UTC),
        subject="user",
        predicate=predicate,
        object=value,
        confidence=0.88,
        fields={"TIME": value},
        **more,  # type: ignore[arg-type]
    )


def values(facts: list[ExtractedFact]) -> list[tuple[str, str]]:
    return [(f.predicate, f.object) for f in facts]


def test_a_lone_day_and_a_lone_clock_of_one_booking_are_one_moment() -> None:
    # "Booked from Monday 13 April, crew on site at 8am."
    facts = [fact("appointment_time", "monday 13 april"), fact("appointment_time", "8am")]
    joined = one_moment(facts)
    assert values(joined) == [("appointment_time", "monday 13 april 8am")]
    assert joined[0].fields["TIME"] == "monday 13 april 8am"
    assert joined[0].text == "appointment_time monday 13 april 8am"


def test_two_days_or_two_clocks_are_a_choice_and_stay_apart() -> None:
    days = [fact("appointment_time", "thursday 21st"), fact("appointment_time", "saturday 23rd")]
    clocks = [fact("appointment_time", "10am"), fact("appointment_time", "2pm")]
    assert one_moment(days) == days
    assert one_moment(clocks) == clocks


def test_times_said_differently_or_of_other_predicates_stay_apart() -> None:
    refused = [
        fact("appointment_time", "friday"),
        fact("appointment_time", "9am", polarity=Polarity.NEGATED),
    ]
    offered = [
        fact("delivery_time", "friday"),
        fact("delivery_time", "9am", asserted_by=Assertor.AGENT),
    ]
    siblings = [fact("delivery_time", "friday"), fact("appointment_time", "9am")]
    for facts in (refused, offered, siblings):
        assert one_moment(facts) == facts


def test_a_third_time_of_the_predicate_leaves_the_turn_as_said() -> None:
    # Which of two days the clock belongs to is not known.
    facts = [
        fact("appointment_time", "monday"),
        fact("appointment_time", "tuesday"),
        fact("appointment_time", "8am"),
    ]
    assert one_moment(facts) == facts


def test_a_multi_valued_or_untimed_predicate_is_never_joined() -> None:
    facts = [fact("likes", "monday"), fact("likes", "8am")]
    assert one_moment(facts) == facts
