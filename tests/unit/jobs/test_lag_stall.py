"""Stall detection (issue 15): a consumer whose offsets stand still while its lag grows.

Plain samples through ``pipelines.lag`` and a scripted offset reader through
``jobs.ops.lag.LagMonitor`` (the code behind ``memstream lag``, the dashboard
and the gauges): no services. The sink case is the one the issue saw: the sink
wrote nothing for 25 s while its lag grew from 6 to 117, and every status said OK.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry

from connectors.kafka_offsets import GroupInfo, Position
from jobs.ops.lag import LagMonitor, as_json, rules_from_settings, summary
from jobs.serve.dashboard import LagCollector, LagSampler
from memstream.settings import FlinkSettings, Settings
from pipelines.lag import Rules, Sample, Status, partition_status, stalled_for

SINK = "memstream-sink"
TOPIC = "memory.ops"
SETTINGS = Settings()
RULES = rules_from_settings(SETTINGS)


def samples(*rows: tuple[float, int, int]) -> list[Sample]:
    return [Sample(at=at, committed=committed, end=end) for at, committed, end in rows]


def stalled_sink(seconds: int) -> list[Sample]:
    """A sink that caught up, then took nothing for ``seconds`` while 111 records arrived."""
    caught_up = [(0.0, 100, 100), (5.0, 140, 140), (10.0, 180, 186)]
    stuck = [(10.0 + t, 180, 186 + round(111 * t / seconds)) for t in range(5, seconds + 1, 5)]
    return samples(*caught_up, *stuck)


# --- the rule over plain samples -------------------------------------------------------


def test_a_stalled_sink_is_flagged_although_it_caught_up_within_the_window() -> None:
    history = stalled_sink(25)
    assert (history[2].lag, history[-1].lag) == (6, 117)
    assert stalled_for(history) == 25.0
    sink_rules = RULES.for_group(SINK)
    assert sink_rules.stall_after_s == 10.0
    assert partition_status(history, 1, None, sink_rules) is Status.STALL
    # The window rules alone (a lag of 0 fifteen seconds earlier) would say OK.
    lenient = Rules(stall_after_s=1000.0)
    assert partition_status(history, 1, None, lenient) is Status.OK


def test_the_stall_counts_from_the_first_sample_with_records_waiting() -> None:
    # Idle at the log end for minutes (nothing to commit), then records arrive.
    idle = [(float(t), 50, 50) for t in range(0, 300, 5)]
    history = samples(*idle, (300.0, 50, 60), (305.0, 50, 80))
    assert stalled_for(history) == 5.0
    assert partition_status(history, 1, None, RULES.for_group(SINK)) is Status.OK


def test_no_stall_while_the_offset_moves_or_the_lag_does_not_grow() -> None:
    moving = samples((0.0, 10, 20), (10.0, 20, 40), (20.0, 30, 60), (30.0, 40, 80))
    assert stalled_for(moving) == 0.0
    # Stuck with a constant lag is rule 3's case (STALL once the window is unmoved).
    constant = samples((0.0, 10, 20), (15.0, 10, 20))
    assert stalled_for(constant) == 0.0


def test_a_consumer_that_left_is_stopped_not_stalled() -> None:
    history = samples(*((float(t), 10, 20 + t) for t in range(0, 30, 5)))
    sink_rules = RULES.for_group(SINK)
    assert partition_status(history, 1, None, sink_rules) is Status.STALL
    assert partition_status(history, 0, None, sink_rules) is Status.STOP  # rule 2 wins


def test_flink_between_checkpoints_is_not_stalled() -> None:
    # Offsets move only at checkpoints (30 s; a commit at t=0 here): 45 s without
    # another is one checkpoint late, not stalled; 65 s is a missed one.
    flink = RULES.for_group("memstream-ingest-flink")
    assert flink.stall_after_s == 60.0

    def since_commit(seconds: int) -> list[Sample]:
        after = ((float(t), 10, 20 + t) for t in range(0, seconds + 1, 5))
        return samples((-30.0, 0, 10), *after)

    assert partition_status(since_commit(45), 0, None, flink) is Status.WARN
    assert partition_status(since_commit(65), 0, None, flink) is Status.STALL


def test_stall_times_are_sized_per_group_and_configurable() -> None:
    assert RULES.for_group("memstream-ingest").stall_after_s == 20.0
    assert RULES.for_group("run-1a2b.memstream-sink").stall_after_s == 10.0  # a namespace
    assert RULES.for_group("memstream-ingest-flink").stall_after_s == 60.0
    assert RULES.for_group("someone-else").stall_after_s == 60.0
    slower = Settings(flink=FlinkSettings(checkpoint_interval_s=45.0))
    assert rules_from_settings(slower).for_group("memstream-ingest-flink").stall_after_s == 90.0
    forced = rules_from_settings(SETTINGS, stall_after_s=3.0)
    assert forced.for_group(SINK).stall_after_s == forced.for_group("x").stall_after_s == 3.0


# --- the monitor, the CLI's JSON, the dashboard and the gauges --------------------------


class ScriptedReader:
    """An offset reader answering one scripted (committed, end) per refresh."""

    def __init__(self, positions: list[tuple[int, int]]) -> None:
        self.positions = positions

    def require(self, groups: Iterable[str]) -> None:
        pass

    def groups(self) -> list[str]:
        return [SINK]

    def describe(self, groups: Iterable[str]) -> dict[str, GroupInfo]:
        return {name: GroupInfo(name, "stable", 1) for name in groups}

    def committed(self, group: str) -> dict[Position, int]:
        return {(TOPIC, 0): self.positions[0][0]}

    def log_ends(self, positions: Iterable[Position]) -> dict[Position, int]:
        end = self.positions.pop(0)[1]
        return {(TOPIC, 0): end}

    def record_times(self, offsets: Mapping[Position, int]) -> dict[Position, float]:
        return dict.fromkeys(offsets, 0.0)


def test_monitor_dashboard_and_gauges_agree_on_a_stalled_sink() -> None:
    history = stalled_sink(25)
    reader = ScriptedReader([(s.committed, s.end) for s in history])
    times = iter(s.at for s in history)
    monitor = LagMonitor(reader, RULES, clock=lambda: next(times))  # type: ignore[arg-type]
    clock = iter(s.at for s in history)
    sampler = LagSampler(monitor, [SINK], interval_s=5.0, keep=20, clock=lambda: next(clock))
    statuses = []
    for _ in history:
        sampler.sample()
        statuses.append(sampler.latest()[0].status)
    # Caught up, then 5, 10 s stuck (at the limit), then 15, 20, 25 s: STALL.
    assert statuses == [Status.OK] * 5 + [Status.STALL] * 3

    (report,) = sampler.latest()
    document = as_json([report], history[-1].at)
    (group,) = document["groups"]
    assert (group["status"], group["stalled_seconds"], group["stall_after_s"]) == (
        "STALL", 25.0, 10.0,
    )  # fmt: skip
    assert group["partitions"][0]["stalled_seconds"] == 25.0
    assert "offsets still while lag grows: memstream-sink 25.0 s (> 10.0 s)" in summary([report])
    point = sampler.data()["series"][SINK][-1]
    assert (point["status"], point["stalled_seconds"]) == ("STALL", 25.0)

    registry = CollectorRegistry()
    registry.register(LagCollector(sampler))
    where = {"group": SINK, "topic": TOPIC, "partition": "0"}
    assert registry.get_sample_value("memstream_consumer_stalled_seconds", where) == 25.0
    threshold = {"group": SINK}
    assert registry.get_sample_value("memstream_consumer_stall_after_seconds", threshold) == 10.0
    stall = {"group": SINK, "status": "STALL"}
    assert registry.get_sample_value("memstream_consumer_group_status", stall) == 1.0
