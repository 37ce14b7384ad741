"""Stage 2, timeliness: ttl = base_ttl × (1 + confidence), expiry with an injected clock."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from review_helpers import DAY, T0, Feed, fact, of, record, types

from pipelines.review import ReviewConfig, Reviewer
from schemas.memory import MemoryKind, Polarity
from schemas.ops import OpType


@pytest.mark.parametrize(
    ("subject", "predicate", "obj", "confidence", "days"),
    [
        ("travel", "to", "Berlin", 0.9, 3.8),  # docs/architecture.md: "I travel tomorrow"
        ("user", "travel", "Berlin", 0.9, 3.8),  # the same attribute, the other form
        ("order_status", "is", "shipped", 0.99, 13.93),  # docs/architecture.md: "order shipped"
        ("mood", "is", "frustrated", 0.85, 1.85),  # the status-kind default, 1 day
    ],
)
def test_ttl_is_base_times_one_plus_confidence(
    subject: str, predicate: str, obj: str, confidence: float, days: float
) -> None:
    feed = Feed()
    status_fact = fact(
        "e1", predicate, obj, subject=subject, kind=MemoryKind.STATUS, confidence=confidence
    )
    ops = feed.say("e1", status_fact)
    upsert = record(of(ops, OpType.UPSERT_FACT)[0])
    assert upsert.expires_at == T0 + timedelta(days=days)
    status = of(ops, OpType.SET_STATUS)[0].status
    assert status is not None
    name = subject if subject != "user" else predicate
    assert (status.name, status.value, status.ttl_s) == (name, obj, round(days * 86_400))


def test_facts_without_a_base_ttl_never_expire() -> None:
    upsert = record(Feed().say("e1", fact("e1", "phone_number", "555 0100"))[1])
    assert upsert.expires_at is None
    assert upsert.review[1].decision == "no_ttl"


def test_a_trip_named_for_a_day_beyond_its_ttl_stays_current_until_that_day_is_over() -> None:
    # Said on Monday 2 March: the trip's TTL (3.8 d) would end it long before May.
    when = fact("e1", "travel_time", "may 13 to 15", kind=MemoryKind.STATUS)
    where = fact("e1", "travel", "Lisbon", kind=MemoryKind.STATUS)
    fixed = fact("e1", "phone_number", "555 0100")
    ops = of(Feed().say("e1", when, where, fixed), OpType.UPSERT_FACT)
    expires = {record(op).predicate: record(op).expires_at for op in ops}
    after_the_trip = datetime(2026, 5, 16, tzinfo=T0.tzinfo)
    # The place said with it, of the same TTL class, stays as long; no TTL stays none.
    assert expires == {
        "travel_time": after_the_trip,
        "travel": after_the_trip,
        "phone_number": None,
    }
    assert "the day it names" in record(ops[0]).review[1].reason


def test_a_day_named_within_the_ttl_or_ruled_out_leaves_the_ttl_alone() -> None:
    # "I travel tomorrow" keeps docs/architecture.md's 3.8 d; "not on Friday" names no trip.
    tomorrow = fact("e1", "travel_time", "tomorrow", kind=MemoryKind.STATUS)
    [op] = of(Feed().say("e1", tomorrow), OpType.UPSERT_FACT)
    assert record(op).expires_at == T0 + timedelta(days=3.8)
    friday = fact(
        "e2", "travel_time", "friday 20 march", kind=MemoryKind.STATUS, polarity=Polarity.NEGATED
    )
    [op] = of(Feed().say("e2", friday), OpType.UPSERT_FACT)
    assert record(op).expires_at == T0 + timedelta(days=3.8)


def test_a_clock_time_that_refines_a_dated_value_keeps_its_day() -> None:
    # "October 3 to 17", then the 11:20 departure: the time replaces the trip's
    # value but not the days it is about, so it does not lapse after 3.8 days.
    feed = Feed()
    trip = fact("e1", "travel_time", "october 3 to 17", kind=MemoryKind.STATUS)
    feed.say("e1", trip)
    departure = fact("e2", "travel_time", "11:20am", kind=MemoryKind.STATUS)
    [op] = of(feed.say("e2", departure, ts=T0 + DAY), OpType.UPSERT_FACT)
    assert record(op).expires_at == datetime(2026, 10, 18, tzinfo=T0.tzinfo)
    assert "the day it names" in record(op).review[1].reason


def test_a_clock_time_alone_or_after_an_undated_value_keeps_the_ttl() -> None:
    alone = fact("e1", "travel_time", "11:20am", kind=MemoryKind.STATUS)
    [op] = of(Feed().say("e1", alone), OpType.UPSERT_FACT)
    assert record(op).expires_at == T0 + timedelta(days=3.8)
    feed = Feed()
    feed.say("e1", fact("e1", "appointment_time", "afternoon", kind=MemoryKind.STATUS))
    later = fact("e2", "appointment_time", "2pm", kind=MemoryKind.STATUS)
    [op] = of(feed.say("e2", later), OpType.UPSERT_FACT)
    assert record(op).expires_at == T0 + timedelta(days=30 * 1.9)
    # A new day is no refinement: it names its own.
    feed = Feed()
    feed.say("e1", fact("e1", "travel_time", "october 3 to 17", kind=MemoryKind.STATUS))
    moved = fact("e2", "travel_time", "tomorrow", kind=MemoryKind.STATUS)
    [op] = of(feed.say("e2", moved), OpType.UPSERT_FACT)
    assert record(op).expires_at == T0 + timedelta(days=3.8)


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_expired_fact_stops_being_current_and_the_chain_goes_on() -> None:
    clock = _Clock(T0)
    feed = Feed(Reviewer(clock=clock))
    travel = fact("e1", "travel", "Berlin", kind=MemoryKind.STATUS, confidence=0.9)
    first = record(of(feed.say("e1", travel), OpType.UPSERT_FACT)[0])
    assert first.expires_at == T0 + timedelta(days=3.8)

    clock.now = T0 + 3 * DAY
    feed.say("e2")
    assert [h.fact_id for h in feed.current(clock.now)] == [first.fact_id]

    clock.now = T0 + 4 * DAY
    feed.say("e3")  # time passes beyond 3.8 days: the head drops out of the state
    assert feed.current(clock.now) == []
    assert first.chain_id not in feed.state.heads
    assert feed.state.counters["expired"] == 1
    # History stays: the stored version keeps its validity; the next one supersedes it.
    again = fact("e4", "travel", "Rome", kind=MemoryKind.STATUS, confidence=0.9)
    ops = feed.say("e4", again, ts=T0 + 5 * DAY)
    assert types(ops) == ["append_turn", "upsert_fact", "set_status"]  # nothing to close
    assert (record(ops[1]).version, record(ops[1]).supersedes) == (2, first.fact_id)


def test_restating_a_status_extends_its_life() -> None:
    feed = Feed()
    travel = fact("e1", "travel", "Berlin", kind=MemoryKind.STATUS, confidence=0.9)
    feed.say("e1", travel)
    ops = feed.say("e2", travel, ts=T0 + DAY)
    assert types(ops) == ["append_turn", "upsert_fact", "set_status"]
    assert record(ops[1]).expires_at == T0 + DAY + timedelta(days=3.8)


def test_config_rejects_inconsistent_thresholds() -> None:
    with pytest.raises(ValueError, match="pending_threshold"):
        ReviewConfig(commit_threshold=0.5, pending_threshold=0.6)
    with pytest.raises(ValueError, match="status"):
        ReviewConfig(kind_ttl={})
    assert ReviewConfig(attribute_ttl={"Travel": DAY}).base_ttl("TRAVEL", MemoryKind.FACT) == DAY
