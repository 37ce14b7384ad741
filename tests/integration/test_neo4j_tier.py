"""Semantic memory against a real Neo4j (Bolt)."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from datetime import timedelta, timezone

import pytest
from tier_ops import T0, T1, fact, op, phone_change, upsert

from connectors.neo4j_memory import Neo4jMemory, Relation
from connectors.protocols import BackpressureError
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.ops import MemoryOperation, OpType


@pytest.fixture
def memory(neo4j_uri: str) -> Iterator[Neo4jMemory]:
    # No latency budget: tests never depend on timing.
    sink = Neo4jMemory.connect(
        neo4j_uri, clock=lambda: T1 + timedelta(days=1), latency_budget_s=math.inf
    )
    sink.setup()
    sink.setup()  # constraints are created idempotently
    yield sink
    sink.close()


def apply(sink: Neo4jMemory, ops: list[MemoryOperation]) -> None:
    sink.write(ops)
    sink.flush()


def ids_of(hits: list[SearchHit]) -> list[str]:
    return [h.fact_id for h in hits]


def test_phone_change_gives_an_ordered_chain_with_validity(
    memory: Neo4jMemory, unique: str
) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    apply(memory, ops)
    chain = memory.chain(tenant, "u1", "user", "phone_number")
    assert ids_of(chain) == [old.fact_id, new.fact_id]
    assert [(h.version, h.valid_from, h.valid_until) for h in chain] == [
        (1, T0, T1),
        (2, T1, None),
    ]
    assert chain[1].supersedes == old.fact_id
    assert chain[0].lineage == old.lineage
    edges = {
        (row["props"].get("fact_id"), row["rel"], row["target"].get("fact_id"))
        for row in memory.snapshot(tenant)
        if row["rel"] == "SUPERSEDES"
    }
    assert edges == {(new.fact_id, "SUPERSEDES", old.fact_id)}


def test_facts_as_of_a_time_and_now(memory: Neo4jMemory, unique: str) -> None:
    tenant = f"t{unique}"
    old, new, ops = phone_change(tenant, "u1")
    trip = fact(
        tenant,
        "u1",
        "user",
        "travels",
        "tomorrow",
        event_id="e3",
        kind=MemoryKind.STATUS,
        expires_at=T0 + timedelta(days=3, hours=19),
    )
    apply(memory, [*ops, upsert(trip)])
    assert ids_of(memory.facts_as_of(tenant, "u1", T0 - timedelta(hours=1))) == []
    assert set(ids_of(memory.facts_as_of(tenant, "u1", T0 + timedelta(days=1)))) == {
        old.fact_id,
        trip.fact_id,
    }
    # The trip expired (TTL) and the old number was closed: only the new number holds.
    assert ids_of(memory.facts_as_of(tenant, "u1", T1 + timedelta(hours=1))) == [new.fact_id]
    assert ids_of(memory.current_facts(tenant, "u1")) == [new.fact_id]
    # Expired and closed versions stay in history.
    assert len(memory.chain(tenant, "u1", "user", "travels")) == 1


def test_times_with_offsets_beyond_java_range_are_read_and_written(
    memory: Neo4jMemory, unique: str
) -> None:
    # Python and ISO 8601 allow UTC offsets up to ±23:59, java.time only ±18:00:
    # the connector sends instants in UTC (found by the OpenAPI fuzz test).
    far = timezone(-timedelta(hours=22, minutes=56))
    tenant = f"t{unique}"
    old, _, ops = phone_change(tenant, "u1")
    apply(memory, [*ops])
    at = (T0 + timedelta(days=1)).astimezone(far)
    assert ids_of(memory.facts_as_of(tenant, "u1", at)) == [old.fact_id]
    late = fact(tenant, "u2", "user", "city", "Oslo", event_id="e9", at=T0.astimezone(far))
    apply(memory, [upsert(late)])
    assert [h.valid_from for h in memory.chain(tenant, "u2", "user", "city")] == [T0]


def test_relation_style_access_by_family(memory: Neo4jMemory, unique: str) -> None:
    tenant = f"t{unique}"
    cilantro = fact(
        tenant,
        "u1",
        "user",
        "eats",
        "cilantro",
        event_id="e1",
        kind=MemoryKind.PREFERENCE,
        polarity=Polarity.NEGATED,
    )
    rule = fact(
        tenant, "u1", "installation_time", "NOT_IN", "weekend", event_id="e2", kind=MemoryKind.RULE
    )
    apply(memory, [upsert(cilantro), upsert(rule)])
    [pref] = memory.relations(tenant, "u1", Relation.PREFERENCE)
    assert (pref.object, pref.polarity) == ("cilantro", Polarity.NEGATED)
    assert ids_of(memory.relations(tenant, "u1", Relation.RESTRICTION)) == [rule.fact_id]
    assert memory.relations(tenant, "u1", Relation.COMMITMENT) == []


def test_cypher_injection_in_entity_names_is_stored_as_text(
    memory: Neo4jMemory, unique: str
) -> None:
    tenant, bystander = f"t{unique}", f"b{unique}"
    apply(memory, [upsert(fact(bystander, "u1", "user", "likes", "tea", event_id="e0"))])
    subject = "x'}) MATCH (n) DETACH DELETE n //"
    obj = '"}) WITH 1 AS x MATCH (m) DETACH DELETE m RETURN 1 //'
    hostile = fact(tenant, "u1", subject, "likes", obj, event_id="e1")
    apply(memory, [upsert(hostile)])
    assert memory.entity_names(tenant) == sorted([subject, obj])
    [stored] = memory.current_facts(tenant, "u1")
    assert (stored.subject, stored.object) == (subject, obj)
    assert memory.entity_names(bystander) == ["tea", "user"]


def test_tenants_never_see_each_other(memory: Neo4jMemory, unique: str) -> None:
    tenant_a, tenant_b = f"a{unique}", f"b{unique}"
    secret = fact(tenant_a, "u1", "user", "pin", "1234", event_id="e1")
    apply(memory, [upsert(secret)])
    # Tenant B replays an operation carrying tenant A's fact id: A's node is untouched.
    forged = secret.model_copy(update={"tenant_id": tenant_b, "object": "0000"})
    apply(memory, [upsert(forged)])
    [mine] = memory.current_facts(tenant_a, "u1")
    assert mine.object == "1234"
    assert memory.current_facts(tenant_b, "u1") == []
    assert memory.chain(tenant_b, "u1", "user", "pin") == []
    assert memory.entity_names(tenant_b) == []
    assert memory.snapshot(tenant_b) == []


def test_erase_user_forgets_facts_and_orphaned_entities(memory: Neo4jMemory, unique: str) -> None:
    tenant = f"t{unique}"
    apply(
        memory,
        [
            upsert(fact(tenant, "u1", "user", "likes", "tea", event_id="e1")),
            upsert(fact(tenant, "u1", "user", "pin", "1234", event_id="e2")),
            upsert(fact(tenant, "u2", "user", "likes", "tea", event_id="e3")),
        ],
    )
    erase = op(OpType.ERASE_USER, tenant, "u1", event_id="forget", tiers=[Tier.SEMANTIC])
    apply(memory, [erase])
    assert memory.current_facts(tenant, "u1") == []
    assert len(memory.current_facts(tenant, "u2")) == 1
    assert memory.entity_names(tenant) == ["tea", "user"]


def test_unreachable_server_raises_backpressure_with_every_operation(unique: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = Neo4jMemory.connect(f"bolt://127.0.0.1:{port}", retry_time_s=0.0)
    _, _, ops = phone_change(f"t{unique}", "u1")
    sink.write(ops)  # below one chunk: buffered, not yet sent
    with pytest.raises(BackpressureError) as raised:
        sink.flush()
    assert raised.value.store == "neo4j"
    assert raised.value.operations == ops
    sink.close()


def test_a_shadow_namespace_is_separate(memory: Neo4jMemory, neo4j_uri: str, unique: str) -> None:
    tenant = f"t{unique}"
    shadow = Neo4jMemory.connect(
        neo4j_uri, namespace=f"shadow{unique}", clock=memory.clock, latency_budget_s=math.inf
    )
    _, _, ops = phone_change(tenant, "u1")
    apply(memory, ops)
    assert shadow.current_facts(tenant, "u1") == []
    apply(shadow, ops[:1])  # the same fact ids again, in the shadow namespace
    assert len(shadow.chain(tenant, "u1", "user", "phone_number")) == 1
    assert len(memory.chain(tenant, "u1", "user", "phone_number")) == 2
    shadow.close()


def test_the_turn_id_of_the_lineage_is_stored_and_read_back(
    memory: Neo4jMemory, unique: str
) -> None:
    tenant = f"t{unique}"
    plain = fact(tenant, "u1", "user", "likes", "tea", event_id="e1")
    lineage = plain.lineage.model_copy(update={"turn_id": f"turn-{unique}"})
    tea = plain.model_copy(update={"lineage": lineage})
    jazz = fact(tenant, "u1", "user", "likes_music", "jazz", event_id="e2")  # no turn id
    apply(memory, [upsert(tea), upsert(jazz)])
    found = {h.fact_id: h.lineage for h in memory.facts_as_of(tenant, "u1", T1)}
    assert found == {tea.fact_id: lineage, jazz.fact_id: jazz.lineage}
    turn_ids = {
        r["props"]["fact_id"]: r["props"].get("lineage_turn_id")
        for r in memory.snapshot(tenant)
        if "Fact" in r["labels"]
    }
    assert turn_ids == {tea.fact_id: f"turn-{unique}", jazz.fact_id: None}
