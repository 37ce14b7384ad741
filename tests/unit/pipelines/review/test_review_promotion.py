"""Promotion: episodic always; semantic after 3 independent confirmations or from CRM."""

from __future__ import annotations

from review_helpers import DAY, T0, Feed, fact, of, record

from schemas.memory import Tier
from schemas.ops import OpType


def _upsert_tiers(ops: list) -> list[Tier]:
    return of(ops, OpType.UPSERT_FACT)[0].tiers


def test_three_independent_confirmations_promote_to_semantic() -> None:
    feed = Feed()
    assert _upsert_tiers(feed.say("e1", fact("e1", "employer", "Acme"))) == [Tier.EPISODIC]
    assert _upsert_tiers(feed.say("e2", fact("e2", "employer", "Acme"), ts=T0 + DAY)) == [
        Tier.EPISODIC
    ]
    ops = feed.say("e3", fact("e3", "employer", "Acme"), ts=T0 + 2 * DAY)
    assert _upsert_tiers(ops) == [Tier.EPISODIC, Tier.SEMANTIC]
    assert record(of(ops, OpType.UPSERT_FACT)[0]).confirmations == 3


def test_the_same_event_twice_is_not_an_independent_confirmation() -> None:
    feed = Feed()
    twice = [fact("e1", "employer", "Acme"), fact("e1", "employer", "ACME")]
    ops = feed.say("e1", *twice)
    assert [op.op_type for op in ops] == [OpType.APPEND_TURN, OpType.UPSERT_FACT]
    feed.say("e2", fact("e2", "employer", "Acme"), ts=T0 + DAY)
    head = next(iter(feed.state.heads.values()))
    assert head.confirmations == 2 and head.tiers == [Tier.EPISODIC]


def test_crm_facts_are_promoted_at_once() -> None:
    ops = Feed().crm("c1", fact("c1", "email", "ana@example.com", confidence=1.0))
    assert _upsert_tiers(ops) == [Tier.EPISODIC, Tier.SEMANTIC]


def test_a_new_version_of_a_semantic_chain_stays_semantic() -> None:
    feed = Feed()
    feed.crm("c1", fact("c1", "email", "ana@example.com", confidence=1.0))
    ops = feed.say("e1", fact("e1", "email", "ana@new.example", is_update=True), ts=T0 + DAY)
    close, upsert = of(ops, OpType.CLOSE_FACT)[0], of(ops, OpType.UPSERT_FACT)[0]
    assert close.tiers == [Tier.EPISODIC, Tier.SEMANTIC]
    assert upsert.tiers == [Tier.EPISODIC, Tier.SEMANTIC]
    assert record(upsert).confirmations == 1
