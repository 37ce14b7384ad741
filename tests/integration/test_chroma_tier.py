"""Episodic memory against a real (embedded, on-disk) Chroma."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from tier_ops import T0, T1, fact, op, phone_change, upsert, vector

from connectors import chroma_reads
from connectors.chroma_memory import PACKED_KEY, ChromaMemory, collection_name
from connectors.embedding import MiniLMEmbeddingFunction
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, MemoryRecord
from schemas.ops import MemoryOperation, OpType


class Clock:
    """An injectable clock the test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def embedding() -> MiniLMEmbeddingFunction:
    return MiniLMEmbeddingFunction()  # one model load for the module


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def memory(chroma_path: Path, embedding: MiniLMEmbeddingFunction, clock: Clock) -> ChromaMemory:
    client = chromadb.PersistentClient(
        path=str(chroma_path), settings=Settings(anonymized_telemetry=False)
    )
    # No latency budget: tests never depend on timing.
    sink = ChromaMemory(
        client, embedding_function=embedding, clock=clock, latency_budget_s=math.inf
    )
    sink.setup()
    return sink


def apply(sink: ChromaMemory, ops: list[MemoryOperation]) -> None:
    sink.write(ops)
    sink.flush()


def ids_of(hits: list[SearchHit]) -> list[str]:
    return [h.fact_id for h in hits]


def test_upsert_and_close_keep_two_versions_with_validity(
    memory: ChromaMemory, unique: str
) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    apply(memory, ops)
    stored = {h.fact_id: h for h in memory.get(tenant, "u1")}
    assert set(stored) == {old.fact_id, new.fact_id}
    assert stored[old.fact_id].valid_until == T1
    assert stored[new.fact_id].valid_until is None
    assert stored[new.fact_id].supersedes == old.fact_id
    assert stored[new.fact_id].lineage == new.lineage

    probe = vector(old.text)
    before = memory.query(tenant, "u1", embedding=probe, at=T0 + timedelta(days=1))
    after = memory.query(tenant, "u1", embedding=probe, at=T1 + timedelta(days=1))
    assert ids_of(before) == [old.fact_id]
    assert ids_of(after) == [new.fact_id]
    history = memory.query(tenant, "u1", embedding=probe)
    assert ids_of(history) == [old.fact_id, new.fact_id]  # nearest first
    assert history[0].score == pytest.approx(1.0, abs=1e-4)


def test_filters_by_session_and_tags(memory: ChromaMemory, unique: str) -> None:
    tenant = f"t{unique}"
    tea = fact(tenant, "u1", "user", "likes", "tea", event_id="e1", kind=MemoryKind.PREFERENCE)
    call = fact(
        tenant,
        "u1",
        "agent",
        "will_call",
        "monday",
        event_id="e2",
        session_id="s2",
        kind=MemoryKind.COMMITMENT,
    )
    other_user = fact(tenant, "u2", "user", "likes", "tea", event_id="e3")
    apply(memory, [upsert(tea), upsert(call), upsert(other_user)])
    probe = vector(tea.text)
    assert ids_of(memory.query(tenant, "u1", embedding=probe)) == [tea.fact_id, call.fact_id]
    assert ids_of(memory.query(tenant, "u1", embedding=probe, session_id="s2")) == [call.fact_id]
    assert ids_of(memory.query(tenant, "u1", embedding=probe, tags={"kind": "preference"})) == [
        tea.fact_id
    ]
    with pytest.raises(ValueError, match="cannot filter"):
        memory.query(tenant, "u1", embedding=probe, tags={"user": "u2"})


def test_record_without_vector_is_embedded_offline(memory: ChromaMemory, unique: str) -> None:
    tenant = f"t{unique}"
    diet = fact(tenant, "u1", "user", "diet", "vegan", event_id="e1", with_vector=False)
    phone = fact(tenant, "u1", "user", "phone_number", "555-0100", event_id="e2", with_vector=False)
    apply(memory, [upsert(diet), upsert(phone)])
    hits = memory.query(tenant, "u1", text="what does the user eat? a vegan diet")
    assert ids_of(hits)[0] == diet.fact_id


def test_archives_items_not_retrieved_for_thirty_days(
    memory: ChromaMemory, clock: Clock, unique: str
) -> None:
    tenant = f"t{unique}"
    kept = fact(tenant, "u1", "user", "likes", "tea", event_id="e1")
    stale = fact(tenant, "u1", "user", "likes", "jazz", event_id="e2")
    apply(memory, [upsert(kept), upsert(stale)])
    clock.now = T0 + timedelta(days=20)
    assert ids_of(memory.query(tenant, "u1", embedding=vector(kept.text), k=1)) == [kept.fact_id]
    clock.now = T0 + timedelta(days=29)
    assert memory.archive_stale(tenant) == 0
    clock.now = T0 + timedelta(days=31)
    assert memory.archive_stale(tenant) == 1
    assert ids_of(memory.get(tenant, "u1")) == [kept.fact_id]
    [archived] = memory.get(tenant, "u1", archived=True)
    assert archived.fact_id == stale.fact_id
    moved = memory.collection(tenant, archive=True).get(ids=[stale.fact_id], include=["embeddings"])
    assert moved["embeddings"] is not None and stale.encoding is not None
    assert list(moved["embeddings"][0]) == pytest.approx(stale.encoding.combined, abs=1e-6)
    # A replayed upsert of an archived version updates it in the archive.
    apply(memory, [upsert(stale)])
    assert ids_of(memory.get(tenant, "u1")) == [kept.fact_id]
    assert ids_of(memory.get(tenant, "u1", archived=True)) == [stale.fact_id]


def test_archives_every_tenant_of_its_namespace(
    chroma_path: Path, embedding: MiniLMEmbeddingFunction, clock: Clock, unique: str
) -> None:
    client = chromadb.PersistentClient(
        path=str(chroma_path), settings=Settings(anonymized_telemetry=False)
    )
    # Its own namespace: the sweep must not touch other tests' collections.
    memory = ChromaMemory(
        client,
        namespace=f"n{unique}",
        embedding_function=embedding,
        clock=clock,
        latency_budget_s=math.inf,
    )
    other = ChromaMemory(client, namespace=f"m{unique}", embedding_function=embedding, clock=clock)
    tenants = [f"a{unique}", f"b{unique}"]
    for tenant in tenants:
        apply(memory, [upsert(fact(tenant, "u1", "user", "likes", "jazz", event_id="e1"))])
        apply(other, [upsert(fact(tenant, "u1", "user", "likes", "jazz", event_id="e1"))])
    clock.now = T0 + timedelta(days=31)
    assert memory.archive_all_stale() == {tenant: 1 for tenant in tenants}
    assert all(len(other.get(tenant, "u1")) == 1 for tenant in tenants)


def test_tenants_never_see_each_other(memory: ChromaMemory, unique: str) -> None:
    tenant_a, tenant_b = f"a{unique}", f"b{unique}"
    secret: MemoryRecord = fact(tenant_a, "u1", "user", "pin", "1234", event_id="e1")
    apply(memory, [upsert(secret)])
    probe = vector(secret.text)
    assert ids_of(memory.query(tenant_a, "u1", embedding=probe)) == [secret.fact_id]
    assert memory.query(tenant_b, "u1", embedding=probe) == []
    assert memory.get(tenant_b, "u1") == []


def test_collection_names_are_valid_and_distinct(memory: ChromaMemory, unique: str) -> None:
    tenants = [f"a@b.{unique}", f"a-b.{unique}", f"a..b{unique}"]
    names = {collection_name(t) for t in tenants}
    names |= {collection_name(t, "shadow") for t in tenants}
    names |= {collection_name(t, archive=True) for t in tenants}
    assert len(names) == 9
    for tenant in tenants:  # Chroma itself rejects an invalid name
        memory.collection(tenant)


def test_erase_user_empties_live_and_archive(
    memory: ChromaMemory, clock: Clock, unique: str
) -> None:
    tenant = f"t{unique}"
    old = fact(tenant, "u1", "user", "likes", "jazz", event_id="e1")
    apply(memory, [upsert(old)])
    clock.now = T0 + timedelta(days=31)
    assert memory.archive_stale(tenant) == 1
    keep = fact(tenant, "u2", "user", "likes", "tea", event_id="e2")
    recent = fact(tenant, "u1", "user", "likes", "tea", event_id="e3", at=clock.now)
    apply(memory, [upsert(keep), upsert(recent)])
    apply(memory, [op(OpType.ERASE_USER, tenant, "u1", event_id="forget")])
    assert memory.get(tenant, "u1") == []
    assert memory.get(tenant, "u1", archived=True) == []
    assert ids_of(memory.get(tenant, "u2")) == [keep.fact_id]


def with_turn(record: MemoryRecord, turn_id: str) -> MemoryRecord:
    return record.model_copy(
        update={"lineage": record.lineage.model_copy(update={"turn_id": turn_id})}
    )


def test_the_turn_id_of_the_lineage_is_read_back(memory: ChromaMemory, unique: str) -> None:
    tenant = f"t{unique}"
    tea = with_turn(fact(tenant, "u1", "user", "likes", "tea", event_id="e1"), f"turn-{unique}")
    jazz = fact(tenant, "u1", "user", "likes", "jazz", event_id="e2")  # no turn id
    apply(memory, [upsert(tea), upsert(jazz)])
    stored = {h.fact_id: h.lineage for h in memory.get(tenant, "u1")}
    assert stored == {tea.fact_id: tea.lineage, jazz.fact_id: jazz.lineage}
    [hit] = memory.query(tenant, "u1", embedding=vector(tea.text), k=1)
    assert hit.lineage is not None and hit.lineage.turn_id == f"turn-{unique}"


def test_reads_of_an_unknown_tenant_create_nothing(memory: ChromaMemory, unique: str) -> None:
    guessed = f"guess{unique}"
    probe = vector("user likes tea")
    assert memory.query(guessed, "u1", embedding=probe) == []
    assert memory.get(guessed, "u1") == []
    assert memory.get(guessed, "u1", archived=True) == []
    assert memory.chain(guessed, "u1", "user", "likes") == []
    assert memory.archive_stale(guessed) == 0
    apply(memory, [op(OpType.ERASE_USER, guessed, "u1", event_id="forget")])
    existing = {c.name for c in memory.client.list_collections()}
    for archive in (False, True):
        assert collection_name(guessed, archive=archive) not in existing


def test_get_at_a_time_reads_only_the_versions_current_then(
    memory: ChromaMemory, unique: str
) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    expired = fact(
        tenant, "u1", "user", "mood", "tired", event_id="e9", expires_at=T0 + timedelta(days=2)
    )
    apply(memory, [*ops, upsert(expired)])
    early = memory.get(tenant, "u1", at=T0 + timedelta(days=1))
    assert set(ids_of(early)) == {old.fact_id, expired.fact_id}
    assert ids_of(memory.get(tenant, "u1", at=T1 + timedelta(days=1))) == [new.fact_id]


def test_chain_reads_one_chain_live_and_archived_in_version_order(
    memory: ChromaMemory, clock: Clock, unique: str
) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    other = fact(tenant, "u1", "user", "likes", "tea", event_id="e7")
    other_user = fact(tenant, "u2", "user", "phone_number", "555-0199", event_id="e8")
    apply(memory, [*ops, upsert(other), upsert(other_user)])
    clock.now = T0 + timedelta(days=31)
    assert memory.archive_stale(tenant) == 4  # every version moves to the archive
    recent = fact(
        tenant,
        "u1",
        "user",
        "phone_number",
        "555-0300",
        event_id="e9",
        at=clock.now,
        version=3,
        supersedes=new.fact_id,
    )
    apply(memory, [upsert(recent)])
    chain = memory.chain(tenant, "u1", "User", "PHONE_NUMBER")  # chain ids ignore case
    assert ids_of(chain) == [old.fact_id, new.fact_id, recent.fact_id]
    assert [h.version for h in chain] == [1, 2, 3]


def test_retrieval_time_is_rewritten_at_most_once_a_day(
    memory: ChromaMemory, clock: Clock, unique: str
) -> None:
    tenant = f"t{unique}"
    tea = fact(tenant, "u1", "user", "likes", "tea", event_id="e1")
    apply(memory, [upsert(tea)])  # written at T0: last retrieved T0

    def last_retrieved() -> object:
        [hit] = memory.get(tenant, "u1")
        return hit.extra["last_retrieved_at"]

    clock.now = T0 + timedelta(hours=20)
    memory.query(tenant, "u1", embedding=vector(tea.text))
    assert last_retrieved() == T0.timestamp()
    clock.now = T0 + timedelta(days=2)
    memory.query(tenant, "u1", embedding=vector(tea.text))
    assert last_retrieved() == clock.now.timestamp()


def _flat(meta: dict[str, object]) -> tuple[dict[str, object], str]:
    """The one-key-per-field metadata and the document the writer stored before PACKED_KEY."""
    fields = json.loads(str(meta.pop(PACKED_KEY)))
    text = fields.pop("text")  # the statement was the item's document
    return {**fields, **meta, "tier": "episodic", "time": meta["valid_from"]}, text


def test_versions_stored_one_key_per_field_read_alike_and_move_to_the_packed_layout(
    memory: ChromaMemory, unique: str, clock: Clock
) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    apply(memory, ops)
    live = memory.collection(tenant)
    written = live.get(include=["metadatas", "embeddings", "documents"])
    expected = sorted(memory.get(tenant, "u1"), key=lambda h: h.fact_id)
    # Filters only name keys of their own; everything else is packed into one,
    # the statement too (no document: nothing searches Chroma's full-text index).
    for meta in written["metadatas"] or []:
        assert PACKED_KEY in meta and "chain_id" not in meta and "lineage_offset" not in meta
    assert written["documents"] == [None, None]
    # The same versions as an earlier writer left them: they read alike ...
    flat = [_flat(dict(m)) for m in written["metadatas"] or []]
    live.upsert(
        ids=written["ids"],
        embeddings=written["embeddings"],
        metadatas=[m for m, _ in flat],  # type: ignore[misc]
        documents=[text for _, text in flat],
    )
    [stored] = live.get(ids=[new.fact_id], include=["metadatas"])["metadatas"] or [{}]
    assert "chain_id" in stored
    assert sorted(memory.get(tenant, "u1"), key=lambda h: h.fact_id) == expected
    assert memory.chain(tenant, "u1", new.subject, new.predicate)[-1].fact_id == new.fact_id
    # ... and a redelivery rewrites them in the packed layout, keeping the close.
    clock.now = T1 + timedelta(days=1)
    apply(memory, ops)
    rewritten = live.get(include=["metadatas"])["metadatas"] or []
    assert all(PACKED_KEY in m and "chain_id" not in m and "tier" not in m for m in rewritten)
    assert sorted(memory.get(tenant, "u1"), key=lambda h: h.fact_id) == expected


def test_a_user_larger_than_a_page_is_read_archived_and_erased_whole(
    memory: ChromaMemory, clock: Clock, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One get of 100,000 items overflowed SQLite's variables; reads go a page
    # at a time (connectors/chroma_reads.py). Three items a page here.
    monkeypatch.setattr(chroma_reads, "PAGE", 3)
    tenant = f"t{unique}"
    likes = [f"band{i}" for i in range(8)]
    records = [
        fact(tenant, "u1", "user", "likes", value, event_id=f"e{i}")
        for i, value in enumerate(likes)
    ]
    other = fact(tenant, "u2", "user", "likes", "tea", event_id="e-other")
    apply(memory, [upsert(r) for r in [*records, other]])
    expected = sorted(r.fact_id for r in records)
    assert sorted(ids_of(memory.get(tenant, "u1"))) == expected
    with_vectors = memory.user_facts(tenant, "u1")
    assert sorted(h.fact_id for h, _ in with_vectors) == expected
    assert all(len(v) == len(records[0].encoding.combined) for _, v in with_vectors)  # type: ignore[union-attr]
    clock.now = T0 + timedelta(days=31)
    assert memory.count_stale(tenant) == 9
    assert memory.archive_stale(tenant) == 9
    assert sorted(ids_of(memory.get(tenant, "u1", archived=True))) == expected
    apply(memory, [op(OpType.ERASE_USER, tenant, "u1", event_id="forget")])
    assert memory.get(tenant, "u1", archived=True) == []
    assert ids_of(memory.get(tenant, "u2", archived=True)) == [other.fact_id]
