"""Forget end to end: the erase empties every store and leaves an audit record without content.

The user's memory is written to Redis, Chroma and Neo4j through the real tier
writers (``api_helpers.seed_user`` plus a working-memory turn); ``forget`` is
published to Kafka by the MemoryService, read back, turned into the erase
operation by the review stage exactly as the ingest job does, and applied by
the three writers, as the sink job applies it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from api_helpers import SeededUser, published_action, seed_user
from tier_ops import op

from connectors.chroma_memory import ChromaMemory
from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisMemory
from jobs.serve.memory_service import KafkaActionPublisher, MemoryService, MemoryStores
from pipelines.actions import action_facts
from pipelines.encode import Encoder
from pipelines.review import Reviewer
from schemas.events import ActionType
from schemas.lineage import SourceLineage
from schemas.ops import MemoryOperation, OpType, WorkingTurn
from schemas.query import ActionReceipt
from schemas.topics import USER_ACTIONS

# What the seeded user holds in Redis: the pending queue (sorted set + items
# hash), the current_project status key and the session's turn list.
REDIS_KEYS_OF_SEEDED_USER = 4


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder.load()  # MiniLM once per module (recall embeds the query)


@pytest.fixture
def stores(
    redis_url: str, chroma_path: Path, neo4j_uri: str, kafka_bootstrap: str, encoder: Encoder
) -> Iterator[MemoryStores]:
    # No latency budget: tests never depend on timing.
    neo4j = Neo4jMemory.connect(neo4j_uri, latency_budget_s=math.inf)
    neo4j.setup()
    yield MemoryStores(
        redis=RedisMemory.from_url(redis_url, latency_budget_s=math.inf),
        chroma=ChromaMemory.open(chroma_path, latency_budget_s=math.inf),
        neo4j=neo4j,
        embedder=encoder,
        publisher=KafkaActionPublisher(kafka_bootstrap),
    )
    neo4j.close()


@pytest.fixture
def service(stores: MemoryStores) -> MemoryService:
    return MemoryService(stores=stores)


def seed(stores: MemoryStores, tenant: str, user: str, label: str) -> SeededUser:
    """``seed_user`` plus one dialogue turn in working memory (its text carries the label)."""
    seeded = seed_user(stores, tenant, user, label)
    turn = WorkingTurn(
        session_id="s1",
        turn_index=0,
        role="user",
        text=f"please remember {label} for me",
        ts=datetime.now(UTC),
    )
    said = op(OpType.APPEND_TURN, tenant, user, event_id=f"{user}-{label}-turn", turn=turn)
    stores.redis.write([said])
    stores.redis.flush()
    return seeded


def erase_as_the_pipeline_does(bootstrap: str, receipt: ActionReceipt) -> MemoryOperation:
    """Read the forget_user action back from Kafka and review it as the ingest job does."""
    _, action = published_action(bootstrap, receipt)
    assert action.action_type is ActionType.FORGET_USER
    reviewer = Reviewer()
    lineage = SourceLineage(
        topic=receipt.topic,
        partition=receipt.partition,
        offset=receipt.offset,
        event_id=action.event_id,
    )
    [erase] = reviewer.on_action(reviewer.new_state(), action, lineage, action_facts(action))
    assert erase.op_type is OpType.ERASE_USER
    return erase


def apply(stores: MemoryStores, ops: list[MemoryOperation]) -> None:
    """What the sink job does with a batch: every writer takes the operations for its tier."""
    for sink in (stores.redis, stores.chroma, stores.neo4j):
        sink.write(ops)
        sink.flush()


def test_forget_empties_every_store_and_audits_counts_without_content(
    service: MemoryService, stores: MemoryStores, kafka_bootstrap: str, unique: str
) -> None:
    tenant = f"forget-{unique}"
    gone = seed(stores, tenant, "u1", f"gone{unique}")
    kept = seed(stores, tenant, "u2", f"kept{unique}")
    kept_before = service.snapshot(tenant, "u2")
    assert service.snapshot(tenant, "u1").facts

    receipt = service.forget(tenant, "u1")
    erase = erase_as_the_pipeline_does(kafka_bootstrap, receipt)
    apply(stores, [erase])

    # Nothing of u1 is left in any store.
    redis, chroma, neo4j = stores.redis, stores.chroma, stores.neo4j
    assert list(redis.client.scan_iter(match=redis.keys.user(tenant, "u1", "*"))) == []
    assert chroma.get(tenant, "u1") == [] and chroma.get(tenant, "u1", archived=True) == []
    graph = repr(neo4j.snapshot(tenant))
    assert [m for m in gone.markers if m in graph] == []
    assert service.recall(tenant, "u1", f"tea vegan weekend phone {gone.label}") == []
    # ...and u2 of the same tenant is untouched.
    assert service.snapshot(tenant, "u2").model_dump(exclude={"at"}) == kept_before.model_dump(
        exclude={"at"}
    )
    assert [m for m in kept.fact_ids if m in graph] == list(kept.fact_ids)

    [record] = service.erasures(tenant)
    assert (record.tenant_id, record.user_id, record.event_id) == (tenant, "u1", receipt.event_id)
    assert (record.lineage.topic, record.lineage.partition, record.lineage.offset) == (
        USER_ACTIONS,
        receipt.partition,
        receipt.offset,
    )
    assert record.requested_at == erase.at
    assert record.requested_at <= record.applied_at
    assert record.removed["redis"] == REDIS_KEYS_OF_SEEDED_USER

    # The audit stream holds ids and counts only: no text, value, label or fact id.
    entries = redis.client.xrange(redis.keys.erasures(tenant), "-", "+")
    assert len(entries) == 1  # one store in Redis applied it once
    raw = repr(entries)
    contents = (gone.label, "tea", "vegan", "weekend", "555-0", "please remember")
    assert [c for c in (*contents, *gone.fact_ids, gone.pending_id) if c in raw] == []


def test_a_replayed_erase_keeps_one_record_with_the_same_counts(
    service: MemoryService, stores: MemoryStores, kafka_bootstrap: str, unique: str
) -> None:
    tenant = f"forget-{unique}"
    seed(stores, tenant, "u1", f"again{unique}")
    erase = erase_as_the_pipeline_does(kafka_bootstrap, service.forget(tenant, "u1"))
    apply(stores, [erase])
    [first] = service.erasures(tenant)

    apply(stores, [erase])  # the sink re-delivers the batch after a crash

    [again] = service.erasures(tenant)
    assert again.removed == first.removed and again.applied_at == first.applied_at
    assert service.erasures(f"other-{unique}") == []  # another tenant sees none of it


def test_the_audit_counts_what_chroma_and_neo4j_removed(
    service: MemoryService,
    stores: MemoryStores,
    chroma_path: Path,
    neo4j_uri: str,
    kafka_bootstrap: str,
    unique: str,
) -> None:
    tenant = f"forget-{unique}"
    seed(stores, tenant, "u1", f"counted{unique}")
    # u1 is the tenant's only user: erasing it orphans every entity of the tenant.
    entities = len(stores.neo4j.entity_names(tenant))
    erase = erase_as_the_pipeline_does(kafka_bootstrap, service.forget(tenant, "u1"))
    audit = stores.redis.audit  # one audit stream, whichever store writes to it
    chroma = ChromaMemory.open(chroma_path, latency_budget_s=math.inf, erasure_audit=audit)
    neo4j = Neo4jMemory.connect(neo4j_uri, latency_budget_s=math.inf, erasure_audit=audit)
    try:
        for sink in (stores.redis, chroma, neo4j):
            sink.write([erase])
            sink.flush()
    finally:
        neo4j.close()
    [record] = service.erasures(tenant)
    # seed_user stores four fact versions (likes, the weekend rule, phone v1 and
    # v2) in Chroma; Neo4j deletes the same four Fact nodes, the User node and
    # the entities no other fact is about.
    assert entities > 0
    assert record.removed == {
        "redis": REDIS_KEYS_OF_SEEDED_USER,
        "chroma": 4,
        "neo4j": 1 + 4 + entities,
    }
