"""Recall latency through the SDK at 1k / 10k / 100k items for one user, beside a brute-force scan.

For each size, in one run against the real services (items accumulate: the
10k run holds the 1k items plus 9k more):

- ``sdk recall``       — ``MemoryClient.in_process(...).recall(user, query, k)``: MiniLM
  query embedding, the revision check (one Chroma read by id), the user's
  cached index (vectors + BM25 over every fact and episode), the pending items
  (Redis), hybrid ranking; the first recall after the writes builds the index
  from the stores and is reported apart;
- ``sdk over http``    — the same through ``MemoryClient.over_http`` and the HTTP API
  (``jobs.serve.api``) under uvicorn on a local port;
- ``query embedding``  — the MiniLM share of the above, alone (``Encoder.embed_queries``:
  direct forward pass, a new text each time so its cache never hits);
- ``embedding via s-t``— the same text through sentence-transformers' ``encode``
  (``Encoder.embed_texts``), the query path before, for comparison;
- ``sdk repeated query``— ``sdk recall`` of a query asked before: the query-vector cache hits;
- ``numpy brute force``— exact cosine of the same query vectors against every
  item vector held in RAM (one matrix product + argpartition), the baseline.

Items are one user's episodes and facts (two episodes per fact; a few facts
pending) with seeded random unit vectors (384-d, MiniLM's width), written
through all three tier writers as the sink applies them (chunks of 256):
generating real MiniLM vectors for 100k items would take ~4 minutes of the 2
cores and measures the encoder, not recall.

Every timed recall asks a query no earlier one asked (except the repeated-query
row), so the query cache does not flatter the latency; the cache's hit rate is
printed at the end.

Run (services from ``memstream infra up``)::

    python benchmarks/bench_recall.py [--sizes 1000 10000] [--with-100k] [--queries 50]

100k items are optional (``--with-100k``): writing them takes several minutes
on the 2-core machine. Chroma data goes to a temporary directory; Redis and
Neo4j are read under a private namespace that holds nothing, so nothing is left.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import os
import socket
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import torch
import uvicorn

from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import KafkaActionPublisher, MemoryService, MemoryStores
from jobs.serve.query_batcher import QueryBatcher
from jobs.stores import open_stores
from memstream.sdk import MemoryClient
from memstream.settings import get_settings
from pipelines.encode import Encoder
from schemas import ids
from schemas.episodes import Episode
from schemas.events import Role
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, MemoryRecord, MemoryState, Tier
from schemas.ops import MemoryOperation, OpType

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DIM = 384
USER = "u1"
CHUNK = 256  # connectors.protocols.DEFAULT_CHUNK_SIZE
API_KEY = "bench-recall-api-key"  # the keyring wants 16+ characters
WARMUP = 5  # untimed queries per size: caches, index pages, lazy imports
PREDICATES = ("likes", "owns", "ordered", "visited", "asked_about", "prefers")
WORDS = [
    *("tea", "coffee", "sushi", "pizza", "jazz", "opera", "techno", "bicycle", "garden"),
    *("router", "fibre", "invoice", "weekend", "monday", "berlin", "paris", "lisbon"),
    *("email", "phone", "delivery", "parcel", "refund", "hotel", "flight", "vegan"),
    *("gluten", "pasta", "salad", "cinema", "museum", "football", "tennis", "yoga"),
]


def distinct_queries(template: str) -> Iterator[str]:
    """Queries that never repeat: ``template`` over ordered triples of distinct words."""
    for a in WORDS:
        for b in WORDS:
            for c in WORDS:
                if len({a, b, c}) == 3:
                    yield template.format(a, b, c)


def unit_rows(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def item_ops(
    tenant: str,
    start: int,
    vectors: npt.NDArray[np.float32],
    rng: np.random.Generator,
    user: str = USER,
) -> list[MemoryOperation]:
    """A user's items as the pipeline writes them: two episodes for every fact.

    Facts go to the episodic and semantic tiers (Chroma and Neo4j), episodes to
    Chroma; every 500th item is a fact pending confirmation instead (Redis).
    """
    ops = []
    for row, vector in enumerate(vectors):
        i = start + row
        predicate = PREDICATES[i % len(PREDICATES)]
        obj = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}"
        event_id = f"bench-{i}"
        at = NOW - timedelta(days=float(rng.uniform(1, 365)))
        lineage = SourceLineage(
            topic="dialogue.events", partition=0, offset=i, event_id=event_id, turn_id=f"s1:{i}"
        )
        if i % 3:
            said = Episode(
                episode_id=ids.episode_id(tenant, user, event_id),
                tenant_id=tenant,
                user_id=user,
                session_id=f"s{i // 20}",
                turn_index=i % 20,
                role=Role.USER if i % 2 else Role.AGENT,
                text=f"I was saying that {obj} is what I {predicate.replace('_', ' ')}",
                ts=at,
                lineage=lineage,
                vector=vector.tolist(),
            )
            ops.append(
                MemoryOperation(
                    op_id=ids.op_id(event_id, 0, OpType.UPSERT_EPISODE.value),
                    op_type=OpType.UPSERT_EPISODE,
                    tenant_id=tenant,
                    user_id=user,
                    tiers=[Tier.EPISODIC],
                    lineage=lineage,
                    at=at,
                    episode=said,
                )
            )
            continue
        chain = ids.chain_id(tenant, user, "user", f"{predicate}-{i}")
        pending = i % 500 == 0
        record = MemoryRecord(
            fact_id=ids.fact_id(chain, event_id, obj, "affirmed"),
            chain_id=chain,
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            subject="user",
            predicate=predicate,
            object=obj,
            kind=MemoryKind.PREFERENCE,
            text=f"user {predicate.replace('_', ' ')} {obj}",
            confidence=0.9,
            valid_from=at,
            recorded_at=at,
            state=MemoryState.PENDING if pending else MemoryState.COMMITTED,
            tiers=[Tier.WORKING] if pending else [Tier.EPISODIC, Tier.SEMANTIC],
            lineage=lineage,
            encoding=Encoding(combined=vector.tolist()),
        )
        kind = OpType.ADD_PENDING if pending else OpType.UPSERT_FACT
        ops.append(
            MemoryOperation(
                op_id=ids.op_id(event_id, 0, kind.value),
                op_type=kind,
                tenant_id=tenant,
                user_id=user,
                tiers=list(record.tiers),
                lineage=lineage,
                at=at,
                record=record,
            )
        )
    return ops


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    cuts = statistics.quantiles(samples, n=20, method="inclusive")
    return statistics.median(samples) * 1000, cuts[18] * 1000


@contextmanager
def http_server(service: MemoryService, tenant: str) -> Iterator[MemoryClient]:
    """The HTTP API (``jobs.serve.api``) under uvicorn on a free local port; a client of it."""
    with serving(service, tenant) as url, MemoryClient.over_http(url, API_KEY) as client:
        yield client


@contextmanager
def serving(service: MemoryService, tenant: str) -> Iterator[str]:
    """The HTTP API (``jobs.serve.api``) under uvicorn on a free local port; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(service, ApiKeyring({API_KEY: tenant}))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


async def _drive(
    url: str, users: list[str], queries: list[str], clients: int, seconds: float
) -> tuple[list[float], int]:
    """``clients`` closed-loop clients, each recalling for a new user and query every time."""
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60.0, limits=limits
    ) as http:

        async def client(first: int) -> None:
            nonlocal failures
            i = first
            while time.perf_counter() < deadline:
                # A stride prime to the user count spreads each client over all users.
                user, query = users[(i * 7919) % len(users)], queries[i % len(queries)]
                started = time.perf_counter()
                reply = await http.post(f"/v1/users/{user}/recall", json={"query": query, "k": 10})
                latencies.append(time.perf_counter() - started)
                failures += reply.status_code != 200
                i += clients

        await asyncio.gather(*(client(c) for c in range(clients)))
    return latencies, failures


def _load_process(
    url: str,
    users: list[str],
    queries: list[str],
    clients: int,
    seconds: float,
    out: multiprocessing.Queue[tuple[list[float], int]],
) -> None:
    out.put(asyncio.run(_drive(url, users, queries, clients, seconds)))


def load_test(
    url: str, users: list[str], queries: list[str], clients: int, seconds: float
) -> tuple[list[float], int]:
    """The clients in their own process, so they do not share the server's interpreter lock."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    worker = context.Process(
        target=_load_process, args=(url, users, queries, clients, seconds, out)
    )
    worker.start()
    result: tuple[list[float], int] = out.get()
    worker.join()
    return result


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    for i in range(WARMUP):
        fn(i)
    samples = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Defaults: the ports `memstream infra up` serves (memstream/settings.py).
    # --sizes with no value and --load: the load test alone.
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--with-100k", action="store_true", help="also run 100,000 items")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--load", action="store_true", help="also run the HTTP load test over many users"
    )
    parser.add_argument("--load-users", type=int, default=1_000, help="users of the load test")
    parser.add_argument("--load-items", type=int, default=20, help="items per load-test user")
    parser.add_argument("--load-clients", type=int, default=32, help="concurrent HTTP clients")
    parser.add_argument("--load-seconds", type=float, default=30.0, help="load test duration")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes) | ({100_000} if args.with_100k else set()))

    rng = np.random.default_rng(args.seed)
    namespace = f"bench-recall-{uuid.uuid4().hex[:8]}"
    tenant = "bench"

    def clock() -> datetime:
        return NOW

    # One torch thread: the encode README's advice for a 2-core machine shared by
    # several processes (two threads fight the other processes for both cores).
    torch.set_num_threads(1)
    encoder = Encoder.load()
    fresh = distinct_queries("does the customer like {} or {} with {}")
    queries = [next(fresh) for _ in range(50)]
    query_vectors = np.asarray(encoder.embed_texts(queries), dtype=np.float32)
    rows: list[tuple[int, str, float, float, float]] = []
    cold: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as path:
        # Its own embedded Chroma in a temporary directory; Redis and Neo4j as configured.
        settings = get_settings()
        own = settings.model_copy(
            update={"chroma": settings.chroma.model_copy(update={"mode": "embedded", "path": path})}
        )
        opened = open_stores(
            own, namespace, latency_budget_s=math.inf, chunk_size=CHUNK, clock=clock
        )
        chroma, neo4j = opened.episodic, opened.semantic
        stores = MemoryStores(
            redis=opened.working,
            chroma=chroma,
            neo4j=neo4j,
            embedder=encoder,
            publisher=KafkaActionPublisher(own.kafka.bootstrap),
        )
        service = MemoryService(stores=stores, clock=clock)
        client = MemoryClient.in_process(service, tenant)
        vectors = np.zeros((0, DIM), dtype=np.float32)
        for size in sizes:
            new = unit_rows(rng, size - len(vectors))
            started = time.perf_counter()
            batch = item_ops(tenant, len(vectors), new, rng)
            for store in opened:
                store.write(batch)
                store.flush()
            written = time.perf_counter() - started
            print(f"wrote {len(new):,} items in {written:.1f} s ({len(new) / written:,.0f}/s)")
            vectors = np.vstack([vectors, new])
            started = time.perf_counter()
            client.recall(USER, queries[0], k=args.k)  # builds the user's index
            cold[size] = time.perf_counter() - started

            def sdk(i: int) -> object:
                return client.recall(USER, next(fresh), k=args.k)

            def repeated(i: int) -> object:
                # The warm-up asks these first, so every timed call is a cache hit.
                return client.recall(USER, queries[i % WARMUP], k=args.k)

            def embed(i: int) -> object:
                return encoder.embed_queries([next(fresh)])

            def embed_st(i: int) -> object:
                return encoder.embed_texts([next(fresh)])

            def brute(i: int, matrix: npt.NDArray[np.float32] = vectors) -> object:
                scores = matrix @ query_vectors[i % len(queries)]
                top = np.argpartition(-scores, args.k)[: args.k]
                return top[np.argsort(-scores[top])]

            for name, fn in (
                ("sdk recall", sdk),
                ("sdk repeated query", repeated),
                ("query embedding", embed),
                ("embedding via s-t", embed_st),
            ):
                rows.append((size, name, *percentiles(timed(fn, args.queries)), os.getloadavg()[0]))
            with http_server(service, tenant) as remote:

                def http(i: int, over: MemoryClient = remote) -> object:
                    return over.recall(USER, next(fresh), k=args.k)

                rows.append(
                    (
                        size,
                        "sdk over http",
                        *percentiles(timed(http, args.queries)),
                        os.getloadavg()[0],
                    )
                )
            rows.append(
                (
                    size,
                    "numpy brute force",
                    *percentiles(timed(brute, args.queries)),
                    os.getloadavg()[0],
                )
            )
        load = None
        if args.load:
            load = run_load(args, service, opened, tenant, encoder, rng)
        neo4j.close()

    print(
        f"\nrecall latency, k={args.k}, {args.queries} timed queries per row (+{WARMUP} warm-up)\n"
    )
    print(
        f"{'items':>8} {'method':<20} {'p50 ms':>8} {'p95 ms':>8} {'vs brute p50':>13}"
        f" {'load avg':>9}"
    )
    for size, name, p50, p95, load_avg in rows:
        base = next(r[2] for r in rows if r[0] == size and r[1] == "numpy brute force")
        print(
            f"{size:>8,} {name:<20} {p50:>8.2f} {p95:>8.2f} {p50 / base:>12.1f}x {load_avg:>9.2f}"
        )
    print()
    for size, seconds in cold.items():
        print(
            f"{size:>8,} items: first recall (reads the stores, builds the index) {seconds:.2f} s"
        )
    if load is not None:
        print(load)
    asked = encoder.query_hits + encoder.query_misses
    print(
        f"\nquery cache: {encoder.query_hits:,} hits of {asked:,} query embeddings"
        f" ({encoder.query_hits / max(asked, 1):.1%}; the repeated-query row and warm-ups"
        " are the hits by design)"
    )


def run_load(
    args: argparse.Namespace,
    service: MemoryService,
    stores: Iterable[Any],
    tenant: str,
    encoder: Encoder,
    rng: np.random.Generator,
) -> str:
    """Fill ``--load-users`` users, warm their indexes, then load the HTTP API; a report."""
    users = [f"load-{n:05d}" for n in range(args.load_users)]
    started = time.perf_counter()
    batch: list[MemoryOperation] = []
    for n, user in enumerate(users):
        start = 1_000_000 + n * args.load_items
        batch += item_ops(tenant, start, unit_rows(rng, args.load_items), rng, user=user)
    for store in stores:
        store.write(batch)
        store.flush()
    written = time.perf_counter() - started
    # ~36k distinct queries: more than the clients send, so none repeats (no cache hit).
    queries = list(distinct_queries("has the user asked about {} {} or {}"))
    started = time.perf_counter()
    for user in users:  # the first recall of a user reads the stores and builds its index
        service.recall(tenant, user, queries[0], k=args.k)
    warmed = time.perf_counter() - started
    # The server's "now" stays NOW; every request asks a new query (queries[0]
    # warmed above is skipped), so each runs MiniLM, the revision check, the
    # pending read and the ranking. Two runs over the same warm indexes, each
    # with its own half of the queries: one forward pass per request thread (no
    # batcher, the serving path before), then the query batcher.
    half = (len(queries) - 1) // 2
    batcher = service.query_batcher
    lines = [
        f"\nload test over HTTP: {args.load_users:,} users x {args.load_items} items"
        f" (written in {written:.0f} s; first recall of every user {warmed:.0f} s),"
        f" {args.load_clients} concurrent clients for {args.load_seconds:.0f} s each\n",
        f"{'query embedding':<34} {'recalls/s':>10} {'p50 ms':>8} {'p95 ms':>8}"
        f" {'requests':>9} {'failed':>7} {'mean batch':>11} {'load avg':>9}",
    ]
    runs: list[tuple[str, QueryBatcher | None, list[str]]] = [
        ("one pass per request (no batcher)", None, queries[1 : 1 + half])
    ]
    if batcher is not None:
        runs.append(("micro-batched", batcher, queries[1 + half :]))
    for label, used, asked in runs:
        service.query_batcher = used
        batches, texts = (used.batches, used.texts) if used else (0, 0)
        with serving(service, tenant) as url:
            latencies, failures = load_test(url, users, asked, args.load_clients, args.load_seconds)
        p50, p95 = percentiles(latencies)
        rate = len(latencies) / args.load_seconds
        mean = f"{(used.texts - texts) / max(used.batches - batches, 1):.1f}" if used else "1"
        lines.append(
            f"{label:<34} {rate:>10.0f} {p50:>8.1f} {p95:>8.1f} {len(latencies):>9,}"
            f" {failures:>7} {mean:>11} {os.getloadavg()[0]:>9.2f}"
        )
    service.query_batcher = batcher
    return "\n".join(lines)


if __name__ == "__main__":
    main()
