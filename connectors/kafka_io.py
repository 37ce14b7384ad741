"""Kafka I/O on confluent-kafka: keyed idempotent producing, transactions, reading back.

Connectors take plain arguments (a bootstrap string, sizes); only jobs/ read
the settings object. Every producer here partitions with murmur2, the Java
client's partitioner, so a ``tenant:user`` key lands on the same partition
whether it was written by this module, kcat, a Java service, Faust (aiokafka)
or Flink — and all of a user's events stay in order on one partition.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from connectors import kafka_admin
from schemas.deadletter import DeadLetter
from schemas.topics import MEMORY_DLQ
from schemas.validate import InvalidEvent

# librdkafka's "murmur2_random" is Java's default partitioner for keyed
# messages (keyless ones are spread randomly); its own default (crc32) is not.
PARTITIONER = "murmur2_random"
# How long a produced message may wait for its acknowledgement before it is
# reported as failed. librdkafka's default is 300 s; a CLI must fail sooner.
DEFAULT_DELIVERY_TIMEOUT_S = 30.0
# A reader that has seen end-of-partition everywhere waits this long for late
# records before it calls the topic idle (a producer flushed just before).
DEFAULT_IDLE_S = 0.5


class DeliveryFailed(RuntimeError):
    """At least one message was not acknowledged by the broker."""


def _producer_config(
    bootstrap: str, client_id: str, max_message_bytes: int, delivery_timeout_s: float
) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        # Idempotence implies acks=all and in-order retries without duplicates;
        # both are spelled out so the guarantee is visible here.
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": PARTITIONER,
        "message.max.bytes": max_message_bytes,
        "message.timeout.ms": int(delivery_timeout_s * 1000),
    }


class KeyedProducer:
    """An idempotent producer (acks=all) that counts acknowledgements and failures.

    ``flush()`` raises ``DeliveryFailed`` when any message was not acknowledged,
    so no caller can lose a message without noticing.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "memstream",
        max_message_bytes: int = 1024 * 1024,
        delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
    ) -> None:
        self._config = _producer_config(bootstrap, client_id, max_message_bytes, delivery_timeout_s)
        self._delivery_timeout_s = delivery_timeout_s
        self._producer = Producer(self._config)
        self.delivered = 0
        self.failures: list[str] = []

    def check_reachable(self, timeout_s: float = 10.0) -> None:
        """Fail fast with a clear error when the broker cannot be reached."""
        try:
            self._producer.list_topics(timeout=timeout_s)
        except Exception as exc:  # KafkaException; the message names the cause
            raise DeliveryFailed(
                f"cannot reach Kafka at {self._config['bootstrap.servers']}: {exc}"
            ) from exc

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failures.append(f"{msg.topic()}: {err.str()}")

    def send(self, topic: str, value: bytes, key: str | None = None) -> None:
        """Queue one message; waits for room when the local queue is full."""
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=self._on_delivery)
            except BufferError:
                self._producer.poll(0.1)  # serve delivery reports to free the queue
                continue
            self._producer.poll(0)
            return

    def send_and_wait(self, topic: str, value: bytes, key: str | None = None) -> tuple[int, int]:
        """Send one message and wait for its acknowledgement; its (partition, offset).

        Raises DeliveryFailed when the broker refuses it or does not answer within
        the delivery timeout. Delivery reports of messages queued by :meth:`send`
        are served meanwhile; a failure of this message is raised, not recorded
        in ``failures`` (the caller learns of it here).
        """
        report: list[tuple[KafkaError | None, Message]] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            report.append((err, msg))

        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=delivered)
            except BufferError:
                self._producer.poll(0.1)
                continue
            break
        # The producer itself fails the message after message.timeout.ms; the extra
        # seconds only let that report arrive.
        deadline = time.monotonic() + self._delivery_timeout_s + 5
        while not report and time.monotonic() < deadline:
            self._producer.poll(0.1)
        if not report:
            raise DeliveryFailed(f"{topic}: no acknowledgement")
        err, msg = report[0]
        partition, offset = msg.partition(), msg.offset()
        if err is not None or partition is None or offset is None:
            raise DeliveryFailed(f"{topic}: {err.str() if err else 'no position reported'}")
        self.delivered += 1
        return partition, offset

    def flush(self, timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S + 5) -> None:
        """Wait for every acknowledgement; raise DeliveryFailed on any failure."""
        remaining = self._producer.flush(timeout_s)
        if remaining:
            self.failures.append(f"{remaining} message(s) still unacknowledged after flush")
        if self.failures:
            shown = "; ".join(self.failures[:5])
            raise DeliveryFailed(f"{len(self.failures)} delivery failure(s): {shown}")


def transactional_producer(
    bootstrap: str,
    transactional_id: str,
    *,
    max_message_bytes: int = 1024 * 1024,
    init_timeout_s: float = 30.0,
) -> Producer:
    """A producer registered under ``transactional_id`` (fences older instances)."""
    config = _producer_config(
        bootstrap, transactional_id, max_message_bytes, DEFAULT_DELIVERY_TIMEOUT_S
    )
    config["transactional.id"] = transactional_id
    producer = Producer(config)
    producer.init_transactions(init_timeout_s)
    return producer


@contextmanager
def transaction(producer: Producer, timeout_s: float = 30.0) -> Iterator[Producer]:
    """Commit what the block produced, or abort it if the block raises."""
    producer.begin_transaction()
    try:
        yield producer
    except BaseException:
        producer.abort_transaction(timeout_s)
        raise
    producer.commit_transaction(timeout_s)


def consumer(
    bootstrap: str,
    group_id: str,
    *,
    read_committed: bool = True,
    **extra: Any,
) -> Consumer:
    """A consumer that starts at the earliest offset and commits explicitly.

    ``read_committed`` (the default) hides records of open and aborted
    transactions, which is what every reader of ``memory.ops`` needs.
    """
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    config.update(extra)
    return Consumer(config)


@dataclass(frozen=True)
class Record:
    """One consumed Kafka record."""

    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes


def _partitions(bootstrap: str, topic: str) -> int:
    count = kafka_admin.partition_counts(bootstrap, [topic]).get(topic)
    if count is None:
        raise KeyError(f"topic {topic!r} does not exist on {bootstrap}")
    return count


_NO_LEADER_YET = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)


def _high_watermark(probe: Consumer, partition: TopicPartition, deadline: float) -> int:
    # A topic created a moment ago may not have elected its partition leaders
    # yet: those errors pass within a second or two on the local broker.
    while True:
        try:
            remaining = max(0.1, deadline - time.monotonic())
            return int(probe.get_watermark_offsets(partition, timeout=remaining)[1])
        except KafkaException as exc:
            if exc.args[0].code() not in _NO_LEADER_YET or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def end_offsets(bootstrap: str, topic: str, timeout_s: float = 10.0) -> dict[int, int]:
    """Per partition, the offset the next record of ``topic`` will get."""
    deadline = time.monotonic() + timeout_s
    probe = consumer(bootstrap, "memstream-metadata")
    try:
        return {
            p: _high_watermark(probe, TopicPartition(topic, p), deadline)
            for p in range(_partitions(bootstrap, topic))
        }
    finally:
        probe.close()


def _record(msg: Message) -> Record:
    partition, offset, key = msg.partition(), msg.offset(), msg.key()
    if partition is None or offset is None:  # only error events lack a position
        raise RuntimeError(f"record of {msg.topic()} without a position")
    return Record(
        topic=str(msg.topic()),
        partition=partition,
        offset=offset,
        key=key.decode("utf-8", errors="replace") if key is not None else None,
        value=msg.value() or b"",  # a tombstone (None) reads as empty
    )


def read_topic(
    bootstrap: str,
    topic: str,
    *,
    start: dict[int, int] | None = None,
    read_committed: bool = True,
    idle_s: float = DEFAULT_IDLE_S,
    timeout_s: float = 60.0,
) -> list[Record]:
    """Read ``topic`` from ``start`` (default: the beginning) until it is idle.

    Idle means every partition has reported end-of-partition (for a
    read_committed reader: the last stable offset) and no record arrived for
    ``idle_s``. No group offsets are committed. Raises TimeoutError when the
    topic is not idle within ``timeout_s``.
    """
    partitions = _partitions(bootstrap, topic)
    reader = consumer(
        bootstrap,
        "memstream-reader",
        read_committed=read_committed,
        **{"enable.partition.eof": True},
    )
    starts = start or {}
    reader.assign(
        [TopicPartition(topic, p, starts.get(p, OFFSET_BEGINNING)) for p in range(partitions)]
    )
    records: list[Record] = []
    at_end: set[int] = set()
    last_record = time.monotonic()
    deadline = last_record + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = reader.poll(0.1)
            if msg is None:
                quiet = time.monotonic() - last_record >= idle_s
                if len(at_end) == partitions and quiet:
                    return records
                continue
            error = msg.error()
            partition = msg.partition()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                if partition is not None:  # EOF events always name their partition
                    at_end.add(partition)
                continue
            if error is not None:
                raise RuntimeError(f"reading {topic}: {error.str()}")
            record = _record(msg)
            at_end.discard(record.partition)
            last_record = time.monotonic()
            records.append(record)
    finally:
        reader.close()
    raise TimeoutError(f"{topic} did not become idle within {timeout_s} s")


class DeadLetterPublisher:
    """Sends rejected input to ``memory.dlq`` wrapped in a DeadLetter envelope."""

    def __init__(self, producer: KeyedProducer, topic: str = MEMORY_DLQ) -> None:
        self._producer = producer
        self.topic = topic
        self.sent = 0

    def publish(
        self, original: bytes, error: InvalidEvent, source_topic: str, **where: int | str | None
    ) -> DeadLetter:
        """Wrap ``original`` with why it was rejected and where it came from, and send it.

        ``where`` takes the DeadLetter location fields: partition, offset, line, key, stage.
        """
        letter = error.to_dead_letter(original, source_topic, **where)
        self._producer.send(self.topic, letter.model_dump_json().encode("utf-8"), key=letter.key)
        self.sent += 1
        return letter
