"""The dashboard's lag sampler and its Prometheus gauges over scripted lag reports: no services."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from jobs.ops.lag import GroupLag, PartitionLag
from jobs.serve.dashboard import LagCollector, LagSampler
from pipelines.lag import Status


class Script:
    """A lag source answering scripted reports, one list per refresh, and a clock."""

    def __init__(self, reports: Sequence[list[GroupLag]], times: Sequence[float]) -> None:
        self.reports = list(reports)
        self.times = list(times)
        self.asked: list[list[str]] = []

    def refresh(self, groups: Sequence[str] = ()) -> list[GroupLag]:
        self.asked.append(list(groups))
        return self.reports.pop(0)

    def clock(self) -> float:
        return self.times.pop(0)


def group(name: str, status: Status, *rows: tuple[int, int, float]) -> GroupLag:
    partitions = [
        PartitionLag("memory.ops", i, committed, end, age)
        for i, (committed, end, age) in enumerate(rows)
    ]
    return GroupLag(name, "stable", 1, status, partitions)


def test_points_carry_lag_and_rates_from_offset_movement() -> None:
    script = Script(
        [
            [group("sink", Status.OK, (10, 20, 3.0), (0, 5, 1.0))],
            # 2 s later: ends moved 20->40 and 5->9 (24 in), commits 10->30 and 0->4 (24 out).
            [group("sink", Status.WARN, (30, 40, 2.0), (4, 9, 4.5))],
        ],
        [100.0, 102.0],
    )
    sampler = LagSampler(script, ["sink"], interval_s=1.0, keep=10, clock=script.clock)
    sampler.sample()
    sampler.sample()
    data = sampler.data()
    assert script.asked == [["sink"], ["sink"]]
    first, second = data["series"]["sink"]
    assert (first["lag"], first["lag_seconds"], first["in_per_s"]) == (15, 3.0, None)
    assert second == {
        "at": 102.0,
        "lag": 15,
        "lag_seconds": 4.5,
        "status": "WARN",
        "stalled_seconds": 0.0,
        "in_per_s": 12.0,
        "out_per_s": 12.0,
    }
    assert data["latest"]["groups"][0]["status"] == "WARN"
    assert data["error"] is None


def test_history_is_bounded() -> None:
    reports = [[group("g", Status.OK, (i, i + 1, 0.0))] for i in range(5)]
    script = Script(reports, [float(i) for i in range(5)])
    sampler = LagSampler(script, [], interval_s=1.0, keep=3, clock=script.clock)
    for _ in range(5):
        sampler.sample()
    assert [p["at"] for p in sampler.data()["series"]["g"]] == [2.0, 3.0, 4.0]


def test_collector_exposes_partition_lag_and_a_one_hot_status() -> None:
    script = Script([[group("ingest", Status.STALL, (5, 12, 7.5))]], [1.0])
    sampler = LagSampler(script, [], interval_s=1.0, keep=3, clock=script.clock)
    registry = CollectorRegistry()
    registry.register(LagCollector(sampler))
    assert registry.get_sample_value("memstream_consumer_lag_messages", {"group": "ingest"}) is None
    sampler.sample()
    where = {"group": "ingest", "topic": "memory.ops", "partition": "0"}
    assert registry.get_sample_value("memstream_consumer_lag_messages", where) == 7
    assert registry.get_sample_value("memstream_consumer_lag_seconds", where) == 7.5
    statuses = {
        status.value: registry.get_sample_value(
            "memstream_consumer_group_status", {"group": "ingest", "status": status.value}
        )
        for status in Status
    }
    assert statuses == {"OK": 0.0, "WARN": 0.0, "STALL": 1.0, "STOP": 0.0}


def test_first_sample_has_no_rate() -> None:
    script = Script([[group("g", Status.OK, (1, 2, 0.0))]], [5.0])
    sampler = LagSampler(script, [], interval_s=1.0, keep=3, clock=script.clock)
    sampler.sample()
    (point,) = sampler.data()["series"]["g"]
    assert point["in_per_s"] is None and point["out_per_s"] is None
