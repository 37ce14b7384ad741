"""Behaviour memory: windows count, expire, cap and ignore duplicates; items and bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from pipelines.behaviour import BehaviourConfig, BehaviourWindow, Outcome, expire, observe
from pipelines.behaviour.items import summarise
from schemas.events import ActionType, UserAction
from schemas.facts import Assertor
from schemas.memory import MemoryKind

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CONFIG = BehaviourConfig()
EARPHONES = "sku-nc-700"


def act(
    event_id: str,
    action: ActionType = ActionType.VIEW,
    minutes: float = 0,
    target: str | None = EARPHONES,
    duration_ms: int | None = None,
    **properties: Any,
) -> UserAction:
    if action is ActionType.VIEW and target == EARPHONES and "name" not in properties:
        properties["name"] = "Noise-cancelling earphones"
    return UserAction(
        event_id=event_id,
        tenant_id="shop",
        user_id="u1",
        session_id="s1",
        ts=T0 + timedelta(minutes=minutes),
        action_type=action,
        target_id=target,
        duration_ms=duration_ms,
        properties=properties,
    )


def search(event_id: str, query: str, minutes: float) -> UserAction:
    return act(event_id, ActionType.SEARCH, minutes, target=None, query=query)


def feed(window: BehaviourWindow, *actions: UserAction, config: BehaviourConfig = CONFIG) -> list:
    return [observe(window, a, config) for a in actions]


def three_views() -> list[UserAction]:
    return [
        act("v1", minutes=0, duration_ms=90_000),
        act("v2", minutes=10, duration_ms=60_000),
        act("v3", minutes=20, duration_ms=120_000),
    ]


# --- interest from repeated views ---


def test_three_views_without_purchase_make_a_status_item() -> None:
    window = BehaviourWindow()
    *before, third = feed(window, *three_views())
    assert all(o.outcome is Outcome.COUNTED and o.items == () for o in before)
    (item,) = third.items
    fact = item.fact
    assert fact.text == (
        "viewed Noise-cancelling earphones 3 times, 4.5 min in total, in the last 24 h, no purchase"
    )
    assert (fact.subject, fact.predicate) == (EARPHONES, "browsing")
    assert fact.object == "viewed 3 times, 4.5 min in total, in the last 24 h, no purchase"
    assert fact.kind is MemoryKind.STATUS
    assert fact.asserted_by is Assertor.ACTION
    assert fact.event_id == "v3" and fact.fields["VIEWS"] == "3"
    assert fact.confidence == pytest.approx(0.6)  # 0.5 + dwell >= 2 min
    assert item.ttl == timedelta(days=1.6)  # base 1 d × (1 + 0.6)
    assert item.expires_at == T0 + timedelta(minutes=20) + timedelta(days=1.6)
    assert item.ttl_reason == "base 1 d × (1 + 0.60) = 1.60 d"


def test_fewer_views_than_the_threshold_make_nothing() -> None:
    window = BehaviourWindow()
    outcomes = feed(window, *three_views()[:2])
    assert [o.items for o in outcomes] == [(), ()]


def test_views_count_per_target() -> None:
    window = BehaviourWindow()
    outcomes = feed(
        window,
        act("a1", minutes=0),
        act("b1", minutes=1, target="sku-other"),
        act("a2", minutes=2),
        act("b2", minutes=3, target="sku-other"),
    )
    assert all(o.items == () for o in outcomes)
    assert summarise(window.events, EARPHONES).views == 2


def test_more_views_clicks_and_the_cart_raise_confidence_and_ttl() -> None:
    window = BehaviourWindow()
    feed(window, *three_views(), act("v4", minutes=30), act("c1", ActionType.CLICK, 31))
    (item,) = observe(window, act("k1", ActionType.ADD_TO_CART, 32), CONFIG).items
    # 0.5 + one extra view 0.05 + dwell 0.1 + click 0.05 + cart 0.15
    assert item.fact.confidence == pytest.approx(0.85)
    assert item.ttl == timedelta(days=1.85)
    assert "clicked once" in item.fact.text and "in the cart" in item.fact.text


def test_a_scroll_adds_dwell_but_emits_nothing() -> None:
    window = BehaviourWindow()
    feed(window, *three_views())
    scroll = observe(window, act("s1", ActionType.SCROLL, 21, duration_ms=30_000), CONFIG)
    assert scroll.items == ()
    (item,) = observe(window, act("v4", minutes=22), CONFIG).items
    assert "5.0 min in total" in item.fact.text


def test_purchase_closes_the_interest() -> None:
    window = BehaviourWindow()
    feed(window, *three_views())
    (item,) = observe(window, act("p1", ActionType.PURCHASE, 25), CONFIG).items
    assert item.fact.predicate == "browsing"
    assert item.fact.object == "purchased after 3 views in the last 24 h"
    assert item.fact.confidence == pytest.approx(0.9)
    assert observe(window, act("v4", minutes=30), CONFIG).items == ()  # bought: no interest


def test_purchase_without_repeated_views_is_left_to_the_purchase_fact() -> None:
    assert observe(BehaviourWindow(), act("p1", ActionType.PURCHASE), CONFIG).items == ()


# --- the sliding window ---


def test_views_expire_after_the_window() -> None:
    window = BehaviourWindow()
    feed(window, act("v1", minutes=0), act("v2", minutes=10))
    third = observe(window, act("v3", minutes=25 * 60), CONFIG)  # 25 h later
    assert third.items == ()
    assert [e.event_id for e in window.events] == ["v3"]
    assert window.counters["expired"] == 2


def test_expire_on_a_timer() -> None:
    window = BehaviourWindow()
    feed(window, *three_views())
    assert expire(window, T0 + timedelta(hours=24, minutes=5), CONFIG) == 1
    assert expire(window, T0 + timedelta(hours=48), CONFIG) == 2
    assert window.events == []


def test_out_of_order_event_inside_the_window_counts() -> None:
    window = BehaviourWindow()
    v1, v2, v3 = three_views()
    outcomes = feed(window, v3, v1, v2)
    assert outcomes[-1].outcome is Outcome.COUNTED and len(outcomes[-1].items) == 1
    assert [e.event_id for e in window.events] == ["v1", "v2", "v3"]


def test_event_older_than_the_window_is_late() -> None:
    window = BehaviourWindow()
    observe(window, act("v9", minutes=48 * 60), CONFIG)
    late = observe(window, act("v1", minutes=0), CONFIG)
    assert late.outcome is Outcome.LATE and late.reasons
    assert len(window.events) == 1


# --- idempotency and state ---


def test_an_event_counted_once_counts_nothing_twice() -> None:
    window = BehaviourWindow()
    feed(window, *three_views())
    before = window.to_dict()
    again = observe(window, three_views()[2], CONFIG)
    assert again.outcome is Outcome.DUPLICATE and again.items == ()
    assert summarise(window.events, EARPHONES).views == 3
    assert window.to_dict()["events"] == before["events"]
    assert window.counters["duplicate"] == 1


def test_replay_after_a_restart_counts_nothing_twice() -> None:
    stream = [*three_views(), search("q1", "wireless earphones", 21)]
    window = BehaviourWindow()
    feed(window, *stream)
    restored = BehaviourWindow.from_dict(json.loads(json.dumps(window.to_dict())))
    assert restored.to_dict() == window.to_dict()
    replayed = feed(restored, *stream)  # the engine re-reads from the last commit
    assert {o.outcome for o in replayed} == {Outcome.DUPLICATE}
    assert restored.to_dict()["events"] == window.to_dict()["events"]


def test_restored_window_continues_alike() -> None:
    window = BehaviourWindow()
    feed(window, *three_views()[:2])
    restored = BehaviourWindow.from_dict(json.loads(json.dumps(window.to_dict())))
    nxt = three_views()[2]
    assert observe(restored, nxt, CONFIG) == observe(window, nxt, CONFIG)


def test_a_flood_of_views_stays_bounded_and_the_cap_is_counted() -> None:
    config = BehaviourConfig(max_events=10, max_seen_ids=40)
    window = BehaviourWindow()
    for i in range(100):
        observe(window, act(f"v{i}", minutes=i / 10), config)
    assert len(window.events) == 10
    assert len(window.seen_ids) == 40
    assert window.counters["evicted"] == 90
    # An evicted event's redelivery is still known while its id is remembered.
    assert observe(window, act("v80", minutes=8.0), config).outcome is Outcome.DUPLICATE


def test_default_caps_keep_the_state_small() -> None:
    window = BehaviourWindow()
    for i in range(3000):
        observe(window, act(f"view-{i:06d}", minutes=i / 100, target=f"sku-{i % 40}"), CONFIG)
    assert len(window.events) == CONFIG.max_events
    assert len(window.seen_ids) == CONFIG.max_seen_ids
    assert len(json.dumps(window.to_dict())) < 200_000


def test_forget_user_erases_the_window() -> None:
    window = BehaviourWindow()
    feed(window, *three_views())
    erased = observe(window, act("f1", ActionType.FORGET_USER, 30, target=None), CONFIG)
    assert erased.outcome is Outcome.ERASED
    assert window.events == [] and window.seen_ids == []


# --- bad input ---


def test_absurd_dwell_is_clamped_with_a_reason() -> None:
    window = BehaviourWindow()
    three_days = 3 * 86_400_000
    outcome = observe(window, act("v1", duration_ms=three_days), CONFIG)
    assert outcome.outcome is Outcome.COUNTED
    assert outcome.reasons == ("dwell 3.0 d clamped to 30.0 min",)
    assert window.events[0].dwell_ms == 30 * 60_000
    assert window.counters["clamped"] == 1


def test_negative_duration_is_clamped_with_a_reason() -> None:
    raw = act("v1").model_dump()
    bad = UserAction.model_construct(**{**raw, "duration_ms": -500})
    outcome = observe(BehaviourWindow(), bad, CONFIG)
    assert outcome.reasons == ("negative duration -500 ms counted as 0",)


def test_unknown_action_type_is_rejected_for_the_dead_letter_topic() -> None:
    raw = act("v1").model_dump()
    bad = UserAction.model_construct(**{**raw, "action_type": "hover"})
    outcome = observe(BehaviourWindow(), bad, CONFIG)
    assert outcome.outcome is Outcome.REJECTED and outcome.dead_letter
    assert outcome.reasons == ("unknown action type 'hover'",)


def test_the_schema_already_refuses_unknown_types_and_negative_durations() -> None:
    raw = act("v1").model_dump(mode="json")
    with pytest.raises(ValidationError):
        UserAction.model_validate({**raw, "action_type": "hover"})
    with pytest.raises(ValidationError):
        UserAction.model_validate({**raw, "duration_ms": -1})


def test_a_view_without_target_is_rejected() -> None:
    outcome = observe(BehaviourWindow(), act("v1", target=None), CONFIG)
    assert outcome.dead_letter and outcome.reasons == ("view without a target_id",)


def test_a_search_without_query_is_rejected() -> None:
    outcome = observe(BehaviourWindow(), act("q1", ActionType.SEARCH, target=None), CONFIG)
    assert outcome.dead_letter


@pytest.mark.parametrize(
    "action", [ActionType.RATE, ActionType.CONFIRM_MEMORY, ActionType.REJECT_MEMORY]
)
def test_memory_decisions_and_ratings_are_not_counted(action: ActionType) -> None:
    window = BehaviourWindow()
    outcome = observe(window, act("x1", action), CONFIG)
    assert outcome.outcome is Outcome.NOT_COUNTED and not outcome.dead_letter
    assert window.events == []


def test_a_long_query_is_cut_with_a_reason() -> None:
    outcome = observe(BehaviourWindow(), search("q1", "earphones " * 50, 0), CONFIG)
    assert outcome.reasons == ("query of 499 characters cut to 200",)


# --- search drift ---


def test_refining_searches_make_a_drift_item() -> None:
    window = BehaviourWindow()
    first = observe(window, search("q1", "wireless earphones", 0), CONFIG)
    assert first.items == ()
    (item,) = observe(window, search("q2", "noise-cancelling earphone reviews", 5), CONFIG).items
    fact = item.fact
    assert (
        fact.text == "searches drifted: 'wireless earphones' -> 'noise-cancelling earphone reviews'"
    )
    assert (fact.subject, fact.predicate, fact.kind) == ("user", "search_drift", MemoryKind.STATUS)
    assert fact.fields["SHARED"] == "earphone"
    assert fact.fields["ADDED"] == "cancelling noise review"
    assert fact.fields["DROPPED"] == "wireless"
    assert fact.confidence == pytest.approx(0.6)
    assert item.ttl == timedelta(days=1.6)


def test_a_longer_run_is_more_confident() -> None:
    window = BehaviourWindow()
    feed(
        window,
        search("q1", "wireless earphones", 0),
        search("q2", "noise-cancelling earphone reviews", 5),
    )
    (item,) = observe(window, search("q3", "noise-cancelling earphones under 200", 9), CONFIG).items
    assert item.fact.fields["SEARCHES"] == "3"
    assert item.fact.confidence == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("first", "gap_minutes", "second"),
    [
        ("wireless earphones", 5, "garden furniture"),  # nothing shared: a new errand
        ("wireless earphones", 45, "earphone reviews"),  # too far apart
        ("wireless earphones", 5, "Wireless  Earphones"),  # the same search again
    ],
)
def test_no_drift(first: str, gap_minutes: float, second: str) -> None:
    window = BehaviourWindow()
    feed(window, search("q1", first, 0))
    assert observe(window, search("q2", second, gap_minutes), CONFIG).items == ()


def test_a_search_query_can_come_from_the_target_path() -> None:
    window = BehaviourWindow()
    feed(window, act("q1", ActionType.SEARCH, 0, target="search/wireless-earphones"))
    (item,) = observe(
        window, act("q2", ActionType.SEARCH, 3, target="search/earphone-cases"), CONFIG
    ).items
    assert item.fact.object == "wireless earphones -> earphone cases"


def test_config_refuses_an_id_memory_smaller_than_the_window() -> None:
    with pytest.raises(ValidationError):
        BehaviourConfig(max_events=100, max_seen_ids=50)


def test_settings_carry_the_behaviour_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstream.settings import Settings

    assert Settings(_env_file=None).behaviour == BehaviourConfig()
    monkeypatch.setenv("MEMSTREAM_BEHAVIOUR__MIN_VIEWS", "4")
    monkeypatch.setenv("MEMSTREAM_BEHAVIOUR__WINDOW", "PT12H")
    configured = Settings(_env_file=None).behaviour
    assert (configured.min_views, configured.window) == (4, timedelta(hours=12))
