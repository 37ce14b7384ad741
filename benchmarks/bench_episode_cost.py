"""What episodes cost: bytes per turn in each store and write throughput, with and without them.

Issue 11 made every content-bearing turn an episode (``upsert_episode``) beside
the facts extracted from it. This benchmark runs labelled dialogue of the
repository (``benchmarks/devset/train/``: friends, family, assistants and
customer service, written for training, no benchmark reads them as a test)
through the real ingest stages once, then applies the operations through the
real Redis, Chroma and Neo4j writers twice, each time into a private namespace
(Chroma into its own temporary directory):

- ``facts only``: every operation except the episodes;
- ``with episodes``: every operation, as the pipeline routes them.

Per store it reports the bytes the namespace holds afterwards per input turn
(Redis: ``MEMORY USAGE`` of the namespace's keys; Chroma: its directory on
disk, less the empty database's files), the operations it was given to keep
(Neo4j is given none at ingest: facts reach it when they are promoted), and
the write throughput in input turns per second of that store's writes.
Both namespaces are erased at the end.

Run (services from ``memstream infra up``)::

    python benchmarks/bench_episode_cost.py [--turns 1000]
"""

from __future__ import annotations

import argparse
import logging
import math
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_extract_quality import load_devset  # benchmarks/ sibling
from longmemeval_data import records  # benchmarks/ sibling
from rich.progress import Progress

from jobs.ingest.stages import load_pipeline, run_batch
from jobs.stores import Stores, open_stores
from memstream.settings import Settings, get_settings
from schemas.lineage import SourceLineage
from schemas.memory import Tier
from schemas.ops import MemoryOperation, OpType
from schemas.topics import USER_ACTIONS

TRAIN = Path(__file__).parent / "devset" / "train"
BATCH = 64  # events per pipeline batch, as a worker polls them


@dataclass
class Written:
    """One store's writes of one variant."""

    ops: int
    seconds: float
    bytes: int | None


def pipeline_ops(
    settings: Settings, turns: int
) -> tuple[list[MemoryOperation], int, set[tuple[str, str]]]:
    """The operations the real stages make of the first ``turns`` training turns."""
    events = [t.event for path in sorted(TRAIN.glob("*.txt")) for t in load_devset(path)][:turns]
    pipeline = load_pipeline(settings)
    ops: list[MemoryOperation] = []
    with Progress() as progress:
        task = progress.add_task("parse, extract, encode, review", total=len(events))
        for start in range(0, len(events), BATCH):
            chunk = events[start : start + BATCH]
            batch = run_batch(pipeline, records(chunk), lambda _key: None)
            ops += [op for result in batch.results for op in result.ops]
            progress.advance(task, len(chunk))
    users = {(e.tenant_id, e.user_id) for e in events}
    return ops, len(events), users


def chroma_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def redis_bytes(stores: Stores, namespace: str) -> int:
    client = stores.working.client
    total = 0
    for key in client.scan_iter(match=f"{namespace}:*", count=1000):
        used: Any = client.memory_usage(key)
        total += int(used or 0)
    return total


def write_variant(
    settings: Settings, ops: Sequence[MemoryOperation], users: set[tuple[str, str]]
) -> dict[str, Written]:
    """Apply ``ops`` through each store's writer into a fresh namespace; measure; erase."""
    namespace = f"bench-episodes-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="bench-episodes-") as path:
        own = settings.model_copy(
            update={"chroma": settings.chroma.model_copy(update={"mode": "embedded", "path": path})}
        )
        stores = open_stores(own, namespace, latency_budget_s=math.inf)
        stores.setup()
        empty_chroma = chroma_bytes(Path(path))  # the empty database's own files
        written: dict[str, Written] = {}
        for name, store, tier in (
            ("redis", stores.working, Tier.WORKING),
            ("chroma", stores.episodic, Tier.EPISODIC),
            ("neo4j", stores.semantic, Tier.SEMANTIC),
        ):
            started = time.perf_counter()
            store.write(ops)
            store.flush()
            # Throughput counts what this store was given to keep; each writer
            # skips the rest (erasures and status changes go to every tier).
            mine = sum(tier in op.tiers for op in ops)
            written[name] = Written(mine, time.perf_counter() - started, None)
        written["redis"].bytes = redis_bytes(stores, namespace)
        written["chroma"].bytes = chroma_bytes(Path(path)) - empty_chroma
        erase = [erase_op(tenant, user) for tenant, user in sorted(users)]
        for store in stores:
            store.write(erase)
            store.flush()
        leftovers = list(stores.working.client.scan_iter(match=f"{namespace}:*", count=1000))
        if leftovers:
            stores.working.client.delete(*leftovers)
        stores.close()
    return written


def erase_op(tenant: str, user: str) -> MemoryOperation:
    """The operation a forget_user action routes to: the user leaves every tier."""
    event_id = f"bench-episodes-forget-{tenant}-{user}"
    return MemoryOperation(
        op_id=event_id,
        op_type=OpType.ERASE_USER,
        tenant_id=tenant,
        user_id=user,
        tiers=list(Tier),
        lineage=SourceLineage(topic=USER_ACTIONS, partition=0, offset=0, event_id=event_id),
        at=datetime.now(UTC),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_000, help="training turns to ingest")
    args = parser.parse_args()
    import flair  # noqa: F401 - configures its logger at import; quiet it after

    logging.getLogger("flair").setLevel(logging.WARNING)
    settings = get_settings()
    ops, turns, users = pipeline_ops(settings, args.turns)
    episodes = [op for op in ops if op.op_type is OpType.UPSERT_EPISODE]
    facts_only = [op for op in ops if op.op_type is not OpType.UPSERT_EPISODE]
    tiers = sorted({tier.value for op in episodes for tier in op.tiers})
    print(
        f"{turns:,} turns -> {len(ops):,} operations, {len(episodes):,} of them episodes"
        f" (tiers: {', '.join(tiers) or 'none'})"
    )
    without = write_variant(settings, facts_only, users)
    with_episodes = write_variant(settings, ops, users)
    print(f"\nwhat episodes cost over {turns:,} turns (per input turn; write rate of each store)\n")
    print(
        f"{'store':<8}{'ops facts only':>16}{'ops with':>10}{'B/turn facts only':>19}"
        f"{'B/turn with':>13}{'turns/s facts only':>20}{'turns/s with':>14}"
    )
    for name in ("redis", "chroma", "neo4j"):
        a, b = without[name], with_episodes[name]
        cells = [
            f"{a.bytes / turns:,.0f}" if a.bytes is not None else "-",
            f"{b.bytes / turns:,.0f}" if b.bytes is not None else "-",
            f"{turns / a.seconds:,.0f}" if a.ops else "-",
            f"{turns / b.seconds:,.0f}" if b.ops else "-",
        ]
        print(
            f"{name:<8}{a.ops:>16,}{b.ops:>10,}{cells[0]:>19}{cells[1]:>13}"
            f"{cells[2]:>20}{cells[3]:>14}"
        )
    total_a = sum(w.seconds for w in without.values())
    total_b = sum(w.seconds for w in with_episodes.values())
    print(
        f"\nall three stores in turn: {turns / total_a:,.0f} turns/s facts only,"
        f" {turns / total_b:,.0f} turns/s with episodes"
    )


if __name__ == "__main__":
    main()
