"""Working memory and spool against a real Redis."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
import redis
from tier_ops import T0, fact, held, op, turn_op

from connectors.protocols import BackpressureError, MemorySink
from connectors.redis_memory import DEFAULT_PENDING_TTL, RedisMemory, RedisSpool
from schemas.memory import Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(redis_url, decode_responses=True)
    yield conn
    conn.close()


@pytest.fixture
def memory(client: redis.Redis) -> RedisMemory:
    sink = RedisMemory(client, latency_budget_s=math.inf)  # tests never depend on timing
    sink.setup()
    return sink


def apply(sink: RedisMemory, ops: list[MemoryOperation]) -> None:
    sink.write(ops)
    sink.flush()


def test_is_a_memory_sink(memory: RedisMemory) -> None:
    assert isinstance(memory, MemorySink)


def test_keeps_the_last_five_turns_per_session(memory: RedisMemory, unique: str) -> None:
    tenant = f"t{unique}"
    apply(memory, [turn_op(tenant, "u1", "s1", i) for i in range(8)])
    apply(memory, [turn_op(tenant, "u1", "s2", 0)])
    assert [t.turn_index for t in memory.recent_turns(tenant, "u1", "s1")] == [3, 4, 5, 6, 7]
    # A replayed old turn and a repeated recent one change nothing.
    apply(memory, [turn_op(tenant, "u1", "s1", 1), turn_op(tenant, "u1", "s1", 7)])
    turns = memory.recent_turns(tenant, "u1", "s1")
    assert [t.turn_index for t in turns] == [3, 4, 5, 6, 7]
    assert turns[-1].text == "turn 7"
    assert [t.turn_index for t in memory.recent_turns(tenant, "u1", "s2")] == [0]


def test_status_keys_expire_at_event_time_plus_ttl(
    memory: RedisMemory, client: redis.Redis, unique: str
) -> None:
    tenant = f"t{unique}"
    now = datetime.now(UTC)
    live = StatusEntry(name="current_project", value="kitchen", ttl_s=600)
    gone = StatusEntry(name="mood", value="angry", ttl_s=60)
    apply(
        memory,
        [
            op(OpType.SET_STATUS, tenant, "u1", event_id="e1", at=now, status=live),
            # Stated two minutes ago with a one-minute TTL: already expired.
            op(
                OpType.SET_STATUS,
                tenant,
                "u1",
                event_id="e2",
                at=now - timedelta(minutes=2),
                status=gone,
            ),
        ],
    )
    assert memory.statuses(tenant, "u1") == {"current_project": "kitchen"}
    key = memory.keys.user(tenant, "u1", "status", "current_project")
    expected_ms = int((now + timedelta(seconds=600)).timestamp() * 1000)
    assert client.pexpiretime(key) == expected_ms
    assert 0 < cast(int, client.pttl(key)) <= 600_000


def test_pending_add_then_resolve(memory: RedisMemory, unique: str) -> None:
    tenant = f"t{unique}"
    record = held(
        fact(tenant, "u1", "user", "orders", "bacon burger", event_id="e1"),
        "contradicts diet=vegan",
    )
    add = op(OpType.ADD_PENDING, tenant, "u1", event_id="e1", record=record, tiers=[Tier.WORKING])
    apply(memory, [add])
    [item] = memory.pending(tenant, "u1", at=T0)
    assert item.fact_id == record.fact_id
    assert item.extra["reason"] == "fact_check: contradicts diet=vegan"
    assert item.extra["expires_at"] == (T0 + DEFAULT_PENDING_TTL).isoformat()
    assert memory.pending(tenant, "u1", at=T0 + DEFAULT_PENDING_TTL) == []

    resolve = op(
        OpType.RESOLVE_PENDING,
        tenant,
        "u1",
        event_id="e2",
        tiers=[Tier.WORKING],
        target_fact_id=record.fact_id,
        resolution="confirmed",
    )
    apply(memory, [resolve])
    assert memory.pending(tenant, "u1", at=T0) == []
    assert memory.resolution(tenant, "u1", record.fact_id) == "confirmed"
    # Replaying the add after the resolve does not queue the item again.
    apply(memory, [add])
    assert memory.pending(tenant, "u1", at=T0) == []


def test_expired_pending_items_are_dropped_when_the_next_one_arrives(
    memory: RedisMemory, client: redis.Redis, unique: str
) -> None:
    tenant = f"t{unique}"
    first = held(fact(tenant, "u1", "user", "lives_in", "Oslo", event_id="e1"), "low confidence")
    later = T0 + DEFAULT_PENDING_TTL + timedelta(days=1)
    second = held(fact(tenant, "u1", "user", "lives_in", "Rome", event_id="e2", at=later), "?")
    add = OpType.ADD_PENDING
    apply(memory, [op(add, tenant, "u1", event_id="e1", record=first, tiers=[Tier.WORKING])])
    apply(
        memory,
        [op(add, tenant, "u1", event_id="e2", at=later, record=second, tiers=[Tier.WORKING])],
    )
    items = memory.keys.user(tenant, "u1", "pending", "items")
    assert sorted(cast(list[str], client.hkeys(items))) == [second.fact_id]
    assert [h.fact_id for h in memory.pending(tenant, "u1", at=later)] == [second.fact_id]


def test_spool_drains_in_order_and_keeps_what_failed(client: redis.Redis, unique: str) -> None:
    spool = RedisSpool(client, namespace=f"spool{unique}")
    ops = [turn_op(f"t{unique}", "u1", "s1", i) for i in range(7)]
    spool.spool(ops[:4])
    spool.spool(ops[4:])
    assert spool.spool_depth() == 7

    def fail(batch: list[MemoryOperation]) -> None:
        raise ConnectionError("store still down")

    with pytest.raises(ConnectionError):
        spool.drain(fail, batch_size=3)
    assert spool.spool_depth() == 7

    batches: list[list[MemoryOperation]] = []

    def take(batch: list[MemoryOperation]) -> bool:
        batches.append(batch)
        return len(batches) != 2  # stop after the second batch: it leaves the spool

    assert spool.drain(take, batch_size=3) == 6
    assert spool.spool_depth() == 1
    assert spool.drain(take, batch_size=3) == 1
    assert [len(b) for b in batches] == [3, 3, 1]
    assert [o for b in batches for o in b] == ops
    assert spool.spool_depth() == 0


def test_namespace_and_tenant_isolation(client: redis.Redis, unique: str) -> None:
    tenant_a, tenant_b = f"a{unique}", f"b{unique}"
    live = RedisMemory(client, latency_budget_s=math.inf)
    shadow = RedisMemory(client, namespace=f"shadow{unique}", latency_budget_s=math.inf)
    record = fact(tenant_a, "u1", "user", "likes", "tea", event_id="e1")
    apply(
        live,
        [
            turn_op(tenant_a, "u1", "s1", 0),
            op(
                OpType.SET_STATUS,
                tenant_a,
                "u1",
                event_id="e2",
                at=datetime.now(UTC),
                status=StatusEntry(name="mood", value="calm", ttl_s=600),
            ),
            op(OpType.ADD_PENDING, tenant_a, "u1", event_id="e3", record=record),
        ],
    )
    assert len(live.recent_turns(tenant_a, "u1", "s1")) == 1
    for reader, tenant in ((live, tenant_b), (shadow, tenant_a)):
        assert reader.recent_turns(tenant, "u1", "s1") == []
        assert reader.statuses(tenant, "u1") == {}
        assert reader.pending(tenant, "u1", at=T0) == []


def test_erase_user_removes_only_that_user(memory: RedisMemory, unique: str) -> None:
    tenant = f"t{unique}"
    apply(memory, [turn_op(tenant, "u1", "s1", 0), turn_op(tenant, "u2", "s1", 0)])
    apply(memory, [op(OpType.ERASE_USER, tenant, "u1", event_id="forget", tiers=[Tier.WORKING])])
    assert memory.recent_turns(tenant, "u1", "s1") == []
    assert len(memory.recent_turns(tenant, "u2", "s1")) == 1


def test_unreachable_server_raises_backpressure_with_every_operation(unique: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = RedisMemory(redis.Redis(port=port, socket_connect_timeout=0.5), chunk_size=2)
    tenant = f"t{unique}"
    record = fact(tenant, "u1", "user", "likes", "tea", event_id="e1")
    # Operations for other tiers are never buffered, so they cannot fail here.
    sink.write(
        [op(OpType.UPSERT_FACT, tenant, "u1", event_id="e1", record=record, tiers=[Tier.SEMANTIC])]
    )
    sink.flush()
    ops = [turn_op(tenant, "u1", "s1", i) for i in range(3)]
    with pytest.raises(BackpressureError) as raised:
        sink.write(ops)  # the first full chunk (2 ops) fails: all 3 come back
    assert raised.value.store == "redis"
    assert raised.value.operations == ops
    sink.flush()  # the buffer was handed over with the error: nothing left to apply


def test_a_chunk_over_the_latency_budget_hands_back_the_rest(
    client: redis.Redis, unique: str
) -> None:
    # A zero budget: every chunk is "too slow", whatever the machine.
    sink = RedisMemory(client, chunk_size=1, latency_budget_s=0.0)
    tenant = f"t{unique}"
    ops = [turn_op(tenant, "u1", "s1", i) for i in range(3)]
    with pytest.raises(BackpressureError) as raised:
        sink.write(ops)
    assert raised.value.operations == ops[1:]
    assert [t.turn_index for t in sink.recent_turns(tenant, "u1", "s1")] == [0]


def test_an_operation_whose_record_names_another_tenant_is_refused(
    memory: RedisMemory, unique: str
) -> None:
    record = fact(f"a{unique}", "u1", "user", "likes", "tea", event_id="e1")
    forged = op(OpType.ADD_PENDING, f"b{unique}", "u1", event_id="e1", record=record)
    with pytest.raises(ValueError, match="record belongs to"):
        memory.write([forged])
    assert memory.pending(f"b{unique}", "u1", at=T0) == []
    assert memory.pending(f"a{unique}", "u1", at=T0) == []


def test_named_spools_are_separate_streams_beside_the_unnamed_one(
    client: redis.Redis, unique: str
) -> None:
    namespace = f"spool{unique}"
    unnamed = RedisSpool(client, namespace=namespace)
    chroma = RedisSpool(client, namespace=namespace, name="chroma")
    neo4j = RedisSpool(client, namespace=namespace, name="neo4j")
    assert unnamed.key == f"{namespace}:ms:spool"  # the key spools had before names
    ops = [turn_op(f"t{unique}", "u1", "s1", i) for i in range(3)]
    chroma.spool(ops)
    assert (chroma.spool_depth(), neo4j.spool_depth(), unnamed.spool_depth()) == (3, 0, 0)
    with pytest.raises(ValueError, match="spool name"):
        RedisSpool(client, namespace=namespace, name="a:b")


def test_peek_reads_the_oldest_operations_and_leaves_them(client: redis.Redis, unique: str) -> None:
    spool = RedisSpool(client, namespace=f"spool{unique}", name="chroma")
    ops = [turn_op(f"t{unique}", "u1", "s1", i) for i in range(5)]
    spool.spool(ops)
    assert spool.peek(2) == ops[:2]
    assert spool.peek(10) == ops
    assert spool.spool_depth() == 5
    assert RedisSpool(client, namespace=f"empty{unique}").peek(3) == []
