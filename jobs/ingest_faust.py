"""The Faust ingest worker: input topics in; memory.ops, memory.pending and memory.dlq out.

A composition root: the agent takes batches of raw records and delegates to
``jobs.stages.run_batch`` (the pure ``IngestPipeline`` with per-record failure
isolation); the per-user ``UserMemoryState`` lives in a Faust table as its
``snapshot()`` dict.

Exactly-once EFFECT without Faust's experimental ``exactly_once`` mode
(STACK.md): the worker runs ``at_least_once`` and makes a redelivered event
harmless instead.

1. Ops are deterministic per source event (ids from ``schemas.ids``, event
   time as the clock), so re-processing an event on the same state yields
   byte-identical ops; the sink dedupes them by ``op_id``.
2. Each batch's outputs are acknowledged by the broker BEFORE the states that
   record their source offsets are written to the table. A crash in between
   leaves the old state, which re-decides the same ops; a state never claims
   an event whose ops are not in Kafka.
3. Faust commits source offsets only for acked events (after the batch body)
   and flushes the producer — the changelog included — before committing. A
   re-delivered event at or below a state's remembered offset yields nothing.
4. A batch failure we cannot dead-letter (the broker refusing our outputs)
   exits the process at once: Faust would otherwise ack the batch on the way
   out and commit offsets it never processed. Restarting resumes from the last
   commit, exactly as after a SIGKILL.

Changelog partitions: Faust writes a table key's changelog to the partition of
the *current event*, which for a ``take()`` batch is just the last event of
the batch — another user's partition (faust-streaming ``Table.partition_for_key``).
The table therefore uses ``use_partitioner=True``: the changelog record goes
where the producer's partitioner puts the key. aiokafka's default partitioner
is the Java client's murmur2, as is ``connectors.kafka_io``'s, and the table
has the input topics' partition count, so a user's state lands on the same
partition number as their events and recovers on the worker that owns them.
(A message whose key disagrees with its payload's tenant:user still works on
one worker; with several, the key should match — every memstream producer
keys by the payload.)

Topic namespace: ``namespace`` prefixes every topic and the consumer group, so
tests and shadow runs have topics of their own. Records enter the pipeline
under their base topic name (the event model is chosen by it, and lineage and
state offsets then read the same in every namespace).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faust
from faust.types import RecordMetadata

from connectors import kafka_admin
from jobs.stages import load_pipeline, run_batch
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, IngestResult, SourceRecord
from pipelines.review import UserMemoryState
from schemas.ops import OpType
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ, MEMORY_OPS, MEMORY_PENDING, OUTPUT_TOPICS

log = logging.getLogger(__name__)

# Ops the pending queue consumers (HITL tooling) need besides the sink.
PENDING_OPS = frozenset({OpType.ADD_PENDING, OpType.RESOLVE_PENDING})
TABLE_NAME = "user-memory"
# How long the group waits for a member that stopped heartbeating (Faust's
# default: 60 s). A SIGKILLed worker's restart cannot get its partitions back
# before that; 10 s is above Kafka's minimum (group.min.session.timeout.ms, 6 s)
# and over three heartbeats (3 s). Heartbeats run in Faust's consumer thread,
# so a long NLP batch on the event loop does not starve them.
SESSION_TIMEOUT_S = 10.0
# Exit code of a batch whose outputs could not be published (see note 4 above).
EXIT_BATCH_FAILED = 70  # EX_SOFTWARE (sysexits.h)


@dataclass(frozen=True)
class WorkerConfig:
    """What the worker needs; ``from_settings`` fills it from the settings object.

    The defaults below are the fallbacks of a bare construction (tests);
    ``from_settings`` takes them from the settings' ``ingest`` section.
    """

    bootstrap: str
    data_dir: Path
    max_message_bytes: int
    namespace: str = ""
    group_id: str = "memstream-ingest"
    # 64 turns fill one spaCy ``pipe`` batch and one MiniLM batch well (both
    # several times faster per item batched, pipelines/ingest.py); measured
    # here: 40 turns in 1.3-1.6 s on the 2 shared cores at load ~10, so a full
    # batch stays a few seconds, far inside every Kafka timeout.
    batch_size: int = 64
    # How long a partial batch waits for more records: bounds the added
    # latency at low rates (DESIGN.md: p95 <= 800 ms end to end).
    batch_within_s: float = 0.2

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> WorkerConfig:
        """Addresses and tunables from the settings; ``overrides`` win."""
        ingest = settings.ingest
        params: dict[str, Any] = {
            "group_id": ingest.group_id,
            "batch_size": ingest.batch_size,
            "batch_within_s": ingest.batch_within_s,
        }
        params.update(overrides)
        return cls(
            bootstrap=settings.kafka.bootstrap,
            data_dir=settings.state_dir / "faust",
            max_message_bytes=settings.kafka.max_message_bytes,
            **params,
        )

    @property
    def app_id(self) -> str:
        """The Faust app id: consumer group and changelog topic prefix."""
        return self.namespace + self.group_id

    def topic(self, name: str) -> str:
        """The namespaced name of a topic."""
        return self.namespace + name


def input_partitions(config: WorkerConfig) -> int:
    """The common partition count of the input topics; fail clearly if a topic is missing."""
    wanted = [config.topic(t) for t in (*INPUT_TOPICS, *OUTPUT_TOPICS)]
    counts = kafka_admin.partition_counts(config.bootstrap, wanted)
    missing = [t for t in wanted if t not in counts]
    if missing:
        raise RuntimeError(
            f"missing topics on {config.bootstrap}: {', '.join(missing)} "
            "(`memstream infra up` creates the default ones)"
        )
    inputs = {counts[config.topic(t)] for t in INPUT_TOPICS}
    if len(inputs) != 1:
        # The table co-partitions with every input topic; unequal counts would
        # put a user's state on a partition another worker owns.
        raise RuntimeError(f"input topics must have equal partition counts, got {sorted(inputs)}")
    return inputs.pop()


class IngestAgent:
    """The agent body: batches of events → pipeline → outputs, then the states."""

    def __init__(
        self, app: faust.App, config: WorkerConfig, pipeline: IngestPipeline, partitions: int
    ) -> None:
        """Declare the topics and the table (``partitions``: the input topics') on ``app``."""
        self.config = config
        self.pipeline = pipeline
        raw: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
        self.ops = app.topic(config.topic(MEMORY_OPS), **raw)
        self.pending = app.topic(config.topic(MEMORY_PENDING), **raw)
        self.dlq = app.topic(config.topic(MEMORY_DLQ), **raw)
        self.table = app.Table(
            TABLE_NAME,
            # Raw UTF-8 keys: the same bytes as the input records' keys, so the
            # partitioner puts a user's state on their events' partition.
            schema=faust.Schema(key_type=str, key_serializer="raw", value_serializer="json"),
            partitions=partitions,
            use_partitioner=True,
            # Snapshots reach ~5 MiB at the ReviewConfig caps (review/config.py).
            extra_topic_configs={"max.message.bytes": str(config.max_message_bytes)},
        )

    async def run(self, stream: faust.StreamT[bytes]) -> None:
        """Iterate batches; each batch completes even when the worker is asked to stop."""
        # StreamT (the agent's declared type) lacks take_events in faust 0.15.3;
        # the Stream it is at run time has it.
        batches = stream.take_events(  # type: ignore[attr-defined]
            self.config.batch_size, within=self.config.batch_within_s
        )
        async for events in batches:
            task = asyncio.ensure_future(self.handle([e.message for e in events]))
            try:
                # Shielded: a stop request must not cut a batch between its
                # outputs and its states (take_events acks the batch either way).
                await asyncio.shield(task)
            except asyncio.CancelledError:
                await task
                raise
            except Exception:
                log.exception("batch failed; exiting before its offsets can be committed")
                os._exit(EXIT_BATCH_FAILED)

    async def handle(self, messages: Sequence[Any]) -> None:
        """Process one batch: publish and await every output, then write the states."""
        started = time.perf_counter()
        records = [self._record(m) for m in messages]
        batch = run_batch(self.pipeline, records, self._load_state)
        sent = [fut for result in batch.results for fut in await self._publish(result)]
        await asyncio.gather(*sent)
        for key, state in batch.states.items():
            self.table[key] = state.snapshot()  # re-assigned: emits the changelog record
        log.info(
            "batch: %d records, %d ops, %d dead letters%s in %.0f ms",
            len(records),
            sum(len(r.ops) for r in batch.results),
            sum(r.dead_letter is not None for r in batch.results),
            " (isolated after a stage error)" if batch.isolated else "",
            (time.perf_counter() - started) * 1000,
        )

    def _record(self, message: Any) -> SourceRecord:
        return SourceRecord(
            topic=message.topic.removeprefix(self.config.namespace),
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value if message.value is not None else b"",
        )

    def _load_state(self, key: str) -> UserMemoryState | None:
        snapshot = self.table.get(key)
        return UserMemoryState.restore(snapshot) if snapshot is not None else None

    async def _publish(self, result: IngestResult) -> list[Awaitable[RecordMetadata]]:
        sent: list[Awaitable[RecordMetadata]] = []
        for op in result.ops:
            key = f"{op.tenant_id}:{op.user_id}".encode()
            value = op.model_dump_json().encode("utf-8")
            sent.append(await self.ops.send(key=key, value=value))
            if op.op_type in PENDING_OPS:
                sent.append(await self.pending.send(key=key, value=value))
        letter = result.dead_letter
        if letter is not None:
            sent.append(
                await self.dlq.send(
                    key=letter.key.encode() if letter.key is not None else None,
                    value=letter.model_dump_json().encode("utf-8"),
                )
            )
        return sent


def build_app(config: WorkerConfig, pipeline: IngestPipeline, partitions: int) -> faust.App:
    """The Faust app with its one agent over the three input topics."""
    app = faust.App(
        config.app_id,
        broker=[f"kafka://{server}" for server in config.bootstrap.split(",")],
        store="memory://",  # recovered from the compacted changelog on start
        processing_guarantee="at_least_once",  # see the module docstring
        topic_partitions=partitions,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=SESSION_TIMEOUT_S,
        producer_max_request_size=config.max_message_bytes,
        datadir=str(config.data_dir / config.app_id),
        web_enabled=False,  # no HTTP port to collide with other workers
    )
    source = app.topic(
        *(config.topic(t) for t in INPUT_TOPICS), key_serializer="raw", value_serializer="raw"
    )
    agent = IngestAgent(app, config, pipeline, partitions)
    app.agent(source, name="ingest")(agent.run)
    return app


def run_worker(
    config: WorkerConfig, settings: Settings, *, partitions: int, loglevel: str = "info"
) -> None:
    """Load the stages and run the worker until SIGTERM/SIGINT (``input_partitions`` first)."""
    started = time.perf_counter()
    pipeline = load_pipeline(settings)
    log.info("stages loaded in %.1f s", time.perf_counter() - started)
    config.data_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    app = build_app(config, pipeline, partitions)
    faust.Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()
