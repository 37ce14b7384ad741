"""Kafka I/O against the real local broker: keys and partitions, transactions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pytest
from aiokafka.partitioner import murmur2  # an independent client's partitioner

from connectors import kafka_admin
from connectors.kafka_io import (
    DeliveryFailed,
    KeyedProducer,
    read_topic,
    transaction,
    transactional_producer,
)
from memstream.settings import Settings


@pytest.fixture
def topic(kafka_bootstrap: str, settings: Settings, unique: str) -> Iterator[str]:
    """A fresh topic with the configured partition count, deleted afterwards."""
    name = f"test.kafka-io.{unique}"
    spec = kafka_admin.TopicSpec(name, settings.kafka.partitions)
    kafka_admin.ensure_topics(kafka_bootstrap, [spec])
    yield name
    kafka_admin.delete_topics(kafka_bootstrap, [name])


def java_partition(key: str, partitions: int) -> int:
    """Where Java's default partitioner (and aiokafka's) puts a keyed record."""
    return (murmur2(key.encode("utf-8")) & 0x7FFFFFFF) % partitions


def test_round_trip_keeps_each_key_on_its_hashed_partition(
    kafka_bootstrap: str, settings: Settings, topic: str, unique: str
) -> None:
    keys = [f"tenant-{t}-{unique}:user-{u}" for t in range(3) for u in range(8)]
    producer = KeyedProducer(kafka_bootstrap)
    sent = [(keys[i % len(keys)], f"message {i}".encode()) for i in range(240)]
    for key, value in sent:
        producer.send(topic, value, key=key)
    producer.flush()
    assert producer.delivered == len(sent)

    records = read_topic(kafka_bootstrap, topic)

    assert sorted((r.key, r.value) for r in records) == sorted(sent)
    partitions = settings.kafka.partitions
    by_key: dict[str | None, list[int]] = defaultdict(list)
    for record in records:
        by_key[record.key].append(record.partition)
    for key in keys:
        assert set(by_key[key]) == {java_partition(key, partitions)}, key
    assert set(by_key) == set(keys)
    assert len({r.partition for r in records}) > 1  # the keys really spread out
    # Within a partition, each key's messages keep the order they were sent in.
    for key in keys:
        mine = sorted((r for r in records if r.key == key), key=lambda r: r.offset)
        assert [r.value for r in mine] == [v for k, v in sent if k == key]


def test_transaction_is_invisible_to_read_committed_until_commit(
    kafka_bootstrap: str, topic: str, unique: str
) -> None:
    producer = transactional_producer(kafka_bootstrap, f"test-tx-{unique}")
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=f"tx {i}".encode(), key=f"t:{i}")
    producer.flush()

    assert read_topic(kafka_bootstrap, topic, read_committed=True) == []
    # The records are on the broker, only hidden: an uncommitted reader sees them.
    assert len(read_topic(kafka_bootstrap, topic, read_committed=False)) == 5

    producer.commit_transaction()
    committed = read_topic(kafka_bootstrap, topic, read_committed=True)
    assert sorted(r.value for r in committed) == [f"tx {i}".encode() for i in range(5)]


def test_aborted_transaction_is_never_visible(
    kafka_bootstrap: str, topic: str, unique: str
) -> None:
    producer = transactional_producer(kafka_bootstrap, f"test-tx-{unique}")
    with pytest.raises(RuntimeError, match="crash inside"), transaction(producer):
        for i in range(4):
            producer.produce(topic, value=f"aborted {i}".encode(), key=f"t:{i}")
        producer.flush()
        raise RuntimeError("crash inside the transaction")
    with transaction(producer):
        producer.produce(topic, value=b"committed", key="t:0")

    visible = read_topic(kafka_bootstrap, topic, read_committed=True)
    assert [r.value for r in visible] == [b"committed"]
    everything = read_topic(kafka_bootstrap, topic, read_committed=False)
    assert sorted(r.value for r in everything) == sorted(
        [b"committed", *(f"aborted {i}".encode() for i in range(4))]
    )


def test_rejected_message_fails_flush_loudly(kafka_bootstrap: str, unique: str) -> None:
    # The topic takes at most 100 kB; the producer allows 8 MiB, so the broker
    # itself refuses the record and only the delivery report can tell.
    small = f"test.kafka-io-small.{unique}"
    spec = kafka_admin.TopicSpec(small, 1, {"max.message.bytes": "100000"})
    kafka_admin.ensure_topics(kafka_bootstrap, [spec])
    try:
        producer = KeyedProducer(kafka_bootstrap, max_message_bytes=8 * 1024 * 1024)
        producer.send(small, b"x" * 200_000, key="t:u")
        producer.send(small, b"fits", key="t:u")
        with pytest.raises(DeliveryFailed, match="delivery failure"):
            producer.flush()
        assert any("too large" in failure.lower() for failure in producer.failures)
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [small])


def test_unreachable_broker_is_reported_with_its_address() -> None:
    producer = KeyedProducer("127.0.0.1:1")  # nothing listens on port 1
    with pytest.raises(DeliveryFailed, match=r"cannot reach Kafka at 127\.0\.0\.1:1"):
        producer.check_reachable(timeout_s=2.0)


def test_send_and_wait_returns_where_the_broker_put_the_message(
    kafka_bootstrap: str, settings: Settings, topic: str, unique: str
) -> None:
    producer = KeyedProducer(kafka_bootstrap)
    key = f"tenant-{unique}:user"
    first = producer.send_and_wait(topic, b"first", key=key)
    second = producer.send_and_wait(topic, b"second", key=key)
    assert first[0] == second[0] == java_partition(key, settings.kafka.partitions)
    assert second[1] == first[1] + 1
    assert producer.delivered == 2
    records = {(r.partition, r.offset): r.value for r in read_topic(kafka_bootstrap, topic)}
    assert records == {first: b"first", second: b"second"}


def test_send_and_wait_raises_when_the_broker_refuses(kafka_bootstrap: str, unique: str) -> None:
    small = f"test.kafka-io-small.{unique}"
    spec = kafka_admin.TopicSpec(small, 1, {"max.message.bytes": "100000"})
    kafka_admin.ensure_topics(kafka_bootstrap, [spec])
    try:
        producer = KeyedProducer(kafka_bootstrap, max_message_bytes=8 * 1024 * 1024)
        with pytest.raises(DeliveryFailed, match="too large"):
            producer.send_and_wait(small, b"x" * 200_000, key="t:u")
        assert producer.send_and_wait(small, b"fits", key="t:u")[0] == 0
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [small])
