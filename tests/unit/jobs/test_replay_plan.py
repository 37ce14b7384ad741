"""Replay ranges: every refusal of a bad argument, and how offsets and times become ranges."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from connectors.kafka_range import PartitionBounds
from jobs.ops.replay_plan import (
    PartitionFacts,
    PartitionRange,
    ReplayError,
    ReplayRequest,
    check_request,
    resolve_ranges,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
REQUEST = ReplayRequest(namespace="shadow1", from_offset=0)


def facts(start: int, end: int, partition: int = 0, **extra: Any) -> PartitionFacts:
    bounds = PartitionBounds("dialogue.events", partition, start, end)
    return PartitionFacts(bounds, **extra)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"namespace": ""}, "the empty namespace is live memory"),
        ({"namespace": "has space"}, "--namespace 'has space'"),
        ({"namespace": "a:b"}, "--namespace 'a:b'"),
        ({"topics": ("nope.events",)}, "unknown topic nope.events"),
        ({"topics": ("memory.ops",)}, "unknown topic memory.ops"),
        ({"from_offset": None}, "exactly one of --from-offset and --from-time"),
        ({"from_time": T0}, "exactly one of --from-offset and --from-time"),
        ({"to_offset": 3, "to_time": T0}, "at most one of --to-offset and --to-time"),
        ({"from_offset": -1}, "--from-offset must be 0 or more"),
        ({"to_offset": -2}, "--to-offset must be 0 or more"),
        ({"partition": -1}, "--partition must be 0 or more"),
        ({"from_offset": 5, "to_offset": 2}, "--from-offset 5 is after --to-offset 2"),
        (
            {"from_offset": None, "from_time": T0, "to_time": T0 - timedelta(seconds=1)},
            "is after --to-time",
        ),
    ],
)
def test_bad_requests_are_refused_with_what_to_do(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ReplayError) as refused:
        check_request(replace(REQUEST, **change))
    assert message in str(refused.value)


def test_a_good_request_passes() -> None:
    check_request(replace(REQUEST, from_offset=2, to_offset=2, partition=0))


def test_offsets_apply_to_every_partition_half_open() -> None:
    plan = resolve_ranges(
        replace(REQUEST, from_offset=2, to_offset=5),
        [facts(0, 10, 0), facts(1, 7, 1)],
    )
    assert plan.ranges == [
        PartitionRange("dialogue.events", 0, 2, 5),
        PartitionRange("dialogue.events", 1, 2, 5),
    ]
    assert plan.total == 6


def test_defaults_run_to_the_log_end_and_an_offset_may_equal_it() -> None:
    plan = resolve_ranges(replace(REQUEST, from_offset=4), [facts(0, 4, 0), facts(0, 9, 1)])
    assert [(r.start, r.end) for r in plan.ranges] == [(4, 4), (4, 9)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"from_offset": 11}, "--from-offset 11 is outside what dialogue.events[0] holds"),
        (
            {"from_offset": 2, "to_offset": 11},
            "--to-offset 11 is outside what dialogue.events[0] holds",
        ),
        ({"from_offset": 1}, "--from-offset 1 is outside"),  # below the log start (2)
    ],
)
def test_offsets_outside_the_partition_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ReplayError) as refused:
        resolve_ranges(replace(REQUEST, **change), [facts(2, 10)])
    assert message in str(refused.value)
    assert "offsets 2..10" in str(refused.value)


def test_times_resolve_per_partition() -> None:
    request = replace(REQUEST, from_offset=None, from_time=T0, to_time=T0 + timedelta(hours=1))
    plan = resolve_ranges(
        request,
        [
            facts(0, 10, 0, from_time_offset=3, to_time_offset=6),
            facts(0, 10, 1, from_time_offset=None, to_time_offset=None),  # all older
            facts(0, 10, 2, from_time_offset=8, to_time_offset=None),  # runs to the end
        ],
    )
    assert [(r.start, r.end) for r in plan.ranges] == [(3, 6), (10, 10), (8, 10)]


def test_a_time_before_the_retention_start_is_refused() -> None:
    request = replace(REQUEST, from_offset=None, from_time=T0)
    after = T0 + timedelta(minutes=1)
    with pytest.raises(ReplayError) as refused:
        resolve_ranges(request, [facts(3, 10, 0, from_time_offset=3, first_time=after)])
    message = str(refused.value)
    assert "before the retention start of dialogue.events[0]" in message
    assert "--from-offset 3 with --partition 0" in message


def test_a_time_before_the_first_record_is_fine_when_nothing_was_deleted() -> None:
    request = replace(REQUEST, from_offset=None, from_time=T0)
    after = T0 + timedelta(minutes=1)
    plan = resolve_ranges(request, [facts(0, 10, 0, from_time_offset=0, first_time=after)])
    assert plan.total == 10


def test_a_retained_time_is_fine_after_deletion() -> None:
    request = replace(REQUEST, from_offset=None, from_time=T0)
    before = T0 - timedelta(minutes=1)
    plan = resolve_ranges(request, [facts(3, 10, 0, from_time_offset=5, first_time=before)])
    assert [(r.start, r.end) for r in plan.ranges] == [(5, 10)]


def test_a_range_without_records_is_refused() -> None:
    with pytest.raises(ReplayError, match="holds no records"):
        resolve_ranges(replace(REQUEST, from_offset=4), [facts(0, 4, 0), facts(0, 4, 1)])


def test_mixed_bounds_that_cross_read_nothing_on_that_partition() -> None:
    request = replace(REQUEST, from_offset=5, to_time=T0)
    plan = resolve_ranges(
        request, [facts(0, 10, 0, to_time_offset=2), facts(0, 10, 1, to_time_offset=8)]
    )
    assert [(r.start, r.end) for r in plan.ranges] == [(5, 5), (5, 8)]
