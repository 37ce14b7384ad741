"""MemoryService over memstream.testing's in-memory stores: reads, actions, tenancy, erasures."""

from __future__ import annotations

from datetime import timedelta

import pytest
from memory_ops import T0, add_pending, close, erase, record, status, upsert

from jobs.serve.memory_service import MemoryService, MemoryStores, UnknownPendingError
from memstream.testing import HashingEmbedder, InMemoryStores, RecordingPublisher
from schemas.events import ActionType
from schemas.memory import MemoryKind, MemoryState, Tier
from schemas.ops import MemoryOperation

NOW = T0 + timedelta(days=1)


@pytest.fixture
def tiers() -> InMemoryStores:
    return InMemoryStores.create(clock=lambda: NOW)


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


@pytest.fixture
def service(tiers: InMemoryStores, publisher: RecordingPublisher) -> MemoryService:
    stores = MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=publisher,
    )
    return MemoryService(stores=stores, clock=lambda: NOW)


def apply(tiers: InMemoryStores, *ops: MemoryOperation) -> None:
    for store in tiers:
        store.write(ops)
        store.flush()


def test_recall_ranks_the_matching_fact_first_and_flags_pending_items(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    day = record("f-day", "monday")
    drink = record("f-drink", "green tea", predicate="likes_drink")
    held = record("f-held", "tuesday", predicate="prefers_time")
    apply(tiers, upsert(day), upsert(drink), add_pending(held))

    hits = service.recall("acme", "u1", "user prefers day monday", k=5)

    assert hits[0].fact_id == "f-day"
    by_id = {h.fact_id: h for h in hits}
    assert {"f-day", "f-drink", "f-held"} <= by_id.keys()
    assert by_id["f-held"].state is MemoryState.PENDING
    assert by_id["f-day"].state is MemoryState.COMMITTED


def test_recall_reads_only_the_tiers_asked_for_and_only_this_tenant(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    apply(
        tiers,
        upsert(record("f-epi", "monday"), tiers=[Tier.EPISODIC]),
        upsert(record("f-sem", "friday", predicate="likes_day"), tiers=[Tier.SEMANTIC]),
        upsert(record("f-other", "monday", tenant="globex")),
    )
    semantic = service.recall("acme", "u1", "monday", tiers=[Tier.SEMANTIC])
    assert [(h.fact_id, h.tier) for h in semantic] == [("f-sem", Tier.SEMANTIC)]
    everything = {h.fact_id for h in service.recall("acme", "u1", "monday")}
    assert everything == {"f-epi", "f-sem"}  # never globex's fact
    assert {h.fact_id for h in service.recall("globex", "u1", "monday")} == {"f-other"}


def test_recall_as_of_the_past_finds_the_version_then_current(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    old = record("f-v1", "monday")
    new = record("f-v2", "friday", version=2, valid_from=T0 + timedelta(hours=2), supersedes="f-v1")
    apply(tiers, upsert(old), close(old, T0 + timedelta(hours=2)), upsert(new))

    assert [h.fact_id for h in service.recall("acme", "u1", "day", k=1)] == ["f-v2"]
    past = service.recall("acme", "u1", "day", k=1, as_of=T0 + timedelta(hours=1))
    assert [h.fact_id for h in past] == ["f-v1"]


def test_snapshot_splits_rules_from_facts_with_statuses_and_pending(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    rule = record("f-rule", "after 5pm", predicate="never_call", kind=MemoryKind.RULE)
    fact = record("f-fact", "monday")
    gone = record("f-gone", "winter", predicate="likes_season")
    apply(
        tiers,
        upsert(rule),
        upsert(fact),
        upsert(gone),
        close(gone, T0 + timedelta(hours=1)),
        add_pending(record("f-held", "tuesday", predicate="prefers_time"), at=NOW),
        status("mood", "annoyed", at=NOW),
    )
    snap = service.snapshot("acme", "u1")
    assert [h.fact_id for h in snap.rules] == ["f-rule"]
    assert [h.fact_id for h in snap.facts] == ["f-fact"]  # the closed version is not current
    assert snap.status == {"mood": "annoyed"}
    assert [p.pending_id for p in snap.pending] == ["f-held"]
    assert snap.pending[0].expires_at is not None and snap.pending[0].expires_at > NOW


def test_history_merges_both_tiers_oldest_first(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    v1 = record("f-v1", "monday")
    v2 = record("f-v2", "friday", version=2, valid_from=T0 + timedelta(hours=2))
    apply(tiers, upsert(v1), close(v1, T0 + timedelta(hours=2)), upsert(v2, tiers=[Tier.EPISODIC]))
    versions = service.history("acme", "u1", "user", "prefers_day")
    assert [(h.fact_id, h.object) for h in versions] == [("f-v1", "monday"), ("f-v2", "friday")]


def test_confirm_publishes_one_idempotent_action_for_a_waiting_item(
    tiers: InMemoryStores, service: MemoryService, publisher: RecordingPublisher
) -> None:
    apply(tiers, add_pending(record("f-held", "tuesday"), at=NOW))
    first = service.confirm("acme", "u1", "f-held")
    again = service.confirm("acme", "u1", "f-held")
    assert first.event_id == again.event_id == "confirm_memory-f-held"
    assert (first.topic, first.partition, first.offset) == ("user.actions", 0, 0)
    action = publisher.actions[0]
    assert action.action_type is ActionType.CONFIRM_MEMORY
    assert (action.tenant_id, action.user_id, action.target_id) == ("acme", "u1", "f-held")
    # Nothing was written to a store: the pipeline stays the only writer.
    assert tiers.working.applied and all(
        op.op_type.value == "add_pending" for op in tiers.working.applied
    )


def test_an_unknown_or_foreign_pending_id_is_refused_and_nothing_is_published(
    tiers: InMemoryStores, service: MemoryService, publisher: RecordingPublisher
) -> None:
    apply(tiers, add_pending(record("f-held", "tuesday", tenant="globex"), at=NOW))
    with pytest.raises(UnknownPendingError):
        service.reject("acme", "u1", "f-held")
    with pytest.raises(UnknownPendingError):
        service.confirm("acme", "u1", "f-nothing")
    assert publisher.actions == []


def test_store_and_forget_publish_actions_and_bad_input_is_refused_first(
    service: MemoryService, publisher: RecordingPublisher
) -> None:
    receipt = service.store("acme", "u1", "prefers_channel", "email", text="email me")
    forget = service.forget("acme", "u1")
    stored, forgot = publisher.actions
    assert stored.action_type is ActionType.STORE_MEMORY
    assert stored.properties["predicate"] == "prefers_channel"
    assert stored.properties["object"] == "email"
    assert forgot.action_type is ActionType.FORGET_USER
    assert (receipt.offset, forget.offset) == (0, 1)
    with pytest.raises(ValueError):
        service.store("acme", "bad user id!", "prefers_channel", "email")
    with pytest.raises(ValueError):
        service.recall("acme", "u1", "x", k=0)
    assert len(publisher.actions) == 2


def test_erasures_list_every_store_count_after_a_forget(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    apply(
        tiers,
        upsert(record("f1", "monday")),
        upsert(record("f2", "tea", predicate="likes_drink"), tiers=[Tier.EPISODIC]),
        status("mood", "fine", at=NOW),
        erase(at=NOW),
    )
    (erased,) = service.erasures("acme")
    assert erased.user_id == "u1"
    assert erased.removed == {"redis": 1, "chroma": 2, "neo4j": 1}
    assert service.recall("acme", "u1", "monday") == []
    assert service.snapshot("acme", "u1").status == {}


def test_recall_marks_what_it_served_for_the_archive_once_a_day(
    tiers: InMemoryStores, publisher: RecordingPublisher
) -> None:
    now = [NOW]
    stores = MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=publisher,
    )
    service = MemoryService(stores=stores, clock=lambda: now[0])
    tiers.episodic.clock = lambda: now[0]
    held = record("f-held", "tuesday", predicate="prefers_time")
    apply(tiers, upsert(record("f-day", "monday")), add_pending(held))

    service.recall("acme", "u1", "which day, monday?", k=5)
    service.wait_for_marks()  # marks are written after the reply, off the recall's path
    # Committed items are marked; a pending one is not Chroma's to keep.
    assert tiers.episodic.retrieved == {("acme", "f-day"): NOW}
    now[0] = NOW + timedelta(hours=3)
    service.recall("acme", "u1", "which day, monday?", k=5)
    service.wait_for_marks()
    assert tiers.episodic.retrieved[("acme", "f-day")] == NOW  # within the day: no write
    now[0] = NOW + timedelta(days=2)
    service.recall("acme", "u1", "which day, monday?", k=5)
    service.wait_for_marks()
    assert tiers.episodic.retrieved[("acme", "f-day")] == NOW + timedelta(days=2)


def test_recall_asks_a_query_naming_the_user_as_the_user_said_it(
    tiers: InMemoryStores, service: MemoryService
) -> None:
    name = record("f-name", "kerry walsh", predicate="name")
    drink = record("f-drink", "green tea", predicate="likes_drink")
    apply(tiers, upsert(name), upsert(drink))

    # Her name matches the name fact twice; the question is about her drink.
    hits = service.recall("acme", "u1", "What does Kerry Walsh drink?", k=2)

    assert hits[0].fact_id == "f-drink"
