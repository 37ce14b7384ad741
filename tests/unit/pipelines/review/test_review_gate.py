"""Stage 1 (fact check) and the HITL gate: hold, pend, skip, confirm, reject."""

from __future__ import annotations

import pytest
from review_helpers import DAY, T0, Feed, fact, record, types

from schemas.events import ActionType
from schemas.facts import Assertor
from schemas.memory import MemoryState, Polarity, Tier


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        (0.82, ["append_turn", "upsert_fact"]),
        (0.8199, ["append_turn", "add_pending"]),
        (0.55, ["append_turn", "add_pending"]),
        (0.5499, ["append_turn"]),
    ],
)
def test_thresholds_at_their_boundaries(confidence: float, expected: list[str]) -> None:
    feed = Feed()
    ops = feed.say("e1", fact("e1", "city", "Lyon", confidence=confidence))
    assert types(ops) == expected
    assert feed.state.counters.get("skipped", 0) == (1 if expected == ["append_turn"] else 0)


def test_pending_item_carries_reason_and_expiry() -> None:
    feed = Feed()
    ops = feed.say("e1", fact("e1", "city", "Lyon", confidence=0.6))
    pending = record(ops[1])

    assert ops[1].tiers == [Tier.WORKING]
    assert pending.state is MemoryState.PENDING
    assert pending.expires_at == T0 + 7 * DAY  # ReviewConfig.pending_ttl
    hitl = pending.review[-1]
    assert (hitl.stage, hitl.decision) == ("hitl", "pending")
    assert "0.60 < 0.82" in hitl.reason


def test_agent_assertions_wait_for_the_user_then_commit_on_confirm() -> None:
    feed = Feed()
    claim = fact("e1", "city", "Lyon", confidence=0.99, asserted_by=Assertor.AGENT)
    pending = record(feed.say("e1", claim)[1])
    assert pending.state is MemoryState.PENDING

    ops = feed.act("a1", ActionType.CONFIRM_MEMORY, target=pending.fact_id, ts=T0 + DAY)
    assert types(ops) == ["resolve_pending", "upsert_fact"]
    assert (ops[0].target_fact_id, ops[0].resolution) == (pending.fact_id, "confirmed")
    committed = record(ops[1])
    assert committed.fact_id == pending.fact_id
    assert committed.state is MemoryState.COMMITTED
    assert committed.confirmed_by == ["e1", "a1"]
    assert committed.expires_at is None  # the pending lapse time is not the fact's TTL
    assert ops[1].tiers == [Tier.EPISODIC]


def test_an_agent_cannot_make_its_own_claim_authoritative() -> None:
    claim = fact("e1", "city", "Lyon", asserted_by=Assertor.AGENT, authoritative=True)
    assert types(Feed().say("e1", claim)) == ["append_turn", "add_pending"]


@pytest.mark.parametrize(
    ("said", "echo"),
    [
        ("9 Oak Lane, Riverside", "9 oak lane, riverside"),  # read back as said
        ("9 Oak Lane, Riverside", "9 Oak Lane"),  # read back with less detail
        ("+1 555 0178", "555-0178"),  # another surface form of the same number
    ],
)
def test_an_agent_reading_back_a_current_fact_queues_nothing(said: str, echo: str) -> None:
    predicate = "phone_number" if "555" in said else "address"
    feed = Feed()
    feed.say("e1", fact("e1", predicate, said))
    claim = fact("e2", predicate, echo, asserted_by=Assertor.AGENT)
    assert types(feed.say("e2", claim, ts=T0 + DAY)) == ["append_turn"]
    assert not feed.state.pending
    assert feed.state.counters["agent_echo"] == 1


@pytest.mark.parametrize(
    ("said", "claim", "polarity"),
    [
        ("may 16", "may 16 at 4pm", "affirmed"),  # adds a detail
        ("9 Oak Lane", "12 Birch Court", "affirmed"),  # another value
        ("sms", "sms", "negated"),  # the user said SMS; the agent says "no SMS"
    ],
)
def test_an_agent_claim_that_adds_or_changes_anything_still_waits(
    said: str, claim: str, polarity: str
) -> None:
    predicate = {"sms": "contact_channel", "may 16": "travel_time"}.get(said, "address")
    feed = Feed()
    feed.say("e1", fact("e1", predicate, said))
    agent = fact("e2", predicate, claim, asserted_by=Assertor.AGENT, polarity=Polarity(polarity))
    assert types(feed.say("e2", agent, ts=T0 + DAY)) == ["append_turn", "add_pending"]
    assert "agent_echo" not in feed.state.counters


def _vegan_then_bacon(feed: Feed) -> str:
    feed.say("e1", fact("e1", "is", "vegan", subject="diet"))  # the extract stage's form
    ops = feed.say("e2", fact("e2", "ordered", "bacon burger"), ts=T0 + DAY)
    assert types(ops) == ["append_turn", "add_pending"]
    held = record(ops[1])
    check = held.review[0]
    assert (check.stage, check.decision) == ("fact_check", "hold")
    assert "vegan diet excludes animal products" in check.reason
    return held.fact_id


def test_vegan_vs_bacon_burger_is_held_then_committed_by_a_confirm() -> None:
    feed = Feed()
    held = _vegan_then_bacon(feed)
    ops = feed.act("a1", ActionType.CONFIRM_MEMORY, target=held, ts=T0 + 2 * DAY)

    assert types(ops) == ["resolve_pending", "upsert_fact"]
    assert record(ops[1]).fact_id == held
    # A category conflict keeps the standing fact: one order does not prove the diet changed.
    assert {h.object for h in feed.current(T0 + 2 * DAY)} == {"vegan", "bacon burger"}
    assert feed.state.pending == {}


def test_vegan_vs_bacon_burger_rejected_writes_no_fact() -> None:
    feed = Feed()
    held = _vegan_then_bacon(feed)
    ops = feed.act("a1", ActionType.REJECT_MEMORY, target=held, ts=T0 + 2 * DAY)

    assert types(ops) == ["resolve_pending"]
    assert (ops[0].target_fact_id, ops[0].resolution) == (held, "rejected")
    assert [h.object for h in feed.current(T0 + 2 * DAY)] == ["vegan"]
    assert feed.state.counters["rejected"] == 1
    assert feed.act("a2", ActionType.CONFIRM_MEMORY, target=held) == []  # resolved already


def test_a_purchase_contradicting_the_diet_is_held_too() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "is", "vegan", subject="diet"))
    bought = fact("p1", "ordered", "bacon burger", asserted_by=Assertor.ACTION)
    ops = feed.act("p1", ActionType.PURCHASE, target="sku-1", ts=T0 + DAY, facts=(bought,))
    assert types(ops) == ["add_pending"]
    eats_meat = fact("e2", "includes", "meat", subject="diet")
    assert types(feed.say("e2", eats_meat, ts=T0 + DAY)) == ["append_turn", "add_pending"]


def test_veggie_burger_is_not_a_conflict() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "diet", "vegan"))
    ops = feed.say("e2", fact("e2", "ordered", "veggie burger"), ts=T0 + DAY)
    assert types(ops) == ["append_turn", "upsert_fact"]


def test_repeated_statement_releases_a_held_fact() -> None:
    feed = Feed()
    held = _vegan_then_bacon(feed)
    ops = feed.say("e3", fact("e3", "ordered", "bacon burger"), ts=T0 + 2 * DAY)

    assert types(ops) == ["append_turn", "resolve_pending", "upsert_fact"]
    committed = record(ops[2])
    assert committed.fact_id == held and committed.confirmed_by == ["e2", "e3"]
    assert committed.review[-1].reason.startswith("repeated confirmation")


def test_exclusive_predicates_hold_without_evidence_and_close_with_a_correction() -> None:
    feed = Feed()
    likes = record(feed.say("e1", fact("e1", "likes", "cilantro"))[1])
    held = feed.say("e2", fact("e2", "dislikes", "cilantro"), ts=T0 + DAY)
    assert types(held) == ["append_turn", "add_pending"]

    ops = feed.say("e3", fact("e3", "dislikes", "cilantro", is_update=True), ts=T0 + 2 * DAY)
    assert types(ops) == ["append_turn", "close_fact", "upsert_fact", "resolve_pending"]
    assert record(ops[1]).fact_id == likes.fact_id
    assert record(ops[1]).valid_until == T0 + 2 * DAY
    assert ops[3].target_fact_id == record(held[1]).fact_id  # the same statement, settled
    assert [h.predicate for h in feed.current(T0 + 2 * DAY)] == ["dislikes"]


def test_crm_overrides_a_contradiction_at_once() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "likes", "newsletters"))
    ops = feed.crm("c1", fact("c1", "dislikes", "newsletters", confidence=1.0))
    assert types(ops) == ["close_fact", "upsert_fact"]


def test_a_value_of_the_wrong_type_is_held_with_its_reason_never_committed() -> None:
    feed = Feed()
    ops = feed.say("e1", fact("e1", "phone_number", "call me maybe", confidence=0.99))
    assert types(ops) == ["append_turn", "add_pending"]
    held = record(ops[1])
    (check,) = [r for r in held.review if r.stage.value == "fact_check"]
    assert check.decision == "hold" and "phone_number takes a phone value" in (check.reason or "")
    assert feed.state.counters["invalid_value"] == 1
    # Saying it again does not release it (only a human does), even from a CRM.
    again = feed.say("e2", fact("e2", "phone_number", "call me maybe", confidence=0.99))
    assert "upsert_fact" not in types(again)
    crm = feed.crm("c1", fact("c1", "address", "1 Gbps", confidence=1.0))
    assert types(crm) == ["add_pending"]
    assert not feed.current(T0 + DAY)


def test_pending_items_lapse_after_their_expiry() -> None:
    feed = Feed()
    pending = record(feed.say("e1", fact("e1", "city", "Lyon", confidence=0.6))[1])
    feed.say("e2", ts=T0 + 8 * DAY)  # time passes: a later turn of the user

    assert feed.state.pending == {}
    assert feed.state.counters["pending_lapsed"] == 1
    assert feed.act("a1", ActionType.CONFIRM_MEMORY, target=pending.fact_id, ts=T0 + 8 * DAY) == []
