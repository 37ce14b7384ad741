"""The replay's merge: timestamp order across partitions, offset order within one."""

from __future__ import annotations

from connectors.kafka_range import TimedRecord
from jobs.ops.replay import merge_by_time

NS = "test.ns."


def rec(topic: str, partition: int, offset: int, stamp: int) -> TimedRecord:
    return TimedRecord(NS + topic, partition, offset, stamp, b"k", f"{topic}{offset}".encode())


def positions(records: list[TimedRecord]) -> list[tuple[str, int, int]]:
    return [(r.topic, r.partition, r.offset) for r in merge_by_time(records, NS)]


def test_topics_interleave_by_timestamp_and_lose_their_namespace() -> None:
    records = [
        rec("dialogue.events", 0, 0, 10),
        rec("dialogue.events", 0, 1, 30),
        rec("user.actions", 0, 0, 20),
        rec("crm.webhooks", 0, 0, 25),
    ]
    assert positions(records) == [
        ("dialogue.events", 0, 0),
        ("user.actions", 0, 0),
        ("crm.webhooks", 0, 0),
        ("dialogue.events", 0, 1),
    ]


def test_a_partition_keeps_offset_order_even_when_its_stamps_go_back() -> None:
    # A producer's clock may step back: the log order of a partition still wins.
    records = [
        rec("dialogue.events", 1, 5, 50),
        rec("dialogue.events", 1, 6, 40),
        rec("dialogue.events", 2, 0, 45),
    ]
    order = positions(records)
    assert order.index(("dialogue.events", 1, 5)) < order.index(("dialogue.events", 1, 6))
    assert order[0] == ("dialogue.events", 2, 0)  # 45 < 50: the other partition's head first


def test_ties_keep_the_topic_order_dialogue_actions_crm() -> None:
    records = [
        rec("crm.webhooks", 0, 0, 7),
        rec("user.actions", 0, 0, 7),
        rec("dialogue.events", 3, 0, 7),
        rec("dialogue.events", 1, 0, 7),
    ]
    assert positions(records) == [
        ("dialogue.events", 1, 0),
        ("dialogue.events", 3, 0),
        ("user.actions", 0, 0),
        ("crm.webhooks", 0, 0),
    ]


def test_values_keys_and_offsets_pass_through_unchanged() -> None:
    merged = merge_by_time([rec("user.actions", 4, 9, 1)], NS)
    assert [(m.key, m.value, m.partition, m.offset) for m in merged] == [
        (b"k", b"user.actions9", 4, 9)
    ]
