"""Backpressure fallback against real stores: an outage and a slow store, mid-stream.

- Neo4j goes down: a PRIVATE Neo4j (started through ``infra`` with its own state
  dir and port, so the shared one other tests use is never touched) is stopped
  while the sink runs. Its operations go to the Redis spool in order while Redis
  and Chroma keep being written; once it is back the spool drains and the final
  memory equals a fault-free run.
- Chroma gets slower than the latency budget: the real ChromaMemory writer with
  a delay in front of each chunk. Its operations spool; without the delay they
  drain; the final memory equals a fault-free run.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sink_helpers import (
    InProcessSink,
    Stream,
    caught_up,
    config_for,
    create_topics,
    delete_topics,
    fact_nodes,
    make_stream,
    publish_ops,
    readers,
    reference_state,
    snapshot,
    wait_until,
)

import infra
from connectors.chroma_memory import ChromaMemory
from jobs.sink.job import SinkConfig, lanes_for, open_lanes
from jobs.sink.lane import StoreLane
from memstream.settings import Neo4jSettings, Settings
from pipelines.backpressure import BackpressureConfig, Mode, Trip
from schemas.memory import Tier
from schemas.ops import MemoryOperation
from schemas.topics import Topics

USERS = ("cy", "di")
# Probing a down store backs off up to 30 s by default; 1 s keeps the wait
# after the restore short without changing what is tested.
FAST_PROBES = BackpressureConfig(probe_initial_s=0.5, probe_max_s=1.0)
# Small batches: the stream spans many writes, so a fault lands mid-stream.
BATCH = 16
# A restarted Neo4j takes ~15 s to serve Bolt on the shared 2-core machine.
RESTORE_TIMEOUT_S = 120.0


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    """Private ``memory.ops`` / ``memory.dlq`` topics for one test."""
    prefix = f"outage-{unique}."
    create_topics(kafka_bootstrap, prefix)
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def activations(store: str) -> float:
    """Fallback activations of a store for any reason (a cold store may trip on slowness first)."""
    return sum(
        metric("memstream_sink_fallback_activations_total", store=store, reason=reason.value)
        for reason in Trip
    )


def lane(lanes: Sequence[StoreLane], name: str) -> StoreLane:
    return next(lane for lane in lanes if lane.name == name)


def spooled_ops(store_lane: StoreLane) -> list[MemoryOperation]:
    """What waits in a lane's spool, oldest first (read without draining)."""
    assert store_lane.fallback is not None
    spool = store_lane.fallback.spool
    entries = spool.client.xrange(spool.key, "-", "+")
    return [MemoryOperation.model_validate_json(fields["op"]) for _, fields in entries]  # type: ignore[union-attr]


def assert_in_stream_order(spooled: list[MemoryOperation], stream: Stream) -> None:
    """Per key (tenant:user), the spooled operations keep the order of the stream."""
    position = {op.op_id: i for i, op in enumerate(stream.ops)}
    for user in stream.users:
        mine = [position[op.op_id] for op in spooled if op.user_id == user]
        assert mine == sorted(mine), f"{user}'s operations spooled out of order"


@pytest.fixture
def private_neo4j(tmp_path: Path) -> Iterator[Settings]:
    """A Neo4j of this test's own: own state dir, own Bolt port; stopped at the end."""
    private = Settings(
        state_dir=tmp_path / "neo4j-state",
        neo4j=Neo4jSettings(bolt_port=free_port()),
    )
    infra.up(private, ["neo4j"])
    try:
        yield private
    finally:
        infra.down(private, ["neo4j"])


def test_neo4j_outage_spools_in_order_then_drains_to_the_fault_free_state(
    settings: Settings, namespace: str, unique: str, tmp_path: Path, private_neo4j: Settings
) -> None:
    bootstrap = settings.kafka.bootstrap
    stream = make_stream(f"t{unique}", USERS, turns=60)
    topic = Topics(namespace).memory_ops
    third = len(stream.ops) // 3
    config = config_for(
        settings,
        namespace,
        f"out{unique}",
        tmp_path / "chroma",
        neo4j_uri=private_neo4j.neo4j.uri,
        batch_size=BATCH,
        backpressure=FAST_PROBES,
    )
    lanes = open_lanes(config)
    neo4j_lane = lane(lanes, "neo4j")
    tripped = activations("neo4j")
    drains = metric("memstream_sink_drain_seconds_count", store="neo4j")

    sink = InProcessSink(config, lanes).start()
    try:
        publish_ops(bootstrap, topic, stream.ops[:third])
        wait_until(lambda: caught_up(bootstrap, config.group, topic), "the first third")

        infra.down(private_neo4j, ["neo4j"])
        publish_ops(bootstrap, topic, stream.ops[third:])
        wait_until(lambda: caught_up(bootstrap, config.group, topic), "the rest, Neo4j down")

        # Neo4j's operations wait in the spool, in order; the other stores are current.
        assert neo4j_lane.fallback is not None
        assert neo4j_lane.fallback.policy.mode is Mode.SPOOLING
        spooled = spooled_ops(neo4j_lane)
        assert spooled, "nothing was spooled while Neo4j was down"
        assert_in_stream_order(spooled, stream)
        after_outage = {op.op_id for op in stream.ops[third:] if Tier.SEMANTIC in op.tiers}
        assert after_outage <= {op.op_id for op in spooled}
        _, chroma, _ = readers(config)
        stored = {h.fact_id for user in USERS for h in chroma.get(stream.tenant, user)}
        assert stored == stream.fact_versions()
        assert lane(lanes, "chroma").fallback.policy.direct  # type: ignore[union-attr]
        assert activations("neo4j") > tripped

        infra.up(private_neo4j, ["neo4j"])
        wait_until(
            lambda: neo4j_lane.fallback is not None and neo4j_lane.fallback.policy.direct,
            "the spool to drain after the restore",
            RESTORE_TIMEOUT_S,
        )
        assert neo4j_lane.fallback.spool.spool_depth() == 0
    finally:
        sink.stop()
    assert metric("memstream_sink_drain_seconds_count", store="neo4j") > drains

    expected = reference_state(settings, namespace, stream, tmp_path / "ref-chroma")
    redis_memory, chroma, neo4j = readers(config)
    assert snapshot(stream, redis_memory, chroma, neo4j) == expected
    assert fact_nodes(neo4j, stream.tenant) == stream.semantic_versions()


class SlowChroma(ChromaMemory):
    """The real Chroma writer, made slow: each chunk waits ``delay_s`` before it is written."""

    delay_s = 0.0

    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        time.sleep(self.delay_s)
        super()._apply(ops)


def slow_chroma_lanes(config: SinkConfig) -> tuple[list[StoreLane], SlowChroma]:
    """The job's lanes with the Chroma writer swapped for a SlowChroma on the same store."""
    stores = config.open_stores()
    chroma = SlowChroma(
        stores.episodic.client,
        namespace=config.store_namespace,
        latency_budget_s=config.backpressure.latency_budget_s,
    )
    swapped = stores._replace(episodic=chroma)
    return lanes_for(swapped, config.store_namespace, config.backpressure), chroma


def test_slow_chroma_spools_then_drains_to_the_fault_free_state(
    settings: Settings, namespace: str, unique: str, tmp_path: Path
) -> None:
    bootstrap = settings.kafka.bootstrap
    stream = make_stream(f"t{unique}", USERS, turns=60)
    topic = Topics(namespace).memory_ops
    third = len(stream.ops) // 3
    config = config_for(
        settings,
        namespace,
        f"slow{unique}",
        tmp_path / "chroma",
        batch_size=BATCH,
        backpressure=FAST_PROBES,
    )
    lanes, chroma = slow_chroma_lanes(config)
    chroma_lane = lane(lanes, "chroma")
    assert chroma_lane.fallback is not None
    tripped = metric("memstream_sink_fallback_activations_total", store="chroma", reason="slow")

    sink = InProcessSink(config, lanes).start()
    try:
        publish_ops(bootstrap, topic, stream.ops[:third])
        wait_until(lambda: caught_up(bootstrap, config.group, topic), "the first third")
        assert chroma_lane.fallback.policy.direct
        # A Neo4j just started by the suite can be slow on its first writes and
        # spool them too: this test is about Chroma, so it starts from both direct.
        neo4j_lane = lane(lanes, "neo4j")
        assert neo4j_lane.fallback is not None
        wait_until(lambda: neo4j_lane.fallback.policy.direct, "Neo4j writing directly")  # type: ignore[union-attr]

        # Over the 200 ms budget (and over it again while draining).
        chroma.delay_s = 1.5 * config.backpressure.latency_budget_s
        publish_ops(bootstrap, topic, stream.ops[third:])
        wait_until(lambda: caught_up(bootstrap, config.group, topic), "the rest, Chroma slow")

        assert chroma_lane.fallback.policy.mode is Mode.SPOOLING
        spooled = spooled_ops(chroma_lane)
        assert spooled, "nothing was spooled while Chroma was slow"
        assert_in_stream_order(spooled, stream)
        # Neo4j was never slowed: it writes directly (after a drain, if the busy
        # machine made one of its writes slow).
        wait_until(lambda: neo4j_lane.fallback.policy.direct, "Neo4j writing directly")  # type: ignore[union-attr]
        _, _, neo4j = readers(config)
        assert fact_nodes(neo4j, stream.tenant) == stream.semantic_versions()
        assert (
            metric("memstream_sink_fallback_activations_total", store="chroma", reason="slow")
            == tripped + 1
        )

        chroma.delay_s = 0.0
        wait_until(lambda: chroma_lane.fallback.policy.direct, "the spool to drain")  # type: ignore[union-attr]
        assert chroma_lane.fallback.spool.spool_depth() == 0
    finally:
        sink.stop()

    expected = reference_state(settings, namespace, stream, tmp_path / "ref-chroma")
    assert snapshot(stream, *readers(config)) == expected
