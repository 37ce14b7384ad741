"""Exactly-once and keyed state: replays, snapshot/restore, caps, forgetting."""

from __future__ import annotations

import json

import pytest
from review_helpers import DAY, T0, TENANT, USER, Feed, fact, record, types, vec

from pipelines.review import ReviewConfig, Reviewer, UserMemoryState
from schemas.events import ActionType, DialogueEvent, Role
from schemas.ids import op_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind
from schemas.topics import DIALOGUE_EVENTS


def _history(feed: Feed) -> None:
    feed.say("e1", fact("e1", "diet", "vegan"), fact("e1", "phone_number", "555 0100"))
    feed.say("e2", fact("e2", "ordered", "bacon burger"), ts=T0 + DAY)
    feed.say("e3", fact("e3", "home", "New York City"), encodings=[vec(1.0)], ts=T0 + DAY)
    feed.say("e4", fact("e4", "travel", "Oslo", kind=MemoryKind.STATUS), ts=T0 + DAY)


def test_an_event_already_applied_yields_nothing_and_changes_nothing() -> None:
    feed = Feed()
    _history(feed)
    assert feed.last is not None
    event, lineage, facts = feed.last
    before = feed.state.snapshot()
    assert feed.reviewer.on_dialogue(feed.state, event, lineage, facts) == []
    assert feed.state.snapshot() == before


def test_rerunning_an_event_on_the_same_state_gives_identical_ops() -> None:
    feed = Feed()
    _history(feed)
    saved = feed.state.snapshot()
    first = feed.say("e5", fact("e5", "phone_number", "555 0199", is_update=True), ts=T0 + 2 * DAY)
    assert feed.last is not None
    event, lineage, facts = feed.last

    rerun = UserMemoryState.restore(saved)  # the state as it was before the crash
    again = feed.reviewer.on_dialogue(rerun, event, lineage, facts)
    assert again == first
    assert [op.op_id for op in first] == [
        op_id("e5", i, kind) for i, kind in enumerate(types(first))
    ]


def test_snapshot_json_restore_gives_the_same_future_decisions() -> None:
    live = Feed()
    _history(live)
    restored = Feed(live.reviewer)
    restored.offsets = dict(live.offsets)
    restored.state = UserMemoryState.restore(json.loads(json.dumps(live.state.snapshot())))
    assert restored.state.snapshot() == live.state.snapshot()

    def future(feed: Feed) -> list:
        held = next(iter(feed.state.pending))
        return [
            *feed.act("a1", ActionType.CONFIRM_MEMORY, target=held, ts=T0 + 2 * DAY),
            *feed.say("e6", fact("e6", "home", "NYC"), encodings=[vec(0.9)], ts=T0 + 2 * DAY),
            *feed.say(
                "e7", fact("e7", "phone_number", "555 0199", is_update=True), ts=T0 + 3 * DAY
            ),
            *feed.say("e8", fact("e8", "diet", "vegan"), ts=T0 + 9 * DAY),
        ]

    assert future(restored) == future(live)
    assert restored.state.snapshot() == live.state.snapshot()


def test_state_caps_evict_the_least_recently_touched() -> None:
    feed = Feed(Reviewer(ReviewConfig(max_chains=2, max_pending=1)))
    for i, place in enumerate(["Lyon", "Oslo", "Rome"]):
        feed.say(f"e{i}", fact(f"e{i}", f"city_{i}", place))
    feed.say("p1", fact("p1", "car", "Volvo", confidence=0.6))
    feed.say("p2", fact("p2", "bike", "Brompton", confidence=0.6))

    assert sorted(h.object for h in feed.state.heads.values()) == ["Oslo", "Rome"]
    assert len(feed.state.tails) == 1
    assert [p.record.object for p in feed.state.pending.values()] == ["Brompton"]
    assert feed.state.counters["heads_evicted"] == 1
    assert feed.state.counters["pending_evicted"] == 1
    # The evicted chain keeps counting versions.
    ops = feed.say("e9", fact("e9", "city_0", "Paris"), ts=T0 + DAY)
    assert record(ops[1]).version == 2


def test_forget_user_erases_every_tier_and_the_state() -> None:
    feed = Feed()
    _history(feed)
    ops = feed.act("f1", ActionType.FORGET_USER, ts=T0 + 2 * DAY)
    assert types(ops) == ["erase_user"]
    assert set(ops[0].tiers) == {"working", "episodic", "semantic"}
    assert feed.state.heads == {} and feed.state.pending == {} and feed.state.tails == {}
    first_again = feed.say("e9", fact("e9", "diet", "vegan"), ts=T0 + 3 * DAY)
    assert record(first_again[1]).version == 1


def test_a_failing_event_leaves_the_state_as_it_was() -> None:
    feed = Feed()
    _history(feed)
    before = feed.state.snapshot()
    good = fact("e9", "city", "Oslo")
    foreign = fact("other-event", "city", "Rome")  # a bug upstream: not this event's fact
    with pytest.raises(ValueError, match="other-event"):
        feed.reviewer.on_dialogue(feed.state, *_turn(feed, "e9"), [good, foreign])
    assert feed.state.snapshot() == before


def _turn(feed: Feed, event_id: str) -> tuple[DialogueEvent, SourceLineage]:
    event = DialogueEvent(
        event_id=event_id,
        tenant_id=TENANT,
        user_id=USER,
        ts=T0 + 5 * DAY,
        session_id="s1",
        turn_index=99,
        role=Role.USER,
        text="I live in Oslo",
    )
    lineage = SourceLineage(topic=DIALOGUE_EVENTS, partition=0, offset=999, event_id=event_id)
    return event, lineage
