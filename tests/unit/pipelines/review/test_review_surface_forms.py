"""One value said several ways is one version; a CRM's first record does not overrule the user."""

from __future__ import annotations

from review_helpers import DAY, T0, Feed, fact, of, record, types

from schemas.facts import Assertor
from schemas.memory import Polarity
from schemas.ops import OpType

# T0 is Monday 2 March 2026.


def current(feed: Feed) -> set[tuple[str, str, str]]:
    return {(r.predicate, r.object, r.polarity.value) for r in feed.current(T0 + 3 * DAY)}


def test_a_plan_restated_in_another_form_is_a_confirmation_not_a_version() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "plan", "500mbps"))
    ops = feed.say("e2", fact("e2", "plan", "500mbps fiber"), ts=T0 + DAY)
    ops += feed.crm("c1", fact("c1", "plan", "fiber-500", confidence=1.0), ts=T0 + 2 * DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    (head,) = [r for r in feed.current(T0 + 3 * DAY) if r.predicate == "plan"]
    assert head.object == "500mbps" and head.version == 1 and head.confirmations == 3


def test_a_different_plan_is_a_new_version() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "plan", "fiber-500"))
    ops = feed.crm("c1", fact("c1", "plan", "fiber-1000", is_update=True, confidence=1.0))
    assert types(ops) == ["close_fact", "upsert_fact"]
    assert current(feed) & {("plan", "fiber-1000", "affirmed")}


def test_one_phone_number_written_two_ways_is_one_fact() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "5550178"))
    ops = feed.crm("c1", fact("c1", "preferred_phone", "+1 555-0178", confidence=1.0))
    assert not of(ops, OpType.CLOSE_FACT)
    assert [r.object for r in feed.current(T0 + DAY) if r.predicate == "phone_number"] == [
        "5550178"
    ]


def test_a_weekday_and_the_crm_date_it_names_are_one_time() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "installation_time", "monday 2pm"))  # said on Monday 2 March
    ops = feed.crm(
        "c1", fact("c1", "installation_time", "2026-03-09T14:00:00Z", confidence=1.0), ts=T0 + DAY
    )
    ops += feed.say("e2", fact("e2", "installation_time", "Monday at 2 pm"), ts=T0 + 3 * DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    (head,) = [r for r in feed.current(T0 + 3 * DAY) if r.predicate == "installation_time"]
    assert head.object == "monday 2pm" and head.confirmations == 3


def test_a_less_detailed_restatement_confirms_a_more_detailed_one_refines() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "appointment_time", "15th april 8am"))
    same = feed.say("e2", fact("e2", "appointment_time", "the 15th"), ts=T0 + DAY)
    assert not of(same, OpType.CLOSE_FACT)
    finer = feed.say("e3", fact("e3", "appointment_time", "15th april 10am"), ts=T0 + 2 * DAY)
    assert len(of(finer, OpType.CLOSE_FACT)) == 1


def test_a_negated_value_in_another_form_shares_its_chain() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "contact_channel", "text messages", polarity=Polarity.NEGATED))
    ops = feed.say("e2", fact("e2", "contact_channel", "SMS", polarity=Polarity.NEGATED))
    assert not of(ops, OpType.CLOSE_FACT) and not of(ops, OpType.UPSERT_FACT)[1:]
    assert ("contact_channel", "text messages", "negated") in current(feed)


def test_a_crm_first_record_against_the_users_word_waits_for_a_human() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "preferred_language", "english"))
    ops = feed.crm("c1", fact("c1", "preferred_language", "zh", confidence=1.0), ts=T0 + DAY)
    assert types(ops) == ["add_pending"]
    reasons = [r.reason or "" for r in record(ops[0]).review]
    assert any("contradicts the user's own" in reason for reason in reasons)
    assert ("preferred_language", "english", "affirmed") in current(feed)


def test_a_crm_change_from_an_old_value_still_supersedes() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "address", "31 elm street"))
    ops = feed.crm(
        "c1", fact("c1", "address", "77 cedar road", is_update=True, confidence=1.0), ts=T0 + DAY
    )
    assert types(ops) == ["close_fact", "upsert_fact"]


def test_an_agent_claim_with_a_value_of_the_wrong_type_is_held_not_dropped() -> None:
    feed = Feed()
    ops = feed.say("e1", fact("e1", "address", "1 gbps", asserted_by=Assertor.AGENT))
    assert types(ops) == ["append_turn", "add_pending"]
    assert "a place, not a quantity" in (record(ops[1]).review[0].reason or "")


def test_values_that_parse_as_no_type_are_held_with_the_reason_never_invented() -> None:
    feed = Feed()
    for i, (predicate, value) in enumerate(
        [
            ("phone_number", "<b>call me</b>"),
            ("email", "🙂🙂🙂"),
            ("birthday", "purple elephant"),
            ("preferred_language", "klingon"),
            ("age", "x" * 300),
        ]
    ):
        ops = feed.say(f"e{i}", fact(f"e{i}", predicate, value, asserted_by=Assertor.USER))
        assert types(ops) == ["append_turn", "add_pending"], (predicate, ops)
        check = record(ops[1]).review[0]
        assert check.decision == "hold" and predicate in (check.reason or "")
    assert feed.current(T0 + DAY) == []


def test_a_relative_said_without_her_name_is_the_named_one() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "family_member", "sister ana"))
    ops = feed.say("e2", fact("e2", "family_member", "sister"), ts=T0 + DAY)
    ops += feed.say("e3", fact("e3", "pet", "beagle biscuit"), ts=T0 + DAY)
    ops += feed.say("e4", fact("e4", "pet", "biscuit"), ts=T0 + 2 * DAY)
    assert not of(ops, OpType.CLOSE_FACT)
    family = [r for r in feed.current(T0 + 3 * DAY) if r.predicate == "family_member"]
    pets = [r for r in feed.current(T0 + 3 * DAY) if r.predicate == "pet"]
    assert [(r.object, r.confirmations) for r in family] == [("sister ana", 2)]
    assert [(r.object, r.confirmations) for r in pets] == [("beagle biscuit", 2)]


def test_a_relative_said_without_a_name_stays_as_said_when_two_could_be_meant() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "family_member", "sister ana"))
    feed.say("e2", fact("e2", "family_member", "sister kayla"), ts=T0 + DAY)
    feed.say("e3", fact("e3", "family_member", "sister"), ts=T0 + 2 * DAY)
    feed.say("e4", fact("e4", "likes", "iced coffee"), ts=T0 + 2 * DAY)
    feed.say("e5", fact("e5", "likes", "coffee"), ts=T0 + 2 * DAY)
    held = {(r.predicate, r.object) for r in feed.current(T0 + 3 * DAY)}
    assert {("family_member", "sister"), ("likes", "coffee"), ("likes", "iced coffee")} <= held
