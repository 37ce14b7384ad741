"""The sink job: ``memory.ops`` in, Redis / Chroma / Neo4j written, offsets committed after.

A composition root. One consumer (read_committed: records of open or aborted
ingest transactions stay invisible) takes up to ``batch_size`` operations at a
time; each store's :class:`StoreLane` applies the batch directly or, following
its :class:`~pipelines.backpressure.StorePolicy`, parks it in that store's Redis
spool; only then are the batch's offsets committed. A crash at any point
therefore re-delivers at most the batch in hand, and every write is
idempotent (op ids and fact ids are deterministic), so each fact version ends
up in each store exactly once.

Hints (jobs/sink/hints.py): after a batch is applied, recall runs for each
``request_hint`` operation in it, and the hints go to ``memory.hints`` in one
Kafka transaction with the batch's dead letters and its consumer offsets
(``send_offsets_to_transaction``). The transaction commits all of them or
none: a crash before the commit re-delivers the batch and its hints are
published again in the next transaction, the aborted ones never visible to
``read_committed`` readers; after the commit the batch is never re-delivered.
So every request's hint is on ``memory.hints`` once (a copy of a request on
``memory.ops`` is told apart by its claim, connectors/redis_hints.py).

Backpressure (docs/guarantees.md): Chroma and Neo4j fall back to a spool of their own
— a Redis stream per store — when they are down, raise a transient error, or
write slower than the latency budget; while a store spools, every later
operation for it is spooled too, and the spool is replayed oldest first, in
batches, before direct writes resume (per-key order kept). Working memory has
no fallback: its spool would live in the very Redis that is failing, so the job
pauses and retries the batch instead, committing nothing meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaException,
    Message,
    TopicPartition,
)
from pydantic import ValidationError

from connectors.kafka_io import consumer, transaction, transactional_producer
from connectors.redis_hints import HintClaims
from jobs.serve.memory_service import MemoryService
from jobs.sink import metrics as metrics
from jobs.sink.hints import HintComposer, Requested
from jobs.sink.lane import Clock, StoreLane, StoreUnavailable
from jobs.stores import Stores, open_stores
from memstream.settings import Settings
from pipelines.backpressure import BackpressureConfig
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.ops import MemoryOperation, OpType
from schemas.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SinkConfig:
    """What the sink job needs; ``from_settings`` fills it from the settings object.

    The stores are opened from ``settings`` by ``jobs.stores.open_stores`` (the
    same function the query service uses); the tunables come from the
    settings' ``sink`` section (memstream/settings.py keeps their defaults).
    """

    settings: Settings  # the stores' and the broker's addresses
    group_id: str
    batch_size: int
    backpressure: BackpressureConfig
    topic_namespace: str = ""  # prefix of the topics and of the consumer group
    store_namespace: str | None = None  # Redis / Chroma / Neo4j namespace (shadow runs, tests)
    # How long one poll waits for records: consume() waits this long for a
    # batch that never fills at low rates, so it adds up to this much latency;
    # it also paces spool probes while the topic is quiet. 0.5 s cost ~0.4 s of
    # p50 at 23 ev/s in benchmarks/bench_ingest.py; 0.05 s costs 20 idle polls/s.
    poll_timeout_s: float = 0.05
    # Pause before retrying a batch whose working-memory write failed (Redis
    # down): short enough to resume within a second of a restart.
    retry_pause_s: float = 1.0
    # A crashed sink's partitions go to its restart (or a peer) after this.
    # librdkafka's default is 45 s; 10 s still spans several heartbeats (3 s),
    # which librdkafka sends from its own thread, so a long drain never trips it.
    session_timeout_s: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> SinkConfig:
        """The ``sink`` section's group, batch size and latency budget; ``overrides`` win."""
        sink = settings.sink
        params: dict[str, Any] = {
            "group_id": sink.group_id,
            "batch_size": sink.batch_size,
            "backpressure": BackpressureConfig(latency_budget_s=sink.latency_budget_ms / 1000),
        }
        params.update(overrides)
        return cls(settings=settings, **params)

    @property
    def bootstrap(self) -> str:
        """The Kafka bootstrap servers."""
        return self.settings.kafka.bootstrap

    @property
    def max_message_bytes(self) -> int:
        """The largest record the dead-letter producer sends."""
        return self.settings.kafka.max_message_bytes

    @property
    def topics(self) -> Topics:
        """The topic names under ``topic_namespace``."""
        return Topics(self.topic_namespace)

    @property
    def group(self) -> str:
        """The consumer group, namespaced."""
        return self.topic_namespace + self.group_id

    def topic(self, name: str) -> str:
        """A topic name, namespaced."""
        return self.topics.name(name)

    def new_transactional_id(self) -> str:
        """A transactional id for one sink process: the group plus a random suffix.

        Zombies are fenced by the consumer group's generation, which
        ``send_offsets_to_transaction`` carries (KIP-447), so the id need not
        be stable across restarts.
        """
        return f"{self.group}-{uuid.uuid4().hex[:12]}"

    def open_stores(self) -> Stores:
        """The three stores of ``store_namespace``, with the backpressure latency budget."""
        budget = self.backpressure.latency_budget_s
        return open_stores(self.settings, self.store_namespace, latency_budget_s=budget)


def open_lanes(config: SinkConfig, clock: Clock = time.monotonic) -> list[StoreLane]:
    """Connect to the three stores and create what they need; working memory first."""
    return lanes_for(config.open_stores(), config.store_namespace, config.backpressure, clock=clock)


def lanes_for(
    stores: Stores,
    store_namespace: str | None,
    backpressure: BackpressureConfig,
    *,
    clock: Clock = time.monotonic,
) -> list[StoreLane]:
    """The lanes over open stores (set up here): working memory direct, the others spooled.

    Working memory has no fallback: its spool would live in the very Redis
    that is failing. Chroma and Neo4j spool to Redis streams of their own.
    """
    stores.setup()
    working = stores.working
    return [
        StoreLane(working.store_name, working, clock=clock),
        *(
            StoreLane.spooled(
                s, working.client, store_namespace=store_namespace, config=backpressure, clock=clock
            )
            for s in (stores.episodic, stores.semantic)
        ),
    ]


class SinkJob:
    """The consume → apply → commit loop over a set of lanes."""

    def __init__(
        self,
        config: SinkConfig,
        lanes: Sequence[StoreLane],
        hints: HintComposer | None = None,
    ) -> None:
        """Build the consumer and the transactional producer (nothing is polled yet).

        ``hints`` composes the hints (default: recall over ``config``'s stores,
        loaded at the first request).
        """
        self.config = config
        self.lanes = list(lanes)
        self.consumer: Consumer = consumer(
            config.bootstrap,
            config.group,
            read_committed=True,
            **{"session.timeout.ms": int(config.session_timeout_s * 1000)},
        )
        # Dead letters, hints and the consumer offsets: one transaction per batch.
        self.producer = transactional_producer(
            config.bootstrap,
            config.new_transactional_id(),
            max_message_bytes=config.max_message_bytes,
        )
        self.hints = hints if hints is not None else _hint_composer(config)
        self.applied = 0
        self.hints_published = 0
        # What this sink last committed per (topic, partition).
        self._committed: dict[tuple[str, int], int] = {}

    def run(self, stop: threading.Event) -> None:
        """Consume until ``stop`` is set; the batch in hand completes and is committed first."""
        self.consumer.subscribe([self.config.topics.memory_ops])
        try:
            while not stop.is_set():
                messages = self.consumer.consume(self.config.batch_size, self.config.poll_timeout_s)
                if not messages:
                    if not self._apply([], stop):  # a lane's spool probe may be due
                        return
                    self._commit_moved()
                    continue
                ops, appended, requested, letters = self._decode(messages)
                if not self._apply(ops, stop):
                    return  # stopped while a store was down: nothing committed
                observe_applied(ops, appended, time.time())
                # Opened only now: a store down for minutes (the retries above)
                # must not outlast the transaction's timeout.
                with transaction(self.producer):
                    for letter in letters:
                        self._produce(self.config.topics.dlq, letter.model_dump_json(), letter.key)
                    self._publish_hints(requested)
                    offsets = self._positions(messages)
                    self.producer.send_offsets_to_transaction(
                        offsets, self.consumer.consumer_group_metadata()
                    )
                self._committed.update({(tp.topic, tp.partition): tp.offset for tp in offsets})
                metrics.BATCHES_COMMITTED.inc()
                self.applied += len(ops)
        finally:
            self.consumer.close()
            self.hints.close()
            for lane in self.lanes:
                lane.sink.close()

    def _commit_moved(self) -> None:
        """Commit positions that moved with no record to apply: past a commit marker.

        A transaction's commit marker read after the batch before it was
        committed moves the consumer's position without handing it a record;
        left uncommitted, the group stays one offset short of the log end.
        """
        assigned = self.consumer.assignment()
        if not assigned:
            return
        moved = [
            tp
            for tp in self.consumer.position(assigned)
            if tp.offset is not None
            and tp.offset >= 0
            and tp.offset > self._committed.get((tp.topic, tp.partition), -1)
        ]
        if not moved:
            return
        with transaction(self.producer):
            self.producer.send_offsets_to_transaction(
                moved, self.consumer.consumer_group_metadata()
            )
        self._committed.update({(tp.topic, tp.partition): tp.offset for tp in moved})

    def _positions(self, messages: Sequence[Message]) -> list[TopicPartition]:
        """What the batch commits: per partition it read, the consumer's position after it.

        One past the batch's last record is not always the end of what was
        consumed: on a topic written in transactions (the Flink job's
        ``memory.ops``), a commit marker follows the last record. Committing
        before it would leave the group one offset short of the log end for
        ever (``memstream run`` waits for the end). The consumer's position
        has stepped over markers it read, as the plain commit did before the
        sink committed in a transaction.
        """
        batch = next_offsets(messages)
        positions = {
            (tp.topic, tp.partition): tp.offset
            for tp in self.consumer.position(batch)
            if tp.offset is not None and tp.offset >= 0
        }
        return [
            TopicPartition(
                tp.topic, tp.partition, max(tp.offset, positions.get((tp.topic, tp.partition), 0))
            )
            for tp in batch
        ]

    def _publish_hints(self, requested: Sequence[Requested]) -> None:
        """Recall for the batch's hint requests; their hints join the batch's transaction."""
        if not requested:
            return
        with metrics.HINT_SECONDS.time():
            hints = self.hints.compose(requested)
        for hint in hints:
            self._produce(self.config.topics.hints, hint.model_dump_json(), hint.key)
            metrics.HINTS_PUBLISHED.labels(reason=hint.reason).inc()
            if hint.recall_error is not None:
                metrics.HINTS_DEGRADED.inc()
        metrics.HINT_COPIES.inc(len(requested) - len(hints))
        self.hints_published += len(hints)

    def _apply(self, ops: Sequence[MemoryOperation], stop: threading.Event) -> bool:
        while True:
            try:
                for lane in self.lanes:
                    lane.apply(ops)  # also drains a lane's spool when its probe is due
                return True
            except (StoreUnavailable, redis.ConnectionError, redis.TimeoutError) as exc:
                # Redis (working memory or the spools) is down: the whole batch is
                # retried, which is harmless for the lanes that already took it.
                log.warning(
                    "batch not applied, retrying in %.1f s: %s", self.config.retry_pause_s, exc
                )
                if stop.wait(self.config.retry_pause_s):
                    return False

    def _produce(self, topic: str, value: str, key: str | None) -> None:
        """One record of the open transaction (waits for room in the local queue)."""
        while True:
            try:
                self.producer.produce(topic, value=value.encode("utf-8"), key=key)
                return
            except BufferError:
                self.producer.poll(0.1)

    def _decode(
        self, messages: Sequence[Message]
    ) -> tuple[list[MemoryOperation], list[float], list[Requested], list[DeadLetter]]:
        """The batch's operations, their broker times (epoch s), hint requests, dead letters.

        A dead letter wraps a record that is no operation; it is produced in
        the batch's transaction, after the batch was applied.
        """
        ops: list[MemoryOperation] = []
        appended: list[float] = []
        requested: list[Requested] = []
        letters: list[DeadLetter] = []
        read_at = time.time()
        for message in messages:
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise KafkaException(error)
                log.warning("consumer: %s", error.str())
                continue
            # Base topic names: a test's or shadow run's namespace is no metric label.
            topic = self.config.topics.base(str(message.topic()))
            metrics.EVENTS_IN.labels(topic=topic).inc()
            raw = message.value() or b""
            try:
                op = MemoryOperation.model_validate_json(raw)
            except ValidationError as exc:
                letters.append(self._dead_letter(message, raw, exc))
                continue
            ops.append(op)
            appended.append(broker_time(message, read_at))
            if op.op_type is OpType.REQUEST_HINT:
                requested.append(Requested(op, message.partition() or 0, message.offset() or 0))
        return ops, appended, requested, letters

    def _dead_letter(self, message: Message, raw: bytes, exc: ValidationError) -> DeadLetter:
        key = message.key()
        letter = DeadLetter.wrap(
            raw,
            reason=DeadLetterReason.SCHEMA_VIOLATION,
            detail=f"not a memory operation: {exc.error_count()} error(s)",
            errors=[str(e["msg"]) for e in exc.errors()],
            topic=str(message.topic()),
            partition=message.partition(),
            offset=message.offset(),
            key=key.decode("utf-8", "replace") if key is not None else None,
            stage="sink",
        )
        metrics.DEAD_LETTERS.labels(reason=letter.reason.value).inc()
        return letter


def next_offsets(messages: Sequence[Message]) -> list[TopicPartition]:
    """Per partition of ``messages``, one past its last record: what the batch commits."""
    ends: dict[tuple[str, int], int] = {}
    for message in messages:
        partition, offset = message.partition(), message.offset()
        if partition is None or offset is None or offset < 0:
            continue  # an error event: no position
        key = (str(message.topic()), partition)
        ends[key] = max(ends.get(key, 0), offset + 1)
    return [TopicPartition(topic, partition, end) for (topic, partition), end in ends.items()]


def _hint_composer(config: SinkConfig) -> HintComposer:
    """Recall over the sink's own stores (MiniLM loaded at the first request)."""
    settings = config.settings
    claims = HintClaims(
        redis.Redis.from_url(settings.redis.url, decode_responses=True),
        namespace=config.store_namespace,
        ttl=settings.hints.claim_ttl,
    )

    def service() -> MemoryService:
        return MemoryService.from_settings(settings, config.store_namespace)

    return HintComposer(service, claims, k=settings.hints.k)


def broker_time(message: Message, read_at: float) -> float:
    """When ``message`` reached the broker: its Kafka timestamp, else when it was read.

    The timestamp is the broker's append time on a topic with LogAppendTime and
    the producing job's clock at send otherwise (the ingest job stamps each
    record as it sends it); either way it is the pipeline's clock, never the
    event's ``ts``. A record without one was at least there when it was read.
    """
    kind, stamp_ms = message.timestamp()
    return read_at if kind == TIMESTAMP_NOT_AVAILABLE else stamp_ms / 1000


def observe_applied(ops: Sequence[MemoryOperation], appended: Sequence[float], now: float) -> None:
    """Latencies of a batch every lane has written or spooled at ``now`` (epoch seconds).

    ``appended[i]`` is when ``ops[i]``'s record reached the broker: the
    end-to-end histogram starts there. The event-time lag starts at the event's
    own time. Negative spans (clocks apart) count as 0.
    """
    applied_at = datetime.fromtimestamp(now, UTC)
    for op, at in zip(ops, appended, strict=True):
        metrics.END_TO_END_SECONDS.observe(max(0.0, now - at))
        lag = (applied_at - op.at).total_seconds()
        metrics.EVENT_TIME_LAG_SECONDS.observe(max(0.0, lag))
