"""A statement that arrives after a newer one never replaces it (Kafka orders only a partition).

Values are in the extractor's normal form (pipelines/extract/typed.py).

The sample's case: the user says one number, then a new one; the CRM's first
record of the old number (made in between) arrives last, on its own topic.
"""

from __future__ import annotations

from datetime import timedelta

from review_helpers import DAY, T0, Feed, fact, of

from pipelines.review.state import PendingCause, UserMemoryState
from schemas.ops import OpType

HOUR = timedelta(hours=1)


def phones(feed: Feed, days: int = 5) -> list[str]:
    at = T0 + days * DAY
    return [r.object for r in feed.current(at) if r.predicate == "phone_number"]


def test_a_late_record_of_what_held_at_its_time_is_a_repeat() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "5550142"))
    feed.say("e2", fact("e2", "phone_number", "5550199", is_update=True), ts=T0 + 2 * DAY)
    # The CRM recorded the old number an hour after she said it; it arrives now.
    late = feed.crm("c1", fact("c1", "phone_number", "5550142", confidence=1.0), ts=T0 + HOUR)
    assert not of(late, OpType.UPSERT_FACT)
    assert phones(feed) == ["5550199"]
    assert feed.state.counters["late_repeat"] == 1
    # The CRM's own update to the new number, later still, confirms the head.
    ops = feed.crm(
        "c2", fact("c2", "phone_number", "5550199", confidence=1.0), ts=T0 + 2 * DAY + HOUR
    )
    assert not of(ops, OpType.CLOSE_FACT)
    assert phones(feed) == ["5550199"]


def test_a_late_value_that_never_held_waits_for_a_human_and_the_newer_one_stays() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "5550142"))
    feed.say("e2", fact("e2", "phone_number", "5550199", is_update=True), ts=T0 + 2 * DAY)
    ops = feed.crm("c1", fact("c1", "phone_number", "5550300", confidence=1.0), ts=T0 + DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    assert phones(feed) == ["5550199"]
    (item,) = feed.state.pending.values()
    assert item.cause is PendingCause.LATE and item.record.object == "5550300"
    assert "arrived after it" in item.record.review[0].reason


def test_a_late_restatement_of_the_current_value_confirms_it() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "5550142"), ts=T0 + DAY)
    ops = feed.crm("c1", fact("c1", "phone_number", "+1 555 0142", confidence=1.0), ts=T0)
    assert not of(ops, OpType.CLOSE_FACT)
    (head,) = [r for r in feed.current(T0 + 2 * DAY) if r.predicate == "phone_number"]
    assert head.confirmations == 2


def test_the_closed_values_survive_a_snapshot_and_stay_bounded() -> None:
    feed = Feed()
    for day in range(8):
        number = f"55501{day:02d}"
        feed.say(
            f"e{day}", fact(f"e{day}", "phone_number", number, is_update=True), ts=T0 + day * DAY
        )
    restored = UserMemoryState.restore(feed.state.snapshot())
    (past,) = restored.past.values()
    assert [p.object for p in past] == ["5550103", "5550104", "5550105", "5550106"]
    assert past[-1].valid_until == T0 + 7 * DAY
    feed.state = restored
    late = feed.crm(
        "c1", fact("c1", "phone_number", "5550106", confidence=1.0), ts=T0 + 6 * DAY + HOUR
    )
    assert not of(late, OpType.UPSERT_FACT)
    assert phones(feed, days=8) == ["5550107"]


def test_a_snapshot_from_before_closed_values_were_kept_restores() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "5550142"))
    snapshot = feed.state.snapshot()
    del snapshot["past"]
    assert UserMemoryState.restore(snapshot).past == {}


def test_the_users_word_arriving_late_still_outranks_a_crms_first_record() -> None:
    # "Yes, English is fine" at 11:35; the CRM's first record (zh, 11:45) came first.
    feed = Feed()
    feed.crm("c1", fact("c1", "preferred_language", "chinese", confidence=1.0), ts=T0 + HOUR)
    feed.say("e1", fact("e1", "preferred_language", "english"), ts=T0)
    now = [r.object for r in feed.current(T0 + DAY) if r.predicate == "preferred_language"]
    assert now == ["english"] and not feed.state.pending
