"""Helpers of the metrics and dashboard tests: a lagging group on a private topic, scraping.

``Traffic`` produces to a private topic and moves a consumer group's committed
offsets by explicit commits (no group membership: the figures then change only
when the test says so). ``scrape`` reads a Prometheus text endpoint into
``{(name, labels): value}``; ``wait_until`` polls a condition with a bound.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from connectors import kafka_admin
from connectors.kafka_io import consumer

Sample = tuple[str, frozenset[tuple[str, str]]]
# Generous bounds for a loaded 2-core machine; they only turn a hang into a failure.
WAIT_S = 90.0


class Traffic:
    """Records into ``topic`` and commits of ``group`` on it, partition by partition."""

    def __init__(self, bootstrap: str, topic: str, group: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.topic, self.group, self.partitions = topic, group, partitions
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        self.committer: Consumer = consumer(bootstrap, group)
        self.produced = dict.fromkeys(range(partitions), 0)
        self.committed = dict.fromkeys(range(partitions), 0)

    def produce(self, per_partition: int) -> None:
        """Append ``per_partition`` records to every partition."""
        for partition in range(self.partitions):
            for _ in range(per_partition):
                self.producer.produce(self.topic, b"{}", partition=partition)
                self.produced[partition] += 1
        assert self.producer.flush(30) == 0, "records not delivered"

    def consume(self, per_partition: int) -> None:
        """Commit ``per_partition`` more records of every partition (never past its end)."""
        for partition in range(self.partitions):
            target = min(self.produced[partition], self.committed[partition] + per_partition)
            self.committed[partition] = target
        offsets = [TopicPartition(self.topic, p, o) for p, o in self.committed.items()]
        self.committer.commit(offsets=offsets, asynchronous=False)

    @property
    def lag(self) -> int:
        """Records produced and not committed, over all partitions."""
        return sum(self.produced[p] - self.committed[p] for p in range(self.partitions))

    def close(self) -> None:
        """Close the committing consumer and delete its group (and so its offsets)."""
        self.committer.close()
        kafka_admin.delete_groups(self.bootstrap, [self.group])


@contextmanager
def private_topic(bootstrap: str, name: str, partitions: int) -> Iterator[str]:
    """A topic of the test's own, deleted afterwards."""
    kafka_admin.ensure_topics(bootstrap, [kafka_admin.TopicSpec(name, partitions)])
    try:
        yield name
    finally:
        kafka_admin.delete_topics(bootstrap, [name])


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def parse(text: str) -> dict[Sample, float]:
    """Prometheus text format to ``{(sample name, labels): value}``."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(url: str) -> dict[Sample, float]:
    """GET a metrics endpoint and parse it."""
    answer = httpx.get(url, timeout=10)
    answer.raise_for_status()
    return parse(answer.text)


def value(samples: Mapping[Sample, float], name: str, **labels: str) -> float | None:
    """One sample's value, or None when the endpoint does not have it."""
    return samples.get((name, frozenset(labels.items())))


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Poll ``condition`` every 0.2 s; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.2)
