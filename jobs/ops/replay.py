"""``memstream replay``: the ingest pipeline re-run over a range of the input log, into a shadow.

Design decisions (also in the command's --help):

- Order. The records of every selected topic and partition are merged by
  record timestamp, each partition kept in offset order (a k-way merge), so a
  replay of the whole log sees each user's turns, actions and CRM changes in
  the order they were appended — the order the live worker saw them while it
  kept up. Ties keep the topics' order (dialogue, actions, CRM), then the
  partition's.
- State. The replay starts from EMPTY state: a fresh review state per user,
  never a copy of the live job's. Replaying the whole retained log therefore
  rebuilds the live state, and a partial range shows what those events alone
  decide (``memstream audit diff`` then lists what the rest of the log adds).
- Writes. The stages are the live ones (jobs/ingest/stages.py: same models, rules and
  review thresholds, the same per-record failure isolation). Operations go to
  the tier writers of the shadow store namespace only — its own Chroma
  collections, Neo4j ``ns`` and Redis key prefix — through the sinks' own
  idempotent writes. Nothing else is written: no operation or dead letter is
  published to Kafka (they are counted in the summary), no consumer offset is
  committed, no live key is touched. Stores are written directly, without
  the sink job's spool: a store that fails stops the replay.
- The shadow namespace must be new (empty): replaying into a namespace that
  already holds memory would mix two histories. Everything is checked before
  the first write (jobs/ops/replay_plan.py).

Records enter the pipeline under their base topic name, as in the live
worker, so lineage, op ids and fact ids equal the live ones.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from connectors.kafka_range import TimedRecord
from connectors.protocols import MemorySink
from jobs.ingest.stages import run_batch
from jobs.stores import Stores, open_stores
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.deadletter import DeadLetter
from schemas.topics import INPUT_TOPICS


@dataclass
class ReplaySummary:
    """What a replay read and wrote."""

    events: int = 0  # records read from the range
    ops: int = 0  # operations decided and applied
    per_store: dict[str, int] = field(default_factory=dict)  # operations each store applied
    dead_letters: list[DeadLetter] = field(default_factory=list)  # counted, never published
    users: set[str] = field(default_factory=set)  # "tenant:user" keys the range touched
    skipped: int = 0  # records the state had applied already (duplicates in the range)


def merge_by_time(records: Sequence[TimedRecord], topic_namespace: str = "") -> list[SourceRecord]:
    """The records in timestamp order, each partition's offset order kept.

    ``records`` come in offset order per partition (``RangeReader.read``).
    Topic names lose ``topic_namespace``: the pipeline picks the event model by
    the base name, and lineage then reads as in the live worker.
    """

    def position(r: TimedRecord) -> tuple[int, int]:
        base = r.topic.removeprefix(topic_namespace)
        rank = INPUT_TOPICS.index(base) if base in INPUT_TOPICS else len(INPUT_TOPICS)
        return rank, r.partition

    streams = [list(g) for _, g in groupby(sorted(records, key=position), key=position)]
    for stream in streams:
        stream.sort(key=lambda r: r.offset)
    merged = heapq.merge(*streams, key=lambda r: r.timestamp_ms)
    return [
        SourceRecord(
            topic=r.topic.removeprefix(topic_namespace),
            partition=r.partition,
            offset=r.offset,
            key=r.key,
            value=r.value,
        )
        for r in merged
    ]


def open_writers(settings: Settings, namespace: str) -> Stores:
    """The three tier writers of a shadow namespace (``jobs.stores.open_stores``), set up.

    A replay is a batch job with no spool: a slow chunk is waited for, never
    reported as backpressure (a store that fails still raises). Use as
    ``with open_writers(settings, ns) as writers:`` (closed on exit).
    """
    stores = open_stores(settings, namespace, latency_budget_s=math.inf)
    stores.setup()
    return stores


def run_replay(
    pipeline: IngestPipeline,
    records: Sequence[SourceRecord],
    writers: Sequence[MemorySink],
    *,
    batch_size: int,
    on_batch: Callable[[int], None] = lambda n: None,
) -> ReplaySummary:
    """Run ``records`` through the pipeline from empty state; apply the ops to ``writers``.

    Batches of ``batch_size`` records, as the live worker takes them; each
    batch's operations are flushed to every writer before the next batch
    starts. ``on_batch(n)`` is called after each batch of ``n`` records.
    """
    states: dict[str, UserMemoryState] = {}
    summary = ReplaySummary(per_store={w.store_name: 0 for w in writers})
    for first in range(0, len(records), batch_size):
        chunk = records[first : first + batch_size]
        batch = run_batch(pipeline, chunk, states.get)
        states.update(batch.states)  # only after the batch: run_batch may retry from these
        ops = [op for result in batch.results for op in result.ops]
        for writer in writers:
            writer.write(ops)
            writer.flush()
            summary.per_store[writer.store_name] += sum(writer.tier in op.tiers for op in ops)
        summary.events += len(chunk)
        summary.ops += len(ops)
        summary.skipped += sum(r.replayed for r in batch.results)
        summary.dead_letters += [r.dead_letter for r in batch.results if r.dead_letter]
        summary.users.update(k for r in batch.results if (k := r.state_key) is not None)
        on_batch(len(chunk))
    return summary
