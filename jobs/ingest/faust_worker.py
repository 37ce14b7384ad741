"""The Faust ingest worker: input topics in; memory.ops, memory.pending and memory.dlq out.

A composition root: the agent takes batches of raw records and delegates to
``jobs.ingest.stages.run_batch`` (the pure ``IngestPipeline`` with per-record failure
isolation); the per-user ``UserMemoryState`` lives in a Faust table as its
``snapshot()`` dict.

Exactly-once EFFECT without Faust's experimental ``exactly_once`` mode
(docs/dependencies.md): the worker runs ``at_least_once`` and makes a redelivered event
harmless instead.

1. Ops are deterministic per source event (ids from ``schemas.ids``, event
   time as the clock), so re-processing an event on the same state yields
   byte-identical ops; the sink dedupes them by ``op_id``.
2. Each batch's outputs are acknowledged by the broker BEFORE the states that
   record their source offsets are written to the table. A crash in between
   leaves the old state, which re-decides the same ops; a state never claims
   an event whose ops are not in Kafka.
3. The worker commits the input offsets itself, at the end of each batch:
   after the outputs and the states' changelog records are acknowledged,
   it commits every partition of the batch to one past its last record —
   and only records that continue a partition without a hole are processed
   at all (jobs/ingest/input_positions.py).
   A re-delivered event at or below a state's remembered offset yields
   nothing.
4. A batch failure we cannot dead-letter (the broker refusing our outputs)
   exits the process at once: the next batch's commit would otherwise move
   past the failed one. Restarting resumes from the last commit, exactly as
   after a SIGKILL.

Why not Faust's own commits: after a SIGKILL and restart Faust delivers some
input records twice and loses others in its recovery race (measured, see
jobs/ingest/input_positions.py; faust-streaming issues 596 and 216). Its ack-based
commits then froze at the first lost offset (the offsets stopped advancing
while every later op was produced) or, with nothing committed yet, skipped
the lost records for good. The input topics are therefore declared with
``acks=False``, out of Faust's ack tracking: the batch loop checks every
record's offset, rewinds over holes and commits what it processed.

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
from collections.abc import Awaitable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import faust
from aiokafka.errors import IllegalStateError
from faust.serializers import codecs
from faust.types import TP, RecordMetadata
from mode.types.signals import BaseSignalT

from connectors.kafka_offsets import OffsetReader
from jobs.ingest import metrics as ingest_metrics
from jobs.ingest.input_positions import InputPositions, Unseen, first_offset_from
from jobs.ingest.stages import Message, load_pipeline, run_batch
from jobs.ingest.worker_config import WorkerConfig
from jobs.metrics_endpoint import serve_metrics
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.topics import OUTPUT_TOPICS

log = logging.getLogger(__name__)

TABLE_NAME = "user-memory"
TABLE_CODEC = "json"
# How long the group waits for a member that stopped heartbeating (Faust's
# default: 60 s). A SIGKILLed worker's restart cannot get its partitions back
# before that; 10 s is above Kafka's minimum (group.min.session.timeout.ms, 6 s)
# and over three heartbeats (3 s). Heartbeats run in Faust's consumer thread,
# so a long NLP batch on the event loop does not starve them.
SESSION_TIMEOUT_S = 10.0
# Exit code of a batch whose outputs could not be published (note 4 above).
EXIT_BATCH_FAILED = 70  # EX_SOFTWARE (sysexits.h)
# How often processed-but-uncommitted partitions are committed again. A commit
# skips partitions Faust does not list as assigned yet (it delivers records
# while a restarted worker still rejoins), and no later batch may come for
# them: measured, a partition stuck at 8 of 14 after a SIGKILL restart until
# the test gave up 240 s later. One second keeps the replay after a crash short.
RECOMMIT_INTERVAL_S = 1.0
# How long an assigned partition behind its log end may stand still before it
# is sought again to the offset it expects (``IngestAgent._unstall``). A seek
# too many costs only redeliveries, which the input positions drop.
STALL_S = 5.0


class IngestAgent:
    """The agent body: batches of events → pipeline → outputs, then the states, then the commit."""

    def __init__(
        self, app: faust.App, config: WorkerConfig, pipeline: IngestPipeline, partitions: int
    ) -> None:
        """Declare the topics and the table (``partitions``: the input topics') on ``app``."""
        self.app = app
        self.config = config
        self.pipeline = pipeline
        self.positions = InputPositions()
        # Per partition: the offset the group holds from this worker's last
        # commit that included it; a batch and ``recommit`` never interleave.
        self._committed: dict[TP, int] = {}
        self._batch_lock = asyncio.Lock()
        # Per partition: the last hole rewound over and the offset sought.
        self._rewound: dict[TP, tuple[int, int]] = {}
        # Per partition: its next offset and since when it has been that.
        self._progress: dict[TP, tuple[int, float]] = {}
        # Per partition: the next offset it stood still at with records behind it.
        self._waiting: dict[TP, int | None] = {}
        self._unseen = Unseen(STALL_S)
        self._inputs = set(config.topics.inputs)
        self.offsets = OffsetReader(config.bootstrap)
        app.on_partitions_revoked.connect(self._on_revoked)
        raw: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
        # One Faust topic per output topic, by base name (pipelines.route.outputs).
        self.outputs = {name: app.topic(config.topic(name), **raw) for name in OUTPUT_TOPICS}
        self.table = app.Table(
            TABLE_NAME,
            # Raw UTF-8 keys: the same bytes as the input records' keys, so the
            # partitioner puts a user's state on their events' partition. Faust
            # takes a table's key serializer from its key type alone (bytes:
            # raw); a schema's is ignored, and with one the keys went out as
            # JSON strings, hashed to other partitions than their users'
            # events. One worker owns every partition and never noticed; with
            # two, each kept only the states on its own changelog partitions
            # after a rebalance (Faust's memory store drops the rest), and
            # measured, some users' next turns were decided without their
            # facts and pending items.
            key_type=bytes,
            partitions=partitions,
            use_partitioner=True,
            # Snapshots reach ~2 MiB at the ReviewConfig caps (review/config.py; ~5 MiB
            # before vectors were packed, pipelines/snapshot_vectors.py).
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
                # outputs, its states and its commit.
                await asyncio.shield(task)
            except asyncio.CancelledError:
                await task
                raise
            except Exception:
                log.exception("batch failed; exiting before a later commit can pass it")
                os._exit(EXIT_BATCH_FAILED)

    async def handle(self, messages: Sequence[Any]) -> None:
        """Process one batch: publish and await every output, write the states, commit."""
        async with self._batch_lock:
            await self._handle(messages)

    async def recommit(self) -> None:
        """Commit again every partition processed past its last commit; seek stalled ones again."""
        async with self._batch_lock:
            assignment = self.app.consumer.assignment()
            assigned = {tp for tp in assignment if self.positions.known(tp)}
            behind = {
                tp for tp in assigned if self._committed.get(tp) != self.positions.next_offset(tp)
            }
            if behind:
                log.info("committing %d partition(s) past their last commit", len(behind))
                await self._commit(behind)
            await self._unstall(assigned)
            await self._unstall_unseen(
                tp for tp in assignment if tp.topic in self._inputs and tp not in assigned
            )

    async def _unstall(self, assigned: set[TP]) -> None:
        """Seek a partition again whose records have waited unprocessed for STALL_S and more.

        Measured: the survivor of a SIGKILLed peer left 11 records of the
        partitions it took over unprocessed and uncommitted, its input idle,
        until the test gave up 240 s later. Likely cause: Faust drops a
        fetched record below its own read position per partition, a record
        fetched before a seek may still raise that position after it
        (jobs/ingest/input_positions.py), and when that record never reaches
        a batch (its queue cleared at the rebalance) no batch seeks again.
        """
        now = time.monotonic()
        stalled: list[TP] = []
        for tp in assigned:
            offset = self.positions.next_offset(tp)
            last, since = self._progress.get(tp, (None, now))
            if last != offset:
                self._progress[tp] = (offset, now)
            elif now - since >= STALL_S:
                stalled.append(tp)
        if not stalled:
            return
        ends = await asyncio.to_thread(
            self.offsets.log_ends, [(tp.topic, tp.partition) for tp in stalled]
        )
        for tp in stalled:
            offset = self.positions.next_offset(tp)
            self._progress[tp] = (offset, now)  # one look per STALL_S
            end = ends.get((tp.topic, tp.partition), offset)
            # Records that were there at the last look and are still not
            # processed: not records just published after an idle spell.
            waiting, self._waiting[tp] = self._waiting.get(tp), offset if end > offset else None
            if end > offset and waiting == offset:
                log.warning(
                    "%s stood still at offset %d for %.0f s, its end at %d: re-reading from there",
                    tp,
                    offset,
                    2 * STALL_S,
                    end,
                )
                await self._seek(tp, offset)

    async def _unstall_unseen(self, unseen: Iterable[TP]) -> None:
        """Seek an assigned partition again that has sent nothing for STALL_S while records wait.

        ``_unstall`` sees only partitions a record has come from (``Unseen``).
        Such a partition continues at the group's commit, or at the log's
        start without one, as ``_with_known_positions`` starts it.
        """
        due = cast(list[TP], self._unseen.due(unseen, time.monotonic()))
        if not due:
            return
        positions = [(tp.topic, tp.partition) for tp in due]
        committed = await asyncio.to_thread(self.offsets.committed, self.config.app_id)
        ends = await asyncio.to_thread(self.offsets.log_ends, positions)
        fresh = [tp for tp in due if (tp.topic, tp.partition) not in committed]
        earliest = await self.app.consumer.earliest_offsets(*fresh) if fresh else {}
        for tp, position in zip(due, positions, strict=True):
            start = committed[position] if position in committed else earliest[tp]
            if ends.get(position, start) > start:
                log.warning(
                    "%s assigned but silent for %.0f s, records from offset %d to %d waiting: "
                    "re-reading from %d",
                    tp,
                    STALL_S,
                    start,
                    ends[position],
                    start,
                )
                await self._seek(tp, start)

    async def _handle(self, messages: Sequence[Any]) -> None:
        started = time.perf_counter()
        admission = self.positions.admit(await self._with_known_positions(messages))
        for tp, expected in admission.rewind.items():
            await self._rewind(cast(TP, tp), expected)
        if not admission.admitted:
            return
        records = [self._record(m) for m in admission.admitted]
        # The states are checked in the table's own codec: a state it cannot
        # write is its record's dead letter, not a worker exit (stages.run_batch).
        batch = run_batch(self.pipeline, records, self._load_state, encode_state=self._encode_state)
        sent = [fut for messages in batch.messages for fut in await self._publish(messages)]
        await asyncio.gather(*sent)
        ingest_metrics.observe_batch(batch, datetime.now(UTC))
        # Every state's changelog record acknowledged before the commit. Not
        # through the producer's flush: it gives up once 0.1 s pass without a
        # send from Faust's buffer, and a snapshot too large to share a batch
        # waits for the one before it — measured with two workers: a
        # partition's changelog held 3 records when ~100 of its events were
        # committed, so a worker dying then would leave states behind commits.
        await asyncio.gather(*(self._write_state(k, s) for k, s in batch.snapshots.items()))
        await self._commit({m.tp for m in admission.admitted})
        log.info(
            "batch: %d records (%d dropped), %d ops, %d dead letters%s in %.0f ms",
            len(records),
            admission.dropped,
            sum(len(r.ops) for r in batch.results),
            sum(r.dead_letter is not None for r in batch.results),
            " (isolated after a stage error)" if batch.isolated else "",
            (time.perf_counter() - started) * 1000,
        )

    async def _with_known_positions(self, messages: Sequence[Any]) -> Sequence[Any]:
        """``messages``, once every partition among them starts at its committed offset."""
        unknown = {m.tp for m in messages if not self.positions.known(m.tp)}
        if unknown:
            # A partition first seen (start, reassignment) continues at the
            # group's commit, or at the log's start without one (the group
            # resets to "earliest").
            committed = await asyncio.to_thread(self.offsets.committed, self.config.app_id)
            fresh = [tp for tp in unknown if (tp.topic, tp.partition) not in committed]
            earliest = await self.app.consumer.earliest_offsets(*fresh) if fresh else {}
            for tp in unknown:
                position = (tp.topic, tp.partition)
                self.positions.start(
                    tp, committed[position] if position in committed else earliest[tp]
                )
        return messages

    async def _rewind(self, tp: TP, expected: int) -> None:
        """Seek ``tp`` back over a hole, to where the broker's next record from ``expected`` is."""
        hole, offset = self._rewound.get(tp, (None, expected))
        if hole != expected:  # a new hole: ask the broker once, say so once
            found = await asyncio.to_thread(
                first_offset_from, self.config.bootstrap, tp.topic, tp.partition, expected
            )
            offset = expected if found is None else found
            self._rewound[tp] = (expected, offset)
            log.warning(
                "records of %s missing from offset %d: re-reading from %d", tp, expected, offset
            )
        self.positions.start(tp, offset)
        await self._seek(tp, offset)

    async def _seek(self, tp: TP, offset: int) -> None:
        """Seek ``tp`` to ``offset`` unless a rebalance took it away meanwhile.

        The stall checks decide from an assignment read before they await the
        broker's offsets; measured in CI, the group rebalanced in between, the
        seek of a partition no longer assigned raised aiokafka's
        IllegalStateError in the recommit timer, and the worker crashed. A
        partition that is gone is its new owner's to read.
        """
        if tp not in self.app.consumer.assignment():
            log.info("%s no longer assigned: not seeking it to %d", tp, offset)
            return
        try:
            await self.app.consumer.seek_wait({tp: offset})
        except IllegalStateError:
            log.info("%s revoked while seeking it to %d", tp, offset)

    async def _on_revoked(
        self, sender: Any, /, *args: Any, signal: BaseSignalT[Any], **_: Any
    ) -> None:
        # Faust sends on_partitions_revoked(sender, revoked, signal=...).
        revoked: set[TP] = args[0]
        # The batch in hand finishes first: outputs, states and its commit,
        # which the group still accepts while it prepares the rebalance. Faust
        # waits for in-flight events itself only when they are acked, and the
        # input topics are not (module docstring); forgetting the positions
        # under a running batch made its commit raise KeyError and the worker
        # exit 70 — measured: the survivor of a SIGKILLed peer exited at the
        # rebalance that handed it the dead worker's partitions.
        async with self._batch_lock:
            self.positions.forget(revoked)
            for tp in revoked:
                self._committed.pop(tp, None)
                self._progress.pop(tp, None)
                self._waiting.pop(tp, None)

    async def _commit(self, tps: set[Any]) -> None:
        """Commit the batch's partitions at their next offsets, all output being in Kafka."""
        positions = {tp: self.positions.next_offset(tp) for tp in tps}
        # Consumer._commit is the hook Faust's own commits end in (the aiokafka
        # driver commits to the group, only partitions still assigned, and
        # returns False after a rebalance: the new owner re-processes, which
        # note 1 makes harmless). The public Consumer.commit() commits acked
        # offsets only, and the input topics have acks off (module docstring).
        committed = await self.app.consumer._commit(positions)  # type: ignore[attr-defined]
        if committed:
            # _commit silently leaves out partitions not (yet) assigned: only
            # the assigned ones are in the group now; ``recommit`` retries the rest.
            assigned = self.app.consumer.assignment()
            self._committed |= {tp: offset for tp, offset in positions.items() if tp in assigned}

    def _record(self, message: Any) -> SourceRecord:
        return SourceRecord(
            topic=message.topic.removeprefix(self.config.namespace),
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value if message.value is not None else b"",
            read_at=ingest_metrics.broker_time(getattr(message, "timestamp", None)),
        )

    def _write_state(self, key: str, snapshot: dict[str, Any]) -> Awaitable[RecordMetadata]:
        """Store a user's state in the table; the future resolves when its changelog record is."""
        # What ``table[key] = snapshot`` does, keeping the send's future it drops.
        raw = key.encode()
        sent: Awaitable[RecordMetadata] = self.table.send_changelog(
            self.table.partition_for_key(raw), raw, snapshot
        )
        self.table.data[raw] = snapshot
        return sent

    def _encode_state(self, snapshot: dict[str, Any]) -> bytes:
        return table_codec(snapshot, self.config.max_message_bytes)

    def _load_state(self, key: str) -> UserMemoryState | None:
        snapshot = self.table.get(key.encode())
        return UserMemoryState.restore(snapshot) if snapshot is not None else None

    async def _publish(self, messages: Sequence[Message]) -> list[Awaitable[RecordMetadata]]:
        sent: list[Awaitable[RecordMetadata]] = []
        for message in messages:
            topic = self.outputs[message.topic]
            sent.append(await topic.send(key=message.key, value=message.value))
        return sent


def table_codec(snapshot: dict[str, Any], max_bytes: int) -> bytes:
    """A state snapshot as the table writes it (``value_serializer="json"``: orjson).

    Raises where the changelog write would fail: an unencodable value, or a
    record over the changelog topic's ``max.message.bytes``.
    """
    encoded = codecs.dumps(TABLE_CODEC, snapshot)
    if len(encoded) > max_bytes:
        raise ValueError(f"state is {len(encoded):,} bytes; the changelog takes {max_bytes:,}")
    return encoded


def build_app(config: WorkerConfig, pipeline: IngestPipeline, partitions: int) -> faust.App:
    """The Faust app with its one agent over the three input topics."""
    app = faust.App(
        config.app_id,
        broker=[f"kafka://{server}" for server in config.bootstrap.split(",")],
        store="memory://",  # recovered from the compacted changelog on start
        processing_guarantee="at_least_once",  # see the module docstring
        topic_partitions=partitions,
        consumer_auto_offset_reset="earliest",
        # No standby replicas: a standby promoted to active after a peer's
        # death read its changelog partitions again from their start while its
        # read position stood at the standby's end, so Faust dropped those
        # records and recovery waited for them for good (measured in CI: "No
        # event received for active tp ...-changelog since recovery start",
        # the taken-over input partitions paused until the test gave up).
        # Without standbys a takeover reads the changelog once, as on a start.
        table_standby_replicas=0,
        broker_session_timeout=SESSION_TIMEOUT_S,
        producer_max_request_size=config.max_message_bytes,
        datadir=str(config.data_dir / config.app_id),
        web_enabled=False,  # no HTTP port to collide with other workers
    )
    source = app.topic(
        *config.topics.inputs,
        key_serializer="raw",
        value_serializer="raw",
        acks=False,  # the agent commits these offsets itself (module docstring)
    )
    agent = IngestAgent(app, config, pipeline, partitions)
    app.agent(source, name="ingest")(agent.run)
    app.timer(interval=RECOMMIT_INTERVAL_S)(agent.recommit)
    return app


def run_worker(
    config: WorkerConfig,
    settings: Settings,
    *,
    partitions: int,
    metrics_port: int,
    loglevel: str = "info",
) -> None:
    """Load the stages and run the worker until SIGTERM/SIGINT (``input_partitions`` first)."""
    started = time.perf_counter()
    pipeline = load_pipeline(settings, stage_timer=ingest_metrics.time_stage)
    log.info("stages loaded in %.1f s", time.perf_counter() - started)
    config.data_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    app = build_app(config, pipeline, partitions)
    serve_metrics(settings.metrics.host, metrics_port, "faust ingest")
    faust.Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()
