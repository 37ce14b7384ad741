"""Issue 4's examples from the review stage to the real stores.

Candidate facts (what the extract stage hands over) go through the real
``Reviewer``; the operations it routes are applied by the real Redis, Chroma
and Neo4j writers, and the stores are read back. Encodings are built here so
that the near-duplicate case is decided by a known cosine, not by MiniLM.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings

from connectors.chroma_memory import ChromaMemory
from connectors.embedding import MiniLMEmbeddingFunction
from connectors.neo4j_memory import Neo4jMemory
from connectors.protocols import BatchingSink
from connectors.redis_memory import RedisMemory
from pipelines.review import Reviewer, UserMemoryState
from schemas.events import ActionType, CrmWebhook, DialogueEvent, FieldChange, UserAction
from schemas.facts import Assertor, ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, Polarity, Tier
from schemas.ops import MemoryOperation, OpType
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DIM = 384


def _unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def _near(vector: list[float], seed: int, noise: float) -> list[float]:
    v = np.array(vector) + noise * np.random.default_rng(seed).standard_normal(DIM) / math.sqrt(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def _encoding(text_vector: list[float]) -> Encoding:
    return Encoding(text=text_vector, combined=text_vector)


@dataclass
class User:
    """One user's review state and the stream position of their events."""

    tenant: str
    user: str
    reviewer: Reviewer
    stores: list[BatchingSink]
    state: UserMemoryState = field(init=False)
    offset: int = 0
    applied: list[MemoryOperation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = self.reviewer.new_state()

    def _lineage(self, topic: str, event_id: str) -> SourceLineage:
        self.offset += 1
        return SourceLineage(topic=topic, partition=0, offset=self.offset, event_id=event_id)

    def _apply(self, ops: list[MemoryOperation]) -> list[MemoryOperation]:
        for store in self.stores:
            store.write(ops)
            store.flush()
        self.applied += ops
        return ops

    def says(
        self,
        at: datetime,
        predicate: str,
        obj: str,
        *,
        polarity: Polarity = Polarity.AFFIRMED,
        kind: MemoryKind = MemoryKind.FACT,
        confidence: float = 0.9,
        is_update: bool = False,
        vector: list[float] | None = None,
        session: str = "s1",
    ) -> list[MemoryOperation]:
        """A user turn stating one fact."""
        event_id = f"{self.user}-{self.offset + 1}"
        event = DialogueEvent(
            event_id=event_id,
            tenant_id=self.tenant,
            user_id=self.user,
            session_id=session,
            turn_index=self.offset,
            role="user",
            text=f"{predicate} {obj}",
            ts=at,
        )
        fact = ExtractedFact(
            tenant_id=self.tenant,
            user_id=self.user,
            session_id=session,
            event_id=event_id,
            event_ts=at,
            subject="user",
            predicate=predicate,
            object=obj,
            polarity=polarity,
            kind=kind,
            confidence=confidence,
            is_update=is_update,
            asserted_by=Assertor.USER,
        )
        lineage = self._lineage(DIALOGUE_EVENTS, event_id)
        encodings = [_encoding(vector or _unit(hash_seed(predicate, obj)))]
        return self._apply(self.reviewer.apply(self.state, event, lineage, [fact], encodings))

    def crm(self, at: datetime, predicate: str, obj: str) -> list[MemoryOperation]:
        """An authoritative CRM change of one field."""
        event_id = f"{self.user}-crm-{self.offset + 1}"
        event = CrmWebhook(
            event_id=event_id,
            tenant_id=self.tenant,
            user_id=self.user,
            source="crm",
            entity="contact",
            changes={predicate: FieldChange(new=obj)},
            ts=at,
        )
        fact = ExtractedFact(
            tenant_id=self.tenant,
            user_id=self.user,
            event_id=event_id,
            event_ts=at,
            subject="user",
            predicate=predicate,
            object=obj,
            confidence=1.0,
            authoritative=True,
            asserted_by=Assertor.CRM,
        )
        lineage = self._lineage(CRM_WEBHOOKS, event_id)
        encodings = [_encoding(_unit(hash_seed(predicate, obj)))]
        return self._apply(self.reviewer.apply(self.state, event, lineage, [fact], encodings))

    def acts(self, at: datetime, action: ActionType, target: str) -> list[MemoryOperation]:
        """A confirm/reject action on a pending item."""
        event_id = f"{self.user}-act-{self.offset + 1}"
        event = UserAction(
            event_id=event_id,
            tenant_id=self.tenant,
            user_id=self.user,
            action_type=action,
            target_id=target,
            ts=at,
        )
        lineage = self._lineage(USER_ACTIONS, event_id)
        return self._apply(self.reviewer.apply(self.state, event, lineage))


def hash_seed(*parts: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate("|".join(parts)))


@pytest.fixture(scope="module")
def embedding() -> MiniLMEmbeddingFunction:
    return MiniLMEmbeddingFunction()


@pytest.fixture
def stores(
    redis_url: str, neo4j_uri: str, chroma_path: Path, embedding: MiniLMEmbeddingFunction
) -> Iterator[tuple[RedisMemory, ChromaMemory, Neo4jMemory]]:
    # No latency budget: these tests are about decisions, never timing.
    redis_mem = RedisMemory.from_url(redis_url, latency_budget_s=math.inf)
    client = chromadb.PersistentClient(
        path=str(chroma_path), settings=ChromaSettings(anonymized_telemetry=False)
    )
    chroma = ChromaMemory(client, embedding_function=embedding, latency_budget_s=math.inf)
    neo4j = Neo4jMemory.connect(neo4j_uri, latency_budget_s=math.inf)
    for store in (redis_mem, chroma, neo4j):
        store.setup()
    yield redis_mem, chroma, neo4j
    neo4j.close()


@pytest.fixture
def user(unique: str, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]) -> User:
    return User(f"t-{unique}", "u-1", Reviewer(), list(stores))


def _objects(hits: list) -> list[tuple[str, Polarity, int, datetime | None]]:  # type: ignore[type-arg]
    return [(h.object, h.polarity, h.version, h.valid_until) for h in hits]


def test_a_phone_change_keeps_both_numbers_with_their_validity(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, chroma, neo4j = stores
    user.crm(T0, "phone_number", "+44 20 7946 0018")
    changed = T0 + timedelta(days=40)
    user.crm(changed, "phone_number", "+44 20 7946 0999")
    for store in (chroma, neo4j):
        chain = store.chain(user.tenant, user.user, "user", "phone_number")
        assert _objects(chain) == [
            ("+44 20 7946 0018", Polarity.AFFIRMED, 1, changed),
            ("+44 20 7946 0999", Polarity.AFFIRMED, 2, None),
        ], type(store).__name__
        assert chain[1].supersedes == chain[0].fact_id
    as_of_before = neo4j.facts_as_of(user.tenant, user.user, T0 + timedelta(days=1))
    assert [h.object for h in as_of_before] == ["+44 20 7946 0018"]


def test_a_negation_flip_is_a_new_version(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, chroma, _ = stores
    user.says(T0, "eats", "cilantro", polarity=Polarity.NEGATED, kind=MemoryKind.PREFERENCE)
    flipped = T0 + timedelta(days=3)
    user.says(flipped, "eats", "cilantro", kind=MemoryKind.PREFERENCE, is_update=True)
    chain = chroma.chain(user.tenant, user.user, "user", "eats")
    assert _objects(chain) == [
        ("cilantro", Polarity.NEGATED, 1, flipped),
        ("cilantro", Polarity.AFFIRMED, 2, None),
    ]


def test_vegan_then_bacon_burger_is_held_then_committed_by_a_confirm(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    redis_mem, chroma, _ = stores
    user.says(T0, "diet", "vegan", kind=MemoryKind.PREFERENCE)
    ordered = T0 + timedelta(days=1)
    ops = user.says(ordered, "ordered", "bacon burger")
    held = [op for op in ops if op.op_type is OpType.ADD_PENDING]
    assert len(held) == 1 and held[0].record is not None
    pending_id = held[0].record.fact_id
    assert [h.fact_id for h in redis_mem.pending(user.tenant, user.user, at=ordered)] == [
        pending_id
    ]
    assert "bacon burger" not in {h.object for h in chroma.get(user.tenant, user.user)}

    user.acts(ordered + timedelta(hours=1), ActionType.CONFIRM_MEMORY, pending_id)
    assert redis_mem.pending(user.tenant, user.user, at=ordered) == []
    assert redis_mem.resolution(user.tenant, user.user, pending_id) == "confirmed"
    assert {"vegan", "bacon burger"} <= {h.object for h in chroma.get(user.tenant, user.user)}


def test_a_reject_keeps_the_held_fact_out_of_memory(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    redis_mem, chroma, _ = stores
    user.says(T0, "diet", "vegan", kind=MemoryKind.PREFERENCE)
    ops = user.says(T0 + timedelta(days=1), "ordered", "bacon burger")
    (held,) = [op for op in ops if op.op_type is OpType.ADD_PENDING]
    assert held.record is not None
    user.acts(T0 + timedelta(days=1, hours=1), ActionType.REJECT_MEMORY, held.record.fact_id)
    assert redis_mem.resolution(user.tenant, user.user, held.record.fact_id) == "rejected"
    assert "bacon burger" not in {h.object for h in chroma.get(user.tenant, user.user)}


def test_a_time_sensitive_fact_expires_and_stays_in_history(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, chroma, _ = stores
    (upsert,) = [
        op
        for op in user.says(T0, "travel", "berlin", kind=MemoryKind.STATUS)
        if op.op_type is OpType.UPSERT_FACT
    ]
    assert upsert.record is not None and upsert.record.expires_at is not None
    # The vocabulary's trip class (docs/architecture.md): base 2 d, confidence 0.9 -> 3.8 d.
    assert upsert.record.expires_at - T0 == timedelta(days=3.8)
    assert [h.object for h in chroma.get(user.tenant, user.user, at=T0 + timedelta(days=3))] == [
        "berlin"
    ]
    assert chroma.get(user.tenant, user.user, at=T0 + timedelta(days=4)) == []
    assert [h.object for h in chroma.chain(user.tenant, user.user, "user", "travel")] == ["berlin"]


def test_a_near_duplicate_merges_into_the_existing_item(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, chroma, _ = stores
    first = _unit(11)
    user.says(T0, "hobby", "hiking in the mountains", vector=first)
    near = _near(first, 12, 0.3)
    assert float(np.dot(first, near)) > 0.85
    # Other words, a near vector ("mountain hiking" would be the same value:
    # free text's identity is its stemmed content words in any order).
    ops = user.says(T0 + timedelta(days=2), "hobby", "hill walking", vector=near)
    (merged,) = [op.record for op in ops if op.op_type is OpType.UPSERT_FACT]
    assert merged is not None and merged.merged_from and merged.merged_at is not None
    chain = chroma.chain(user.tenant, user.user, "user", "hobby")
    assert len(chain) == 1 and chain[0].valid_until is None


def test_three_independent_confirmations_promote_to_the_semantic_tier(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, chroma, neo4j = stores
    for day, session in ((0, "s1"), (1, "s2")):
        user.says(T0 + timedelta(days=day), "prefers", "window seat", session=session)
    assert neo4j.chain(user.tenant, user.user, "user", "prefers") == []
    assert [h.object for h in chroma.chain(user.tenant, user.user, "user", "prefers")] == [
        "window seat"
    ]
    ops = user.says(T0 + timedelta(days=2), "prefers", "window seat", session="s3")
    assert any(op.record and Tier.SEMANTIC in op.tiers for op in ops)
    assert [h.object for h in neo4j.chain(user.tenant, user.user, "user", "prefers")] == [
        "window seat"
    ]


def test_cypher_injection_in_an_entity_name_is_stored_as_text(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    _, _, neo4j = stores
    hostile = "x'}) MATCH (n) DETACH DELETE n //"
    user.crm(T0, "employer", hostile)
    assert [h.object for h in neo4j.chain(user.tenant, user.user, "user", "employer")] == [hostile]
    assert hostile in neo4j.entity_names(user.tenant)


def test_applying_every_operation_twice_changes_no_store(
    user: User, stores: tuple[RedisMemory, ChromaMemory, Neo4jMemory]
) -> None:
    redis_mem, chroma, neo4j = stores
    user.crm(T0, "phone_number", "+44 20 7946 0018")
    user.crm(T0 + timedelta(days=5), "phone_number", "+44 20 7946 0999")
    user.says(T0, "diet", "vegan", kind=MemoryKind.PREFERENCE)
    user.says(T0 + timedelta(days=1), "ordered", "bacon burger")
    user.says(T0 + timedelta(days=2), "travel", "tomorrow", kind=MemoryKind.STATUS)
    at = T0 + timedelta(days=2)

    def snapshot() -> tuple[object, ...]:
        return (
            neo4j.snapshot(user.tenant),
            [h.model_dump() for h in chroma.get(user.tenant, user.user)],
            [h.model_dump() for h in redis_mem.pending(user.tenant, user.user, at=at)],
            redis_mem.statuses(user.tenant, user.user),
        )

    before = snapshot()
    assert before[0] and before[1] and before[2]
    for store in stores:
        store.write(user.applied)
        store.flush()
    assert snapshot() == before
