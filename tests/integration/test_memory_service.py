"""MemoryService and the SDK against the real Redis, Chroma, Neo4j and Kafka.

Memories are written the way the pipeline writes them: hand-made candidate
facts go through ``pipelines.review.Reviewer`` and its operations through the
real tier writers. Every test uses its own tenant, so tests never see each
other's memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from connectors.chroma_memory import ChromaMemory
from connectors.kafka_io import end_offsets, read_topic
from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisMemory
from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import (
    POOL_MIN,
    KafkaActionPublisher,
    MemoryService,
    MemoryStores,
    UnknownPendingError,
)
from memstream.sdk import MemoryClient, NotFound
from pipelines.actions import action_facts
from pipelines.encode import Encoder
from pipelines.review import Reviewer, UserMemoryState
from schemas.events import ActionType, CrmWebhook, DialogueEvent, FieldChange, Role, UserAction
from schemas.facts import Assertor, ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, MemoryState, Polarity, Tier
from schemas.ops import MemoryOperation
from schemas.query import ActionReceipt, RecallHit
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
USER = "u1"
# Two API keys (the keyring wants 16+ characters), one per tenant.
KEY_A = "sdk-test-key-tenant-a"
KEY_B = "sdk-test-key-tenant-b"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder.load()  # MiniLM once per module


@pytest.fixture
def stores(
    redis_url: str, chroma_path: Path, neo4j_uri: str, kafka_bootstrap: str, encoder: Encoder
) -> Iterator[MemoryStores]:
    def clock() -> datetime:
        return NOW

    # No latency budget: tests never depend on timing.
    neo4j = Neo4jMemory.connect(neo4j_uri, latency_budget_s=math.inf, clock=clock)
    neo4j.setup()
    yield MemoryStores(
        redis=RedisMemory.from_url(redis_url, latency_budget_s=math.inf, clock=clock),
        chroma=ChromaMemory.open(chroma_path, latency_budget_s=math.inf, clock=clock),
        neo4j=neo4j,
        embedder=encoder,
        publisher=KafkaActionPublisher(kafka_bootstrap),
    )
    neo4j.close()


@pytest.fixture
def service(stores: MemoryStores) -> MemoryService:
    return MemoryService(stores=stores, clock=lambda: NOW)


class Pipeline:
    """Reviews hand-made facts of one user as the ingest job does and applies the ops."""

    def __init__(self, stores: MemoryStores, encoder: Encoder, tenant: str) -> None:
        self.stores, self.encoder, self.tenant = stores, encoder, tenant
        self.reviewer = Reviewer()
        self.states: dict[str, UserMemoryState] = {}
        self.offset = 0

    def fact(self, predicate: str, obj: str, user: str = USER, **kw: Any) -> ExtractedFact:
        values: dict[str, Any] = {
            "tenant_id": self.tenant,
            "user_id": user,
            "session_id": "s1",
            "event_id": "pending",
            "event_ts": NOW,
            "subject": "user",
            "predicate": predicate,
            "object": obj,
            "confidence": 0.9,
        }
        return ExtractedFact(**(values | kw))

    def _lineage(self, topic: str, event_id: str) -> SourceLineage:
        self.offset += 1
        return SourceLineage(
            topic=topic, partition=0, offset=self.offset, event_id=event_id, turn_id=event_id
        )

    def say(
        self, fact: ExtractedFact, ts: datetime, vector: Sequence[float] | None = None
    ) -> list[MemoryOperation]:
        """One user turn stating ``fact``; ``vector`` replaces its stored vector."""
        event_id = f"{self.tenant}-{fact.user_id}-{self.offset + 1}"
        fact = fact.model_copy(update={"event_id": event_id, "event_ts": ts})
        [encoding] = self.encoder.encode([fact])
        if vector is not None:
            encoding = Encoding(combined=list(vector))
        event = DialogueEvent(
            event_id=event_id,
            tenant_id=self.tenant,
            user_id=fact.user_id,
            ts=ts,
            session_id="s1",
            turn_index=self.offset,
            role=Role.USER,
            text=fact.text or f"{fact.predicate} {fact.object}",
        )
        lineage = self._lineage(DIALOGUE_EVENTS, event_id)
        ops = self.reviewer.on_dialogue(
            self.state(fact.user_id), event, lineage, [fact], [encoding]
        )
        return self.apply(ops)

    def crm(self, fact: ExtractedFact, ts: datetime) -> list[MemoryOperation]:
        event_id = f"{self.tenant}-crm-{self.offset + 1}"
        fact = fact.model_copy(
            update={
                "event_id": event_id,
                "event_ts": ts,
                "authoritative": True,
                "asserted_by": Assertor.CRM,
                "confidence": 1.0,
            }
        )
        event = CrmWebhook(
            event_id=event_id,
            tenant_id=self.tenant,
            user_id=fact.user_id,
            ts=ts,
            source="salesforce",
            entity="contact",
            changes={fact.predicate: FieldChange(new=fact.object)},
        )
        lineage = self._lineage(CRM_WEBHOOKS, event_id)
        ops = self.reviewer.on_crm(
            self.state(fact.user_id), event, lineage, [fact], self.encoder.encode([fact])
        )
        return self.apply(ops)

    def act(self, action: UserAction) -> list[MemoryOperation]:
        """What the ingest job does with an action read from user.actions."""
        lineage = self._lineage(USER_ACTIONS, action.event_id)
        ops = self.reviewer.on_action(
            self.state(action.user_id), action, lineage, action_facts(action)
        )
        return self.apply(ops)

    def state(self, user: str) -> UserMemoryState:
        return self.states.setdefault(user, self.reviewer.new_state())

    def apply(self, ops: list[MemoryOperation]) -> list[MemoryOperation]:
        for sink in (self.stores.redis, self.stores.chroma, self.stores.neo4j):
            sink.write(ops)
            sink.flush()
        return ops


@pytest.fixture
def tenant(unique: str) -> str:
    return f"svc-{unique}"


@pytest.fixture
def pipeline(stores: MemoryStores, encoder: Encoder, tenant: str) -> Pipeline:
    return Pipeline(stores, encoder, tenant)


def by_object(hits: list[RecallHit]) -> list[str]:
    return [h.object for h in hits]


def score(hit: RecallHit) -> tuple[float, float, float, float]:
    assert hit.score is not None
    return hit.score.vector, hit.score.keyword, hit.score.time, hit.score.total


def action_at(bootstrap: str, receipt: ActionReceipt, start: dict[int, int]) -> UserAction:
    """The action the receipt points at, read back from Kafka."""
    records = read_topic(bootstrap, USER_ACTIONS, start=start)
    [found] = [r for r in records if (r.partition, r.offset) == (receipt.partition, receipt.offset)]
    assert found.key == f"{receipt.tenant_id}:{receipt.user_id}"
    return UserAction.model_validate_json(found.value)


# -- ranking ------------------------------------------------------------------
def test_vector_decides_when_neither_text_nor_time_differs(
    service: MemoryService, pipeline: Pipeline, encoder: Encoder, tenant: str
) -> None:
    query = "favourite japanese dish"
    close, far = encoder.embed_texts([query, "weather forecast for the north sea"])
    pipeline.say(pipeline.fact("likes", "sushi"), NOW - DAY, vector=close)
    pipeline.say(pipeline.fact("owns", "bicycle"), NOW - DAY, vector=far)

    hits = service.recall(tenant, USER, query)
    assert by_object(hits) == ["sushi", "bicycle"]
    (v1, k1, t1, total1), (v2, k2, t2, _) = score(hits[0]), score(hits[1])
    assert v1 == pytest.approx(1.0, abs=1e-3) and v2 < v1
    assert (k1, k2) == (0.0, 0.0) and t1 == pytest.approx(t2)
    assert total1 == pytest.approx(0.6 * v1 + 0.3 * k1 + 0.1 * t1)
    assert t1 == pytest.approx(1 / (1 + 1 / 30))


def test_keyword_decides_on_an_exact_value_when_vectors_and_time_tie(
    service: MemoryService, pipeline: Pipeline, encoder: Encoder, tenant: str
) -> None:
    [same] = encoder.embed_texts(["a code the customer gave us"])
    pipeline.say(pipeline.fact("door_code", "4711"), NOW - DAY, vector=same)
    pipeline.say(pipeline.fact("meter_reading", "9932"), NOW - DAY, vector=same)

    hits = service.recall(tenant, USER, "is it 4711?")
    assert by_object(hits) == ["4711", "9932"]
    (v1, k1, t1, _), (v2, k2, t2, _) = score(hits[0]), score(hits[1])
    assert v1 == pytest.approx(v2, abs=1e-6) and t1 == pytest.approx(t2)
    assert k1 == pytest.approx(1.0) and k2 == 0.0  # exact field hit + best BM25


def test_time_decides_when_vector_and_keyword_tie(
    service: MemoryService, pipeline: Pipeline, encoder: Encoder, tenant: str
) -> None:
    [same] = encoder.embed_texts(["something to drink"])
    pipeline.say(pipeline.fact("likes", "tea"), NOW - 60 * DAY, vector=same)
    pipeline.say(pipeline.fact("wants", "tea"), NOW - 2 * DAY, vector=same)

    hits = service.recall(tenant, USER, "tea")
    assert [h.predicate for h in hits] == ["wants", "likes"]
    (v1, k1, t1, _), (v2, k2, t2, _) = score(hits[0]), score(hits[1])
    assert v1 == pytest.approx(v2, abs=1e-6) and k1 == pytest.approx(k2)
    assert (t1, t2) == (pytest.approx(1 / (1 + 2 / 30)), pytest.approx(1 / 3))


# -- validity, negation, tiers -------------------------------------------------
def test_as_of_travels_along_the_phone_number_chain(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    t0, t1 = NOW - 30 * DAY, NOW - 10 * DAY
    pipeline.say(pipeline.fact("phone_number", "555-0100", text="my number is 555-0100"), t0)
    correction = pipeline.fact(
        "phone_number", "555-0199", text="my new number is 555-0199", is_update=True
    )
    pipeline.say(correction, t1)

    then = service.recall(tenant, USER, "phone number", as_of=t0 + DAY)
    now = service.recall(tenant, USER, "phone number")
    assert "555-0100" in by_object(then) and "555-0199" not in by_object(then)
    assert "555-0199" in by_object(now) and "555-0100" not in by_object(now)
    with pytest.raises(ValueError, match="timezone"):
        service.recall(tenant, USER, "phone number", as_of=NOW.replace(tzinfo=None))
    both = service.recall(tenant, USER, "phone number", include_history=True)
    assert {"555-0100", "555-0199"} <= set(by_object(both))

    chain = service.history(tenant, USER, "user", "phone_number")
    assert [(h.object, h.valid_from, h.valid_until) for h in chain] == [
        ("555-0100", t0, t1),
        ("555-0199", t1, None),
    ]
    assert chain[1].supersedes == chain[0].fact_id and chain[1].version == 2


def test_the_current_version_is_found_behind_a_pool_full_of_closed_ones(
    service: MemoryService, pipeline: Pipeline, encoder: Encoder, tenant: str
) -> None:
    query = "what is the door code"
    close, far = encoder.embed_texts([query, "the garden has three apple trees"])
    versions = POOL_MIN + 5  # more closed versions nearer the query than one pool holds
    rng = np.random.default_rng(5)
    for n in range(versions):
        code = pipeline.fact("door_code", f"{1000 + n}", is_update=n > 0)
        # Distinct vectors: HNSW cannot route a filtered search through exact duplicates.
        near = np.asarray(close) + 0.05 * rng.standard_normal(len(close))
        vector = far if n == versions - 1 else list(near / np.linalg.norm(near))
        pipeline.say(code, NOW - (versions - n) * timedelta(hours=1), vector=vector)

    [hit] = service.recall(tenant, USER, query, k=1)
    assert (hit.object, hit.valid_until) == (f"{1000 + versions - 1}", None)
    history = service.recall(tenant, USER, query, k=3, include_history=True)
    assert all(h.valid_until is not None for h in history)  # the nearest are the closed ones


def test_a_negated_fact_is_recalled_as_a_negation(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    pipeline.say(
        pipeline.fact("accept", "weekend installation", polarity=Polarity.NEGATED), NOW - DAY
    )
    [top, *_] = service.recall(tenant, USER, "can we install at the weekend?")
    assert top.polarity is Polarity.NEGATED
    assert top.statement == "user does not accept weekend installation"
    block = service.context(tenant, USER, "weekend installation", k=5)
    assert "- user does not accept weekend installation" in block
    assert "- user accept" not in block


def test_crm_facts_come_from_the_semantic_tier_and_stay_in_their_tenant(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    pipeline.crm(pipeline.fact("plan", "fibre 500"), NOW - 3 * DAY)
    [hit] = service.recall(tenant, USER, "which plan", tiers=[Tier.SEMANTIC])
    assert (hit.object, hit.tier) == ("fibre 500", Tier.SEMANTIC)
    [merged] = service.recall(tenant, USER, "which plan")
    assert merged.fact_id == hit.fact_id  # one hit although two tiers hold it
    assert merged.lineage is not None and merged.lineage.topic == CRM_WEBHOOKS
    assert service.recall(f"{tenant}-other", USER, "which plan") == []
    assert service.snapshot(f"{tenant}-other", USER).facts == []


def test_context_groups_by_relevance_and_cites_sources(
    service: MemoryService, pipeline: Pipeline, encoder: Encoder, tenant: str
) -> None:
    query = "how should we contact the customer"
    close, mid, far = encoder.embed_texts(
        [query, "the customer prefers email", "the garden has three apple trees"]
    )
    pipeline.say(pipeline.fact("contact_channel", "email"), NOW - DAY, vector=close)
    pipeline.say(pipeline.fact("likes", "jazz"), NOW - DAY, vector=mid)
    pipeline.say(pipeline.fact("owns", "apple trees"), NOW - 200 * DAY, vector=far)

    hits = service.recall(tenant, USER, query)
    block = service.context(tenant, USER, query)
    lines = block.splitlines()
    assert lines[1] == "Key:"
    assert lines[2].startswith("- user contact channel email (since ")
    top = hits[0].lineage
    assert top is not None
    assert f"[episodic: {DIALOGUE_EVENTS}/0/{top.offset} event {top.event_id}" in lines[2]
    assert "Reference:" in lines and lines[-1].startswith("- user owns apple trees")


# -- actions ------------------------------------------------------------------
def test_confirm_and_reject_publish_actions_and_refuse_other_owners(
    service: MemoryService, pipeline: Pipeline, kafka_bootstrap: str, tenant: str
) -> None:
    agent = {"asserted_by": Assertor.AGENT}
    pipeline.say(pipeline.fact("likes", "opera", **agent), NOW - DAY)
    pipeline.say(pipeline.fact("likes", "techno", **agent), NOW - DAY)
    snapshot = service.snapshot(tenant, USER)
    pending = {p.hit.object: p.pending_id for p in snapshot.pending}
    assert set(pending) == {"opera", "techno"}
    assert all(p.hit.state is MemoryState.PENDING and p.reason for p in snapshot.pending)

    for stranger in ((f"{tenant}-other", USER), (tenant, "u2")):
        with pytest.raises(UnknownPendingError):
            service.confirm(*stranger, pending["opera"])
    with pytest.raises(UnknownPendingError):
        service.reject(tenant, USER, "f_" + "0" * 24)

    start = end_offsets(kafka_bootstrap, USER_ACTIONS)
    confirmed = service.confirm(tenant, USER, pending["opera"])
    rejected = service.reject(tenant, USER, pending["techno"])
    for receipt, kind, target in (
        (confirmed, ActionType.CONFIRM_MEMORY, pending["opera"]),
        (rejected, ActionType.REJECT_MEMORY, pending["techno"]),
    ):
        action = action_at(kafka_bootstrap, receipt, start)
        assert (action.action_type, action.target_id, action.event_id) == (
            kind,
            target,
            receipt.event_id,
        )
        assert (action.tenant_id, action.user_id) == (tenant, USER)

    # The pipeline applies them: opera becomes a fact, techno is gone.
    pipeline.act(action_at(kafka_bootstrap, confirmed, start))
    pipeline.act(action_at(kafka_bootstrap, rejected, start))
    after = service.snapshot(tenant, USER)
    assert after.pending == []
    assert [f.object for f in after.facts] == ["opera"]


def test_store_publishes_a_store_memory_action(
    service: MemoryService, kafka_bootstrap: str, tenant: str
) -> None:
    start = end_offsets(kafka_bootstrap, USER_ACTIONS)
    receipt = service.store(
        tenant,
        USER,
        "installation_time",
        "weekend",
        polarity=Polarity.NEGATED,
        kind=MemoryKind.RULE,
        text="no installation at the weekend",
    )
    action = action_at(kafka_bootstrap, receipt, start)
    assert action.action_type is ActionType.STORE_MEMORY
    [fact] = action_facts(action)
    assert (fact.predicate, fact.object, fact.polarity, fact.kind) == (
        "installation_time",
        "weekend",
        Polarity.NEGATED,
        MemoryKind.RULE,
    )
    assert fact.asserted_by is Assertor.AGENT
    with pytest.raises(ValueError, match="store_memory"):
        service.store(tenant, USER, "", "weekend")


def test_forget_publishes_the_erase_event_that_empties_every_tier(
    service: MemoryService, pipeline: Pipeline, kafka_bootstrap: str, tenant: str
) -> None:
    pipeline.say(pipeline.fact("likes", "tea"), NOW - DAY)
    pipeline.crm(pipeline.fact("plan", "fibre 500"), NOW - DAY)
    pipeline.say(pipeline.fact("likes", "opera", asserted_by=Assertor.AGENT), NOW - DAY)
    before = service.snapshot(tenant, USER)
    assert before.facts and before.pending

    start = end_offsets(kafka_bootstrap, USER_ACTIONS)
    receipt = service.forget(tenant, USER)
    action = action_at(kafka_bootstrap, receipt, start)
    assert action.action_type is ActionType.FORGET_USER
    pipeline.act(action)

    after = service.snapshot(tenant, USER)
    assert (after.facts, after.rules, after.pending, after.status) == ([], [], [], {})
    assert service.recall(tenant, USER, "tea plan opera") == []


# -- the SDK ------------------------------------------------------------------
def test_sdk_in_process_and_over_http_give_the_same_answers(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    pipeline.say(pipeline.fact("likes", "sushi"), NOW - DAY)
    pipeline.say(pipeline.fact("likes", "opera", asserted_by=Assertor.AGENT), NOW - DAY)
    local = MemoryClient.in_process(service, tenant)
    app = create_app(service, ApiKeyring({KEY_A: tenant, KEY_B: f"{tenant}-b"}))
    with MemoryClient.over_http("http://sdk", KEY_A, http=TestClient(app)) as remote:
        assert remote.recall(USER, "sushi", k=3) == local.recall(USER, "sushi", k=3)
        assert remote.snapshot(USER) == local.snapshot(USER)
        assert remote.history(USER, "user", "likes") == local.history(USER, "user", "likes")
        assert remote.context(USER, "sushi", k=3) == local.context(USER, "sushi", k=3)
        [pending] = local.snapshot(USER).pending
        with MemoryClient.over_http("http://sdk", KEY_B, http=TestClient(app)) as other:
            with pytest.raises(NotFound):
                other.confirm(USER, pending.pending_id)
            assert other.recall(USER, "sushi") == []
        receipt = remote.confirm(USER, pending.pending_id)
        assert (receipt.tenant_id, receipt.target_id) == (tenant, pending.pending_id)


def test_recall_shows_the_turn_id_each_event_carried(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    [said] = [o for o in pipeline.say(pipeline.fact("likes", "green tea"), NOW - DAY) if o.record]
    [crm] = [o for o in pipeline.crm(pipeline.fact("plan", "fibre 500"), NOW - DAY) if o.record]
    assert said.record is not None and crm.record is not None
    for tier, query, op in ((Tier.EPISODIC, "tea", said), (Tier.SEMANTIC, "plan", crm)):
        [hit] = service.recall(tenant, USER, query, k=1, tiers=[tier])
        assert hit.lineage is not None and op.record is not None
        assert hit.lineage.turn_id == op.record.lineage.turn_id == op.record.lineage.event_id


def test_snapshot_reads_current_versions_and_history_the_archived_chain_too(
    service: MemoryService, pipeline: Pipeline, tenant: str
) -> None:
    t0, t1 = NOW - 30 * DAY, NOW - 10 * DAY
    pipeline.say(pipeline.fact("phone_number", "555-0100"), t0)
    pipeline.say(pipeline.fact("phone_number", "555-0199", is_update=True), t1)
    pipeline.say(pipeline.fact("likes", "jazz"), t1)
    current = service.snapshot(tenant, USER).facts
    assert sorted(f.object for f in current if f.tier is Tier.EPISODIC) == ["555-0199", "jazz"]
    # A sweep 31 days on (by its own clock) moves every version to the archive.
    chroma = service.stores.chroma
    sweeper = ChromaMemory(chroma.client, embedding_function=chroma.embedding_function)
    sweeper.clock = lambda: NOW + 31 * DAY
    assert sweeper.archive_stale(tenant) >= 3
    assert chroma.get(tenant, USER) == []

    chain = service.history(tenant, USER, "user", "phone_number")
    assert [(h.object, h.valid_until) for h in chain] == [("555-0100", t1), ("555-0199", None)]
    assert service.snapshot(tenant, USER).facts == []  # archived versions are not current
