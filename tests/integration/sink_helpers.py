"""Helpers of the sink-job tests: an operation stream made by the real reviewer, store snapshots.

The stream is what the ingest job would produce for hand-made extracted facts:
dialogue turns (working memory), facts whose values change (version chains
with closes), negated facts, and authoritative CRM facts (promoted to Neo4j).
``snapshot`` reads a tenant's memory back from all three stores in a form that
compares equal across store namespaces and write times.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import redis

from connectors import kafka_admin
from connectors.chroma_memory import ChromaMemory
from connectors.kafka_io import KeyedProducer, end_offsets
from connectors.kafka_offsets import OffsetReader, OffsetsUnavailable
from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisMemory, RedisSpool
from jobs.sink.job import SinkConfig, SinkJob, open_lanes
from jobs.sink.lane import StoreLane, spool_namespace
from jobs.stores import Stores
from memstream.settings import Settings
from pipelines.review import Reviewer
from schemas.events import CrmWebhook, DialogueEvent, InputEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, Polarity, Tier
from schemas.ops import MemoryOperation
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, MEMORY_DLQ, MEMORY_OPS, Topics

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DIM = 384  # MiniLM's width, as the encode stage's combined vector
# Values a changing fact cycles through: every event opens a new version.
TIMES = ("morning", "afternoon", "evening")
# A sink that has not applied a few hundred operations within this is stuck
# (they take a few seconds on the 2-core dev machine).
CATCH_UP_TIMEOUT_S = 90.0


def vector(text: str) -> list[float]:
    """A deterministic unit vector per text (stands in for the encode stage)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    values = np.random.default_rng(seed).standard_normal(DIM)
    return [float(v) for v in values / np.linalg.norm(values)]


@dataclass(frozen=True)
class Stream:
    """The operations of a made-up stream and whom they are about."""

    tenant: str
    users: tuple[str, ...]
    sessions: tuple[str, ...]
    ops: list[MemoryOperation]

    def fact_versions(self) -> set[str]:
        """Every fact id an upsert or close writes."""
        return {op.record.fact_id for op in self.ops if op.record and op.op_type != "add_pending"}

    def semantic_versions(self) -> list[str]:
        """Fact ids of the versions addressed to Neo4j, sorted."""
        return sorted(
            {
                op.record.fact_id
                for op in self.ops
                if op.record and Tier.SEMANTIC in op.tiers and op.op_type != "add_pending"
            }
        )


def _fact(event: InputEvent, subject: str, predicate: str, obj: str, **extra: Any) -> ExtractedFact:
    negated = extra.get("polarity") is Polarity.NEGATED
    text = f"{subject} {'NOT ' if negated else ''}{predicate} {obj}"
    return ExtractedFact(
        tenant_id=event.tenant_id,
        user_id=event.user_id,
        session_id=getattr(event, "session_id", None),
        event_id=event.event_id,
        event_ts=event.ts,
        subject=subject,
        predicate=predicate,
        object=obj,
        text=text,
        **{"confidence": 0.95, **extra},
    )


def _events(tenant: str, user: str, turns: int) -> Iterable[tuple[InputEvent, list[ExtractedFact]]]:
    session = f"{user}-s1"
    for i in range(turns):
        at = T0 + timedelta(minutes=i)
        turn = DialogueEvent(
            event_id=f"{user}-d{i}",
            tenant_id=tenant,
            user_id=user,
            ts=at,
            session_id=session,
            turn_index=i,
            role=Role.USER,
            text=f"turn {i}: call me in the {TIMES[i % len(TIMES)]}",
        )
        facts = [
            _fact(turn, "user", "call_time", TIMES[i % len(TIMES)], kind=MemoryKind.PREFERENCE)
        ]
        if i % 4 == 0:
            facts.append(
                _fact(turn, "installation", "on_day", f"day-{i}", polarity=Polarity.NEGATED)
            )
        if i % 6 == 3:  # below the commit threshold: held for confirmation
            facts.append(_fact(turn, "user", "budget", f"{i}0 EUR", confidence=0.6))
        yield turn, facts
        if i % 5 == 4:
            crm = CrmWebhook(
                event_id=f"{user}-c{i}",
                tenant_id=tenant,
                user_id=user,
                ts=at + timedelta(seconds=30),
                source="crm",
                entity="contact",
                changes={"phone": {"old": None, "new": f"555-{i:04d}"}},
            )
            phone = _fact(
                crm,
                "user",
                "phone",
                f"555-{i:04d}",
                confidence=1.0,
                asserted_by=Assertor.CRM,
                authoritative=True,
            )
            yield crm, [phone]


def make_stream(tenant: str, users: Sequence[str], turns: int) -> Stream:
    """Run the real reviewer over ``turns`` dialogue turns (plus CRM changes) per user."""
    reviewer = Reviewer()
    ops: list[MemoryOperation] = []
    offsets = {DIALOGUE_EVENTS: 0, CRM_WEBHOOKS: 0}
    for user in users:
        state = reviewer.new_state()
        for event, facts in _events(tenant, user, turns):
            topic = DIALOGUE_EVENTS if isinstance(event, DialogueEvent) else CRM_WEBHOOKS
            lineage = SourceLineage(
                topic=topic, partition=0, offset=offsets[topic], event_id=event.event_id
            )
            offsets[topic] += 1
            encodings = [Encoding(combined=vector(f.text)) for f in facts]
            ops += reviewer.apply(state, event, lineage, facts, encodings)
    return Stream(tenant, tuple(users), tuple(f"{u}-s1" for u in users), ops)


def publish_ops(bootstrap: str, topic: str, ops: Iterable[MemoryOperation]) -> int:
    """Send operations keyed ``tenant:user`` (as the ingest job does); returns how many."""
    producer = KeyedProducer(bootstrap, client_id="memstream-sink-test")
    sent = 0
    for op in ops:
        producer.send(topic, op.model_dump_json().encode(), key=f"{op.tenant_id}:{op.user_id}")
        sent += 1
    producer.flush()
    return sent


def snapshot(
    stream: Stream, redis_memory: RedisMemory, chroma: ChromaMemory, neo4j: Neo4jMemory
) -> dict[str, Any]:
    """A tenant's memory in every store, without namespaces and write-time fields."""
    tenant = stream.tenant
    working = {
        user: {
            "turns": [
                t.model_dump(mode="json")
                for s in stream.sessions
                for t in redis_memory.recent_turns(tenant, user, s)
            ],
            "pending": sorted(h.fact_id for h in redis_memory.pending(tenant, user, at=T0)),
        }
        for user in stream.users
    }
    episodic = {
        user: [h.model_dump(mode="json", exclude={"extra"}) for h in chroma.get(tenant, user)]
        for user in stream.users
    }
    graph = [
        {**row, "props": _without_ns(row["props"]), "target": _without_ns(row["target"])}
        for row in neo4j.snapshot(tenant)
    ]
    return {"working": working, "episodic": episodic, "semantic": sorted(graph, key=repr)}


def _without_ns(props: dict[str, Any]) -> dict[str, Any]:
    return {k: str(v) for k, v in props.items() if k != "ns"}


def fact_nodes(neo4j: Neo4jMemory, tenant: str) -> list[str]:
    """The fact_id of every Fact node of a tenant in the writer's namespace, duplicates kept."""
    records, _, _ = neo4j.driver.execute_query(
        "MATCH (f:Fact {ns: $ns, tenant_id: $tenant}) RETURN f.fact_id AS fact_id",
        ns=neo4j.namespace,
        tenant=tenant,
    )
    return sorted(str(r["fact_id"]) for r in records)


def create_topics(bootstrap: str, namespace: str, partitions: int = 3) -> None:
    """The namespace's ``memory.ops`` and ``memory.dlq``."""
    specs = [
        kafka_admin.TopicSpec(Topics(namespace).name(t), partitions)
        for t in (MEMORY_OPS, MEMORY_DLQ)
    ]
    kafka_admin.ensure_topics(bootstrap, specs)


def delete_topics(bootstrap: str, namespace: str) -> None:
    """Delete the namespace's topics and consumer groups (its sinks' groups share the prefix)."""
    mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
    kafka_admin.delete_topics(bootstrap, mine)
    # A group left behind shows up in `memstream lag` and on the dashboard forever.
    kafka_admin.delete_groups_with_prefix(bootstrap, namespace)


def caught_up(bootstrap: str, group: str, topic: str) -> bool:
    """Whether ``group`` has committed the end of every partition of ``topic``."""
    try:
        positions = OffsetReader(bootstrap).committed(group)
    except OffsetsUnavailable:
        return False
    ends = end_offsets(bootstrap, topic)
    return all(positions.get((topic, p), 0) == end for p, end in ends.items())


def spools_empty(redis_url: str, store_namespace: str) -> bool:
    """Whether no store's Redis spool holds operations still to be drained.

    A store that fell back (slow under load) holds its operations in the spool
    after the group has committed them: caught up is not yet applied.
    """
    client = redis.Redis.from_url(redis_url)
    try:
        return all(
            RedisSpool(client, namespace=spool_namespace(store_namespace, store)).spool_depth() == 0
            for store in ("chroma", "neo4j")
        )
    finally:
        client.close()


def committed_count(bootstrap: str, group: str, topic: str) -> int:
    """How many records of ``topic`` the group has committed past, over all partitions."""
    positions = OffsetReader(bootstrap).committed(group)
    return sum(offset for (t, _), offset in positions.items() if t == topic)


def wait_until(
    condition: Callable[[], bool], what: str, timeout_s: float = CATCH_UP_TIMEOUT_S
) -> None:
    """Poll ``condition`` every 0.2 s; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class InProcessSink:
    """A SinkJob on its own thread: ``start()``, then ``stop()`` re-raises what it raised."""

    def __init__(self, config: SinkConfig, lanes: Sequence[StoreLane]) -> None:
        self.job = SinkJob(config, lanes)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sink-under-test", daemon=True)

    def _run(self) -> None:
        try:
            self.job.run(self._stop)
        except BaseException as exc:  # handed to the test thread by stop()
            self._error = exc

    def start(self) -> InProcessSink:
        """Start consuming."""
        self._thread.start()
        return self

    def alive(self) -> bool:
        """Whether the job is still running (it stops early only by raising)."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop after the batch in hand; re-raise the job's error if it had one."""
        self._stop.set()
        self._thread.join(timeout=60)
        if self._error is not None:
            raise self._error


def run_to_end(config: SinkConfig, lanes: Sequence[StoreLane]) -> None:
    """Run a sink job until its group has committed the end of ``memory.ops`` and applied it.

    Committed is not yet applied when a store fell back to its spool (slow on
    a busy machine): the spools must be empty too.
    """
    sink = InProcessSink(config, lanes).start()
    redis_url, store_namespace = config.settings.redis.url, config.store_namespace or ""
    try:
        topic = config.topic(MEMORY_OPS)
        wait_until(
            lambda: (
                not sink.alive()
                or (
                    caught_up(config.bootstrap, config.group, topic)
                    and spools_empty(redis_url, store_namespace)
                )
            ),
            f"{config.group} to apply {topic}",
        )
    finally:
        sink.stop()


def config_for(
    settings: Settings, namespace: str, store_namespace: str, chroma_path: Path, **overrides: Any
) -> SinkConfig:
    """A sink config on the namespace's topics, its own stores and an embedded Chroma at a path.

    ``neo4j_uri`` among ``overrides`` points the stores at another Neo4j.
    """
    chroma = settings.chroma.model_copy(update={"mode": "embedded", "path": chroma_path})
    update: dict[str, Any] = {"chroma": chroma}
    if (neo4j_uri := overrides.pop("neo4j_uri", None)) is not None:
        update["neo4j"] = settings.neo4j.model_copy(update={"uri_override": neo4j_uri})
    return SinkConfig.from_settings(
        settings.model_copy(update=update),
        topic_namespace=namespace,
        store_namespace=store_namespace,
        **overrides,
    )


def reference_state(settings: Settings, namespace: str, stream: Stream, path: Path) -> object:
    """The stores after a fault-free in-process run over the namespace's whole ``memory.ops``.

    It runs as its own group on its own store namespace and Chroma directory.
    """
    config = config_for(settings, namespace, f"ref{stream.tenant}", path, group_id="reference")
    run_to_end(config, open_lanes(config))
    return snapshot(stream, *readers(config))


def readers(config: SinkConfig) -> Stores:
    """Readers of the stores a sink config writes (``jobs.stores.open_stores``)."""
    return config.open_stores()
