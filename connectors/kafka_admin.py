"""Kafka administration: readiness probe, topic create / list / describe / delete, group delete.

Plain arguments (a bootstrap string, topic specs), no settings: infra/ and the
tests decide what to create. Every call has a time-out, so a missing broker is
an error, never a hang.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

# Long enough for a freshly started single-node broker to elect its
# controller and answer; short enough that a wrong address fails quickly.
DEFAULT_TIMEOUT_S = 15.0


class BrokerUnavailable(RuntimeError):
    """No broker answered a metadata request."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create: name, partition count and topic-level config overrides."""

    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)


def admin_client(bootstrap: str) -> AdminClient:
    """An AdminClient for ``bootstrap`` (host:port[,host:port...])."""
    return AdminClient({"bootstrap.servers": bootstrap})


def broker_ready(bootstrap: str, timeout_s: float = 2.0) -> bool:
    """True when a broker answers a metadata request within ``timeout_s``."""
    try:
        metadata = admin_client(bootstrap).list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return bool(metadata.brokers)


def ping_broker(bootstrap: str, timeout_s: float = 2.0) -> None:
    """Raise ``BrokerUnavailable`` unless a broker answers within ``timeout_s`` (readiness)."""
    if not broker_ready(bootstrap, timeout_s):
        raise BrokerUnavailable(f"no broker answered at {bootstrap} within {timeout_s} s")


def ensure_topics(
    bootstrap: str, specs: Iterable[TopicSpec], timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[str]:
    """Create the topics that do not exist yet; returns the names created now.

    An existing topic is left as it is (its partition count is not changed).
    Replication is the broker's default (1 on the local single node).
    """
    admin = admin_client(bootstrap)
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    new = [
        NewTopic(s.name, num_partitions=s.partitions, replication_factor=-1, config=dict(s.config))
        for s in specs
        if s.name not in existing
    ]
    if not new:
        return []
    created: list[str] = []
    for name, future in admin.create_topics(new, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
            created.append(name)
        except KafkaException as exc:
            # A concurrent creator got there first: the topic exists, which is the goal.
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    return created


def list_topics(bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
    """Names of the topics on the cluster, internal ones (``__*``) left out."""
    topics = admin_client(bootstrap).list_topics(timeout=timeout_s).topics
    return {name for name in topics if not name.startswith("__")}


def partition_counts(
    bootstrap: str, topics: Iterable[str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, int]:
    """Partition count of each named topic that exists (missing ones are left out)."""
    metadata = admin_client(bootstrap).list_topics(timeout=timeout_s).topics
    return {name: len(metadata[name].partitions) for name in topics if name in metadata}


def topic_config(
    bootstrap: str, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, str]:
    """The effective configuration of ``topic`` (defaults included), as strings."""
    admin = admin_client(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
    return {name: entry.value for name, entry in entries.items()}


def delete_topics(
    bootstrap: str, topics: Iterable[str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> None:
    """Delete the named topics; a topic that does not exist is not an error."""
    names = list(topics)
    if not names:
        return
    admin = admin_client(bootstrap)
    for future in admin.delete_topics(names, operation_timeout=timeout_s).values():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise


def list_groups(
    bootstrap: str, timeout_s: float = DEFAULT_TIMEOUT_S, attempts: int = 2
) -> list[str]:
    """Ids of every consumer group on the cluster, sorted.

    A listing asks every broker; once, on a loaded machine, it got no answer
    within 15 s although the broker had just deleted topics: a second attempt on
    a new client is cheaper than a test teardown failing on it.
    """
    for attempt in range(1, attempts + 1):
        future = admin_client(bootstrap).list_consumer_groups(request_timeout=timeout_s)
        try:
            # A little beyond the request's own time-out, so that it reports first.
            listing = future.result(timeout=timeout_s + 5)
        except FutureTimeout:
            if attempt == attempts:
                raise
            continue
        return sorted(group.group_id for group in listing.valid)
    return []  # attempts < 1


def delete_groups(
    bootstrap: str,
    groups: Iterable[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    wait_empty_s: float = 30.0,
) -> list[str]:
    """Delete the named consumer groups and their committed offsets; returns those left.

    A group that does not exist is not an error. Kafka refuses to delete a group
    with members: a consumer that closed has left, but a killed one stays a
    member until its session times out, so non-empty groups are retried for up
    to ``wait_empty_s`` and returned if they still have members then.
    """
    pending = sorted(set(groups))
    admin = admin_client(bootstrap)
    deadline = time.monotonic() + wait_empty_s
    while pending:
        busy: list[str] = []
        for name, future in admin.delete_consumer_groups(
            pending, request_timeout=timeout_s
        ).items():
            try:
                future.result(timeout=timeout_s)
            except KafkaException as exc:
                code = exc.args[0].code()
                if code == KafkaError.NON_EMPTY_GROUP:
                    busy.append(name)
                elif code != KafkaError.GROUP_ID_NOT_FOUND:
                    raise
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(1.0)
        pending = busy
    return []


def delete_groups_with_prefix(
    bootstrap: str, prefix: str, timeout_s: float = DEFAULT_TIMEOUT_S, wait_empty_s: float = 30.0
) -> list[str]:
    """Delete every consumer group whose id starts with ``prefix``; returns those left.

    For tests and benchmarks, whose groups share their topics' namespace prefix.
    """
    if not prefix:
        raise ValueError("an empty prefix would name every group")
    mine = [group for group in list_groups(bootstrap, timeout_s) if group.startswith(prefix)]
    return delete_groups(bootstrap, mine, timeout_s, wait_empty_s)
