"""Applying the same operation batch twice leaves every store exactly as it was."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import chromadb
import pytest
import redis
from chromadb.config import Settings
from tier_ops import T0, T1, fact, held, op, phone_change, turn_op, upsert

from connectors.chroma_memory import ChromaMemory
from connectors.embedding import MiniLMEmbeddingFunction
from connectors.neo4j_memory import Neo4jMemory
from connectors.protocols import MemorySink
from connectors.redis_memory import RedisMemory
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry

# Tests never depend on timing: no chunk is ever too slow here.
NO_BUDGET = math.inf
NOW = datetime.now(UTC)  # status expiries must lie in the future to be observable


Stores = tuple[RedisMemory, ChromaMemory, Neo4jMemory]


def clock() -> datetime:
    return T1 + timedelta(days=1)


@pytest.fixture
def stores(redis_url: str, chroma_path: Path, neo4j_uri: str) -> Iterator[Stores]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    chroma = chromadb.PersistentClient(
        path=str(chroma_path), settings=Settings(anonymized_telemetry=False)
    )
    sinks = (
        RedisMemory(client, clock=clock, latency_budget_s=NO_BUDGET),
        ChromaMemory(
            chroma,
            embedding_function=MiniLMEmbeddingFunction(),
            clock=clock,
            latency_budget_s=NO_BUDGET,
        ),
        Neo4jMemory.connect(neo4j_uri, clock=clock, latency_budget_s=NO_BUDGET),
    )
    for sink in sinks:
        sink.setup()
    yield sinks
    sinks[2].close()
    client.close()


def batch(tenant: str) -> list[MemoryOperation]:
    """Every operation type, across every tier, in one batch."""
    _, _, phone_ops = phone_change(tenant, "u1")
    flip = fact(
        tenant,
        "u1",
        "user",
        "eats",
        "cilantro",
        event_id="e5",
        kind=MemoryKind.PREFERENCE,
        polarity=Polarity.NEGATED,
    )
    burger = held(fact(tenant, "u1", "user", "orders", "bacon burger", event_id="e6"), "diet=vegan")
    doubt = held(fact(tenant, "u1", "user", "lives_in", "Oslo", event_id="e7"), "low confidence")
    status = StatusEntry(name="current_project", value="kitchen", ttl_s=3600)
    return [
        *phone_ops,
        upsert(flip),
        *(turn_op(tenant, "u1", "s1", i) for i in range(7)),
        op(
            OpType.SET_STATUS,
            tenant,
            "u1",
            event_id="e8",
            at=NOW,
            status=status,
            tiers=[Tier.WORKING],
        ),
        op(OpType.ADD_PENDING, tenant, "u1", event_id="e6", record=burger, tiers=[Tier.WORKING]),
        op(OpType.ADD_PENDING, tenant, "u1", event_id="e7", record=doubt, tiers=[Tier.WORKING]),
        op(
            OpType.RESOLVE_PENDING,
            tenant,
            "u1",
            event_id="e9",
            target_fact_id=doubt.fact_id,
            resolution="rejected",
            tiers=[Tier.WORKING],
        ),
    ]


def redis_state(client: redis.Redis, tenant: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    readers: dict[str, Callable[[str], Any]] = {
        "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
        "hash": client.hgetall,
        "string": client.get,
    }
    for key in sorted(client.scan_iter(match=f"ms:{tenant}:*")):
        kind = cast(str, client.type(key))
        state[key] = (kind, readers[kind](key), client.pexpiretime(key))
    return state


def chroma_state(memory: ChromaMemory, tenant: str) -> list[Any]:
    state = []
    for archive in (False, True):
        got = memory.collection(tenant, archive=archive).get(
            include=["embeddings", "metadatas", "documents"]
        )
        embeddings = [list(e) for e in got["embeddings"]] if got["embeddings"] is not None else []
        rows = zip(
            got["ids"], got["metadatas"] or [], got["documents"] or [], embeddings, strict=True
        )
        state.append(sorted(rows))
    return state


def snapshot(stores: Stores, tenant: str) -> tuple[Any, Any, Any]:
    redis_memory, chroma_memory, neo4j_memory = stores
    return (
        redis_state(redis_memory.client, tenant),
        chroma_state(chroma_memory, tenant),
        neo4j_memory.snapshot(tenant),
    )


def redis_memory_pending(stores: Stores, tenant: str) -> list[str]:
    return [hit.object for hit in stores[0].pending(tenant, "u1", at=T0)]


def apply_everywhere(stores: Stores, ops: list[MemoryOperation]) -> None:
    sinks: tuple[MemorySink, ...] = stores
    for sink in sinks:
        sink.write(ops)
        sink.flush()


@pytest.mark.parametrize("chunk_size", [256, 1], ids=["one-chunk", "op-by-op"])
def test_a_batch_applied_twice_changes_nothing(
    stores: Stores, unique: str, chunk_size: int
) -> None:
    tenant = f"t{unique}"
    for sink in stores:
        sink.chunk_size = chunk_size
    ops = batch(tenant)
    apply_everywhere(stores, ops)
    first = snapshot(stores, tenant)
    redis_part, chroma_part, neo4j_part = first
    # The snapshot really holds the batch (else equality would prove nothing).
    assert len(redis_part) == 5  # turns, status, pending zset + items + resolved
    assert [len(c) for c in chroma_part] == [3, 0]
    assert len({row["props"]["fact_id"] for row in neo4j_part if "Fact" in row["labels"]}) == 3
    assert redis_memory_pending(stores, tenant) == ["bacon burger"]
    apply_everywhere(stores, ops)
    assert snapshot(stores, tenant) == first


def test_a_replayed_old_upsert_does_not_reopen_a_closed_version(
    stores: Stores, unique: str
) -> None:
    tenant = f"t{unique}"
    closed, _, ops = phone_change(tenant, "u1")
    apply_everywhere(stores, ops)
    first = snapshot(stores, tenant)
    apply_everywhere(stores, ops[:1])  # only the original upsert of v1, with valid_until open
    assert snapshot(stores, tenant) == first
    _, chroma_memory, neo4j_memory = stores
    [v1, _] = neo4j_memory.chain(tenant, "u1", "user", "phone_number")
    assert v1.valid_until == closed.valid_until == T1
    assert {h.fact_id: h.valid_until for h in chroma_memory.get(tenant, "u1")}[v1.fact_id] == T1
