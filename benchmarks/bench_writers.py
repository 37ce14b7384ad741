"""Operations/s of the Redis, Chroma and Neo4j tier writers beside plain inserts.

For each store, in one run against the real services:

- ``writer batched``   — the connector applying N operations in chunks of ``--chunk``;
- ``writer replay``    — the same N operations again (idempotent: nothing changes);
- ``mix batched``      — the pipeline's mix (``mixed_ops``: turns, episodes with
  vectors, fact versions with closes and outdated marks, statuses, pending items,
  erasures) as the sink feeds it; ``ops`` counts only the operations addressed to
  the writer's tier (the writer skips the rest), so working-memory traffic does not
  inflate the rate;
- ``mix replay``       — the same mix again;
- ``writer op-by-op``  — the connector with chunk size 1, on versions of its own
  (a smaller sample, once);
- ``baseline``         — the plainest insert of the same data in the same chunks:
  pipelined HSET (Redis), ``collection.add`` with the vectors given (Chroma),
  ``UNWIND … CREATE`` (Neo4j). Chroma's baseline adds the distinct versions only
  (the writer's CLOSE operations update versions it already holds), so its ops
  column is smaller.

The fact operations form version chains of 4 (each new version closes the last),
the working-memory ones are 4 turns per status update, over 20 users.

The machine is shared and its load moves within seconds, so the Chroma and Neo4j
rows run ``--rounds`` times (each round on tenants of its own, its baseline
right after its writer rows) and the table gives the median round, the slowest
and fastest, and the load average before and after.

Run (services from ``memstream infra up``)::

    python benchmarks/bench_writers.py [--ops 2000] [--chunk 256] [--rounds 3]
        [--chroma-url http://127.0.0.1:8000]   # a `chroma run` server, not embedded

Everything the run writes lives under a random tenant and is removed at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from urllib.parse import urlsplit

import chromadb
import neo4j
import numpy as np
import redis
from chromadb.config import Settings

from connectors.chroma_memory import ChromaMemory
from connectors.embedding import MiniLMEmbeddingFunction
from connectors.neo4j_memory import Neo4jMemory
from connectors.protocols import MemorySink
from connectors.redis_memory import RedisMemory
from schemas import ids
from schemas.episodes import Episode
from schemas.events import Role
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry, WorkingTurn

T = TypeVar("T")
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DIM = 384  # MiniLM width, as the encode stage's text vectors
USERS = 20  # operations spread over this many users, as a partition's keys would be


@dataclass
class Row:
    store: str
    method: str
    ops: int
    seconds: float
    fed: int | None = None  # operations given to the writer, when more than ``ops``
    rounds: tuple[float, ...] = ()  # every round's seconds, when there were several


def medians(rows: Sequence[Row]) -> list[Row]:
    """One row per (store, method), in first-seen order, at the median of its rounds."""
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        grouped.setdefault((row.store, row.method), []).append(row)
    return [
        Row(
            first.store,
            first.method,
            first.ops,
            float(np.median([r.seconds for r in same])),
            first.fed,
            tuple(r.seconds for r in same),
        )
        for first, same in ((same[0], same) for same in grouped.values())
    ]


def _lineage(i: int) -> SourceLineage:
    return SourceLineage(topic="dialogue.events", partition=0, offset=i, event_id=f"e{i}")


def fact_ops(tenant: str, n: int, rng: np.random.Generator) -> list[MemoryOperation]:
    """N fact versions: chains of 4 versions, each new version closing the previous one."""
    vectors = rng.standard_normal((n, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ops: list[MemoryOperation] = []
    previous: dict[str, MemoryRecord] = {}
    for i in range(n):
        user, subject = f"u{i % USERS}", f"topic{(i // USERS) // 4}"
        chain = ids.chain_id(tenant, user, subject, "is")
        at = T0 + timedelta(minutes=i)
        old = previous.get(chain)
        record = MemoryRecord(
            fact_id=ids.fact_id(chain, f"e{i}", f"value{i}", "affirmed"),
            chain_id=chain,
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            subject=subject,
            predicate="is",
            object=f"value{i}",
            kind=MemoryKind.FACT,
            text=f"{subject} is value{i}",
            confidence=0.9,
            valid_from=at,
            recorded_at=at,
            version=old.version + 1 if old else 1,
            supersedes=old.fact_id if old else None,
            lineage=_lineage(i),
            encoding=Encoding(combined=[float(v) for v in vectors[i]]),
        )
        if old is not None:
            closed = old.model_copy(update={"valid_until": at})
            ops.append(_op(OpType.CLOSE_FACT, i, 0, tenant, user, at, record=closed))
        ops.append(_op(OpType.UPSERT_FACT, i, 1, tenant, user, at, record=record))
        previous[chain] = record
    return ops[:n]


def mixed_ops(tenant: str, n: int, rng: np.random.Generator) -> list[MemoryOperation]:
    """N operations in the pipeline's mix, each addressed to the tiers route.py gives it.

    Per turn: the turn (working), its episode with a vector (episodic); two turns
    in three carry a fact version (episodic and semantic) which, past a chain's
    first version, closes the previous version and outdates that version's
    episode. Every 5th turn also sets a status, every 7th queues a pending
    item (working), and every 400th erases a user (all tiers).
    """
    working, both, all_tiers = [Tier.WORKING], [Tier.EPISODIC, Tier.SEMANTIC], list(Tier)
    vectors = rng.standard_normal((n, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ops: list[MemoryOperation] = []
    previous: dict[str, tuple[MemoryRecord, str]] = {}
    for i in range(n):
        user, at, event = f"u{i % USERS}", T0 + timedelta(minutes=i), f"e{i}"
        vector = [float(v) for v in vectors[i]]
        turn = WorkingTurn(session_id="s1", turn_index=i, role="user", text=f"turn {i}", ts=at)
        ops.append(_op(OpType.APPEND_TURN, i, 0, tenant, user, at, tiers=working, turn=turn))
        episode = Episode(
            episode_id=ids.episode_id(tenant, user, event),
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            turn_index=i,
            role=Role.USER,
            text=f"turn {i} about topic{i % 13}",
            ts=at,
            lineage=_lineage(i),
            vector=vector,
        )
        ops.append(
            _op(
                OpType.UPSERT_EPISODE,
                i,
                1,
                tenant,
                user,
                at,
                tiers=[Tier.EPISODIC],
                episode=episode,
            )
        )
        if i % 3 != 2:
            subject = f"topic{(i // USERS) % 13}"
            chain = ids.chain_id(tenant, user, subject, "is")
            old = previous.get(chain)
            record = _record(tenant, user, subject, i, at, vector, old[0] if old else None)
            if old is not None:
                closed = old[0].model_copy(update={"valid_until": at})
                ops.append(
                    _op(OpType.CLOSE_FACT, i, 2, tenant, user, at, tiers=both, record=closed)
                )
                ops.append(
                    _op(
                        OpType.OUTDATE_EPISODE,
                        i,
                        3,
                        tenant,
                        user,
                        at,
                        tiers=[Tier.EPISODIC],
                        target_fact_id=old[1],
                        superseded_by=episode.episode_id,
                    )
                )
            ops.append(_op(OpType.UPSERT_FACT, i, 4, tenant, user, at, tiers=both, record=record))
            previous[chain] = (record, episode.episode_id)
        if i % 5 == 4:
            status = StatusEntry(name=f"s{i % 7}", value=i, ttl_s=3600)
            ops.append(_op(OpType.SET_STATUS, i, 5, tenant, user, at, tiers=working, status=status))
        if i % 7 == 6:
            pending = _record(tenant, user, f"maybe{i}", i, at, vector, None)
            ops.append(
                _op(OpType.ADD_PENDING, i, 6, tenant, user, at, tiers=working, record=pending)
            )
        if i % 400 == 399:
            ops.append(_op(OpType.ERASE_USER, i, 7, tenant, user, at, tiers=all_tiers))
            previous = {c: v for c, v in previous.items() if v[0].user_id != user}
    return ops[:n]


def _record(
    tenant: str,
    user: str,
    subject: str,
    i: int,
    at: datetime,
    vector: list[float],
    old: MemoryRecord | None,
) -> MemoryRecord:
    chain = ids.chain_id(tenant, user, subject, "is")
    return MemoryRecord(
        fact_id=ids.fact_id(chain, f"e{i}", f"value{i}", "affirmed"),
        chain_id=chain,
        tenant_id=tenant,
        user_id=user,
        session_id="s1",
        subject=subject,
        predicate="is",
        object=f"value{i}",
        kind=MemoryKind.FACT,
        text=f"{subject} is value{i}",
        confidence=0.9,
        valid_from=at,
        recorded_at=at,
        version=old.version + 1 if old else 1,
        supersedes=old.fact_id if old else None,
        lineage=_lineage(i),
        encoding=Encoding(combined=vector),
    )


def working_ops(tenant: str, n: int) -> list[MemoryOperation]:
    """N working-memory operations: 4 turns for every status update."""
    ops = []
    for i in range(n):
        user, at = f"u{i % USERS}", datetime.now(UTC)
        if i % 5 == 4:
            status = StatusEntry(name=f"s{i % 7}", value=i, ttl_s=3600)
            ops.append(_op(OpType.SET_STATUS, i, 0, tenant, user, at, status=status))
        else:
            turn = WorkingTurn(session_id="s1", turn_index=i, role="user", text=f"turn {i}", ts=at)
            ops.append(_op(OpType.APPEND_TURN, i, 0, tenant, user, at, turn=turn))
    return ops


def _op(
    op_type: OpType,
    i: int,
    k: int,
    tenant: str,
    user: str,
    at: datetime,
    tiers: Sequence[Tier] = tuple(Tier),
    **payload: object,
) -> MemoryOperation:
    return MemoryOperation.model_validate(
        {
            "op_id": ids.op_id(f"e{i}", k, op_type.value),
            "op_type": op_type,
            "tenant_id": tenant,
            "user_id": user,
            "tiers": list(tiers),
            "lineage": _lineage(i),
            "at": at,
            **payload,
        }
    )


def timed(
    store: str, method: str, ops: int, run: Callable[[], None], fed: int | None = None
) -> Row:
    started = time.perf_counter()
    run()
    return Row(store, method, ops, time.perf_counter() - started, fed)


def drive(sink: MemorySink, ops: Sequence[MemoryOperation], chunk: int) -> Callable[[], None]:
    """Feed ``ops`` to a sink the way the sink job does: one write per polled batch."""

    def run() -> None:
        for start in range(0, len(ops), chunk):
            sink.write(ops[start : start + chunk])
        sink.flush()

    return run


def warm_up(sink: MemorySink, tenant: str, chunk: int, rng: np.random.Generator) -> None:
    """A small mix with an erasure first, in a tenant of its own.

    The store plans each statement on its first run (Neo4j takes seconds for
    some), which a long-running sink has long done.
    """
    warm = tenant + "-warm"
    erase = _op(OpType.ERASE_USER, 0, 99, warm, "u0", T0)
    drive(sink, [*mixed_ops(warm, 3 * chunk, rng), erase], chunk)()


def tier_ops(ops: Sequence[MemoryOperation], tier: Tier) -> int:
    """How many of ``ops`` a writer of ``tier`` applies (it skips the others)."""
    return sum(1 for op in ops if tier in op.tiers)


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def bench_redis(url: str, tenant: str, n: int, small: int, chunk: int) -> list[Row]:
    client = redis.Redis.from_url(url, decode_responses=True)
    ops = working_ops(tenant, n)

    def sink(size: int) -> RedisMemory:
        return RedisMemory(client, chunk_size=size, latency_budget_s=math.inf)

    def baseline() -> None:
        for part in chunks(ops, chunk):
            pipe = client.pipeline(transaction=False)
            for op in part:
                pipe.hset(f"bench:{tenant}:{op.user_id}", op.op_id, op.model_dump_json())
            pipe.execute()

    rows = [
        timed("redis", "writer batched", n, drive(sink(chunk), ops, chunk)),
        timed("redis", "writer replay", n, drive(sink(chunk), ops, chunk)),
        timed("redis", "writer op-by-op", small, drive(sink(1), ops[:small], 1)),
        timed("redis", "baseline HSET (pipelined)", n, baseline),
    ]
    for pattern in (f"ms:{tenant}:*", f"bench:{tenant}:*"):
        for key in client.scan_iter(match=pattern, count=1000):
            client.delete(key)
    client.close()
    return rows


def bench_chroma(
    tenant: str,
    n: int,
    small: int,
    chunk: int,
    rng: np.random.Generator,
    rounds: int,
    url: str | None,
) -> list[Row]:
    """Embedded Chroma in a temporary directory, or the server at ``url``."""
    with tempfile.TemporaryDirectory(prefix="bench-chroma-") as path:
        settings = Settings(anonymized_telemetry=False)
        if url is None:
            client = chromadb.PersistentClient(path=path, settings=settings)
        else:
            where = urlsplit(url)
            client = chromadb.HttpClient(
                host=where.hostname or "127.0.0.1", port=where.port or 8000, settings=settings
            )
        try:
            return _bench_chroma(client, tenant, n, small, chunk, rng, rounds)
        finally:
            if url is not None:  # a server keeps what the run wrote: remove it
                for collection in client.list_collections():
                    if tenant in collection.name or tenant in str(collection.metadata):
                        client.delete_collection(collection.name)


def _bench_chroma(
    client: chromadb.ClientAPI,
    tenant: str,
    n: int,
    small: int,
    chunk: int,
    rng: np.random.Generator,
    rounds: int,
) -> list[Row]:
    embedding = MiniLMEmbeddingFunction()

    def sink(size: int) -> ChromaMemory:
        return ChromaMemory(
            client, embedding_function=embedding, chunk_size=size, latency_budget_s=math.inf
        )

    warm_up(sink(chunk), tenant, chunk, rng)
    rows: list[Row] = []
    for k in range(rounds):
        rows += _chroma_round(client, sink, f"{tenant}-r{k}", n, chunk, rng)
    single = fact_ops(tenant + "-single", small, rng)
    rows.append(timed("chroma", "writer op-by-op", small, drive(sink(1), single, 1)))
    return medians(rows)


def _chroma_round(
    client: chromadb.ClientAPI,
    sink: Callable[[int], ChromaMemory],
    tenant: str,
    n: int,
    chunk: int,
    rng: np.random.Generator,
) -> list[Row]:
    """One round on tenants of its own: the writer's rows, then the baseline's."""
    ops = fact_ops(tenant, n, rng)
    # Vectors given, as the writer's: the collection embeds nothing.
    plain = client.get_or_create_collection(
        f"plain-{tenant}", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    records = [
        op.record
        for op in ops
        if op.record and op.record.encoding and op.op_type is OpType.UPSERT_FACT
    ]

    def baseline() -> None:
        for part in chunks(records, chunk):
            vectors: list[Sequence[float]] = [r.encoding.combined for r in part if r.encoding]
            plain.add(
                ids=[r.fact_id for r in part],
                embeddings=vectors,
                metadatas=[{"tenant": r.tenant_id, "user": r.user_id} for r in part],
                documents=[r.text for r in part],
            )

    mix = mixed_ops(tenant + "-mix", n, rng)
    mine = tier_ops(mix, Tier.EPISODIC)
    return [
        timed("chroma", "writer batched", n, drive(sink(chunk), ops, chunk)),
        timed("chroma", "writer replay", n, drive(sink(chunk), ops, chunk)),
        timed("chroma", "mix batched", mine, drive(sink(chunk), mix, chunk), len(mix)),
        timed("chroma", "mix replay", mine, drive(sink(chunk), mix, chunk), len(mix)),
        timed("chroma", f"baseline add ({len(records)} items)", len(records), baseline),
    ]


def bench_neo4j(
    uri: str, tenant: str, n: int, small: int, chunk: int, rng: np.random.Generator, rounds: int
) -> list[Row]:
    driver = neo4j.GraphDatabase.driver(uri, notifications_min_severity="OFF")

    def sink(size: int) -> Neo4jMemory:
        return Neo4jMemory(driver, chunk_size=size, latency_budget_s=math.inf)

    sink(chunk).setup()
    warm_up(sink(chunk), tenant, chunk, rng)
    owners = [tenant + "-warm", tenant + "-single"]
    rows: list[Row] = []
    for k in range(rounds):
        owner = f"{tenant}-r{k}"
        owners += [owner, owner + "-mix"]
        rows += _neo4j_round(driver, sink, owner, n, chunk, rng)
    single = fact_ops(tenant + "-single", small, rng)
    rows.append(timed("neo4j", "writer op-by-op", small, drive(sink(1), single, 1)))
    erase = [
        _op(OpType.ERASE_USER, 0, 100 + u, owner, f"u{u}", T0)
        for owner in owners
        for u in range(USERS)
    ]
    drive(sink(chunk), erase, chunk)()
    driver.execute_query("MATCH (f:BenchFact) WHERE f.tenant_id IN $t DELETE f", t=owners)
    driver.close()
    return medians(rows)


def _neo4j_round(
    driver: neo4j.Driver,
    sink: Callable[[int], Neo4jMemory],
    tenant: str,
    n: int,
    chunk: int,
    rng: np.random.Generator,
) -> list[Row]:
    """One round on tenants of its own: the writer's rows, then the baseline's."""
    ops = fact_ops(tenant, n, rng)
    rows_of = [
        {"tenant_id": tenant, "fact_id": op.record.fact_id, "text": op.record.text}
        for op in ops
        if op.record
    ]

    def baseline() -> None:
        for part in chunks(rows_of, chunk):
            driver.execute_query(
                "UNWIND $rows AS row CREATE (f:BenchFact) SET f = row", rows=list(part)
            )

    mix = mixed_ops(tenant + "-mix", n, rng)
    mine = tier_ops(mix, Tier.SEMANTIC)
    return [
        timed("neo4j", "writer batched", n, drive(sink(chunk), ops, chunk)),
        timed("neo4j", "writer replay", n, drive(sink(chunk), ops, chunk)),
        timed("neo4j", "mix batched", mine, drive(sink(chunk), mix, chunk), len(mix)),
        timed("neo4j", "mix replay", mine, drive(sink(chunk), mix, chunk), len(mix)),
        timed("neo4j", "baseline UNWIND CREATE", n, baseline),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Defaults: the ports `memstream infra up` serves (memstream/settings.py).
    parser.add_argument("--redis-url", default="redis://127.0.0.1:16379/0")
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:17687")
    parser.add_argument(
        "--chroma-url",
        help="a Chroma server (http://host:port, `chroma run`) instead of embedded Chroma",
    )
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--op-by-op", type=int, default=200, help="ops in the chunk-1 sample")
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the Chroma and Neo4j rows (median kept)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--stores", nargs="+", default=["redis", "chroma", "neo4j"])
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(args.seed)
    benches: dict[str, Callable[[], list[Row]]] = {
        "redis": lambda: bench_redis(args.redis_url, tenant, args.ops, args.op_by_op, args.chunk),
        "chroma": lambda: bench_chroma(
            tenant, args.ops, args.op_by_op, args.chunk, rng, args.rounds, args.chroma_url
        ),
        "neo4j": lambda: bench_neo4j(
            args.neo4j_uri, tenant, args.ops, args.op_by_op, args.chunk, rng, args.rounds
        ),
    }
    load_before = os.getloadavg()
    rows = [row for store in args.stores for row in benches[store]()]
    load_after = os.getloadavg()
    print_table(rows, args, load_before, load_after)


def print_table(
    rows: Sequence[Row],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> None:
    baselines = {r.store: r.ops / r.seconds for r in rows if r.method.startswith("baseline")}
    print(
        f"\nchunk={args.chunk}  ops={args.ops}  op-by-op sample={args.op_by_op}  "
        f"rounds={args.rounds}"
    )
    print(
        "load (1/5/15 min) before "
        + "/".join(f"{x:.2f}" for x in load_before)
        + ", after "
        + "/".join(f"{x:.2f}" for x in load_after)
    )
    print(f"chroma: {args.chroma_url or 'embedded'}")
    print("mix rows: ops = those of the writer's tier; stream/s = every operation it was fed")
    print("ops/s: at the median round; range: the slowest and fastest round\n")
    print(
        f"{'store':<7} {'method':<30} {'ops':>6} {'seconds':>8} {'ops/s':>10} {'vs base':>8} "
        f"{'stream/s':>9}  range"
    )
    for r in rows:
        rate = r.ops / r.seconds
        stream = f"{r.fed / r.seconds:>9,.0f}" if r.fed else " " * 9
        spread = (
            f"{r.ops / max(r.rounds):,.0f}-{r.ops / min(r.rounds):,.0f}"
            if len(r.rounds) > 1
            else ""
        )
        print(
            f"{r.store:<7} {r.method:<30} {r.ops:>6} {r.seconds:>8.3f} {rate:>10,.0f} "
            f"{rate / baselines[r.store]:>7.2f}x {stream}  {spread}"
        )


if __name__ == "__main__":
    main()
