"""The Chroma and Neo4j writers apply a chunk as one-by-one writes would, in one go.

The writers fold a chunk's operations per id and write each collection (Chroma)
or the whole chunk (Neo4j) at once. These tests give them a chunk in which
several operations touch the same version, chain or episode, in an order that
matters, on top of what an earlier batch stored, and compare the result with
the same operations applied one at a time in a namespace of their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from tier_ops import T1, fact, op, said, upsert

from connectors.chroma_memory import ChromaMemory
from connectors.embedding import MiniLMEmbeddingFunction
from connectors.neo4j_memory import Neo4jMemory
from connectors.protocols import BatchingSink
from schemas import ids
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry

T2 = T1 + timedelta(days=1)
EPISODIC = [Tier.EPISODIC]


def clock() -> Any:
    return T2 + timedelta(days=1)


def close(record: MemoryRecord, at: Any, event_id: str) -> MemoryOperation:
    closed = record.model_copy(update={"valid_until": at})
    return op(
        OpType.CLOSE_FACT,
        record.tenant_id,
        record.user_id,
        event_id=event_id,
        at=at,
        record=closed,
    )


def outdate(tenant: str, episode_id: str, by: str | None, event_id: str) -> MemoryOperation:
    base = op(OpType.ERASE_USER, tenant, "u1", event_id=event_id, tiers=EPISODIC)
    return MemoryOperation.model_validate(
        {
            **base.model_dump(),
            "op_id": ids.op_id(event_id, 0, OpType.OUTDATE_EPISODE.value),
            "op_type": OpType.OUTDATE_EPISODE,
            "target_fact_id": episode_id,
            "superseded_by": by,
        }
    )


class Scenario:
    """An earlier batch, then a chunk whose order matters, for tenant ``a``."""

    def __init__(self, tenant: str, other: str) -> None:
        self.tenant = tenant
        phone = ("user", "phone_number")
        self.v1 = fact(tenant, "u1", *phone, "555-0100", event_id="e1")
        self.v2 = fact(
            tenant, "u1", *phone, "555-0199", event_id="e2", at=T1, version=2,
            supersedes=self.v1.fact_id,
        )  # fmt: skip
        self.v3 = fact(
            tenant, "u1", *phone, "555-0123", event_id="e3", at=T2, version=3,
            supersedes=self.v2.fact_id,
        )  # fmt: skip
        # The same version written twice in the chunk: the later one wins.
        self.v2_again = self.v2.model_copy(update={"confidence": 0.7})
        self.gone = fact(tenant, "u2", "user", "city", "Oslo", event_id="e4")
        self.kept = fact(tenant, "u2", "user", "city", "Bergen", event_id="e5", at=T1)
        self.e1, self.e0 = (
            said(tenant, "u1", "ep1", "my phone is 555-0100"),
            said(tenant, "u1", "ep0", "hello there"),
        )
        self.earlier: list[MemoryOperation] = [upsert(self.v1), self.e1, self.e0]
        erase = op(OpType.ERASE_USER, tenant, "u2", event_id="e6")
        # Another tenant's operation carrying this tenant's fact id.
        forged = self.v1.model_copy(update={"tenant_id": other, "object": "000"})
        self.chunk: list[MemoryOperation] = [
            outdate(tenant, "ep1", "ep2", "m1"),  # undone by the rewrite below
            self.e1,
            said(tenant, "u1", "ep2", "new phone 555-0199"),
            outdate(tenant, "ep1", "ep3", "m2"),
            outdate(tenant, "ep0", "ep2", "m3"),
            outdate(tenant, "ep0", "ep2", "m4"),
            outdate(tenant, "ep0", None, "m5"),
            outdate(tenant, "nowhere", "ep2", "m6"),  # stored nowhere: skipped
            upsert(self.v3),  # arrives before the version it supersedes
            close(self.v1, T1, "e2"),
            upsert(self.v2, index=1),
            upsert(self.v1),  # a replayed upsert: must not re-open v1
            close(self.v2, T2, "e3"),
            upsert(self.v2_again, index=2),
            upsert(self.gone),
            erase,
            upsert(self.kept),
            upsert(forged),
            op(
                OpType.SET_STATUS,
                tenant,
                "u1",
                event_id="s1",
                tiers=[Tier.WORKING],
                status=StatusEntry(name="x", value=1, ttl_s=60),
            ),
        ]


def run(sink: BatchingSink, ops: list[MemoryOperation], chunk_size: int) -> None:
    sink.chunk_size = chunk_size
    sink.write(ops)
    sink.flush()


def without_ns(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_ns(v) for k, v in value.items() if k != "ns"}
    if isinstance(value, list):
        return [without_ns(v) for v in value]
    return value


@pytest.fixture
def neo4j_pair(neo4j_uri: str, unique: str) -> Iterator[tuple[Neo4jMemory, Neo4jMemory]]:
    pair = tuple(
        Neo4jMemory.connect(
            neo4j_uri, namespace=f"{mode}{unique}", clock=clock, latency_budget_s=math.inf
        )
        for mode in ("batch", "single")
    )
    for sink in pair:
        sink.setup()
    yield pair[0], pair[1]
    for sink in pair:
        sink.close()


def test_neo4j_chunk_equals_one_by_one_and_replays_unchanged(
    neo4j_pair: tuple[Neo4jMemory, Neo4jMemory], unique: str
) -> None:
    tenant, other = f"a{unique}", f"b{unique}"
    scenario = Scenario(tenant, other)
    batched, single = neo4j_pair
    for sink in (batched, single):
        run(sink, scenario.earlier, 256)
    run(batched, scenario.chunk, 256)
    run(single, scenario.chunk, 1)
    state = without_ns(batched.snapshot(tenant))
    assert state == without_ns(single.snapshot(tenant))
    # Each relationship once: a version written three times in the chunk (v2) was
    # created by it, and a created version's links are CREATEd, not merged.
    rels = [repr((r["props"], r["rel"], r["rel_props"], r["target"])) for r in state if r["rel"]]
    assert rels and len(rels) == len(set(rels))
    chain = batched.chain(tenant, "u1", "user", "phone_number")
    assert [(h.fact_id, h.valid_until) for h in chain] == [
        (scenario.v1.fact_id, T1),
        (scenario.v2.fact_id, T2),
        (scenario.v3.fact_id, None),
    ]
    assert [h.extra["confidence"] for h in chain] == [0.9, 0.7, 0.9]
    links = {
        (row["props"]["fact_id"], row["target"]["fact_id"])
        for row in state
        if row["rel"] == "SUPERSEDES"
    }
    assert links == {
        (scenario.v2.fact_id, scenario.v1.fact_id),
        (scenario.v3.fact_id, scenario.v2.fact_id),
    }
    assert [h.fact_id for h in batched.chain(tenant, "u2", "user", "city")] == [
        scenario.kept.fact_id
    ]
    # Tenant scoping: the forged operation changed nothing of either tenant.
    assert chain[0].object == "555-0100"
    assert batched.snapshot(other) == []
    run(batched, scenario.chunk, 256)
    assert without_ns(batched.snapshot(tenant)) == state


@pytest.fixture
def chroma_pair(chroma_path: Path, unique: str) -> tuple[ChromaMemory, ChromaMemory]:
    client = chromadb.PersistentClient(
        path=str(chroma_path), settings=Settings(anonymized_telemetry=False)
    )
    embedding = MiniLMEmbeddingFunction()
    batched, single = (
        ChromaMemory(
            client,
            namespace=f"{mode}{unique}",
            embedding_function=embedding,
            clock=clock,
            latency_budget_s=math.inf,
        )
        for mode in ("batch", "single")
    )
    return batched, single


def chroma_state(memory: ChromaMemory, tenant: str) -> list[Any]:
    """Every item of the tenant, facts and episodes, live and archived (not revisions)."""
    state = []
    for archive in (False, True):
        for collection in (
            memory.collection(tenant, archive=archive),
            memory.episodes(tenant, archive=archive),
        ):
            got = collection.get(include=["embeddings", "metadatas", "documents"])
            vectors = got["embeddings"] if got["embeddings"] is not None else []
            rows = zip(got["ids"], got["metadatas"] or [], got["documents"] or [], strict=True)
            state.append(
                sorted(
                    (i, m, d, [round(float(x), 6) for x in v])
                    for (i, m, d), v in zip(rows, vectors, strict=True)
                    if "revision_of" not in m
                )
            )
    return state


def test_chroma_chunk_equals_one_by_one_and_replays_unchanged(
    chroma_pair: tuple[ChromaMemory, ChromaMemory], unique: str
) -> None:
    tenant, other = f"a{unique}", f"b{unique}"
    scenario = Scenario(tenant, other)
    batched, single = chroma_pair
    for sink in (batched, single):
        run(sink, scenario.earlier, 256)
    run(batched, scenario.chunk, 256)
    run(single, scenario.chunk, 1)
    state = chroma_state(batched, tenant)
    assert state == chroma_state(single, tenant)
    marks = {s.episode.episode_id: s.outdated_by for s in batched.user_episodes(tenant, "u1")}
    assert marks == {"ep0": ("ep2",), "ep1": ("ep3",), "ep2": ()}
    outdated = {s.episode.episode_id: s.outdated for s in batched.user_episodes(tenant, "u1")}
    assert outdated == {"ep0": True, "ep1": True, "ep2": False}
    versions = {h.fact_id: (h.valid_until, h.object) for h in batched.get(tenant, "u1")}
    assert versions == {
        scenario.v1.fact_id: (T1, "555-0100"),
        scenario.v2.fact_id: (T2, "555-0199"),
        scenario.v3.fact_id: (None, "555-0123"),
    }
    assert [h.fact_id for h in batched.get(tenant, "u2")] == [scenario.kept.fact_id]
    assert batched.revision(tenant, "u1") is not None
    # The forged operation wrote into its own tenant's collection only.
    assert [h.object for h in batched.get(other, "u1")] == ["000"]
    before = batched.revision(tenant, "u1")
    run(batched, scenario.chunk, 256)
    assert chroma_state(batched, tenant) == state
    assert batched.revision(tenant, "u1") != before
