"""The lag sampler behind ``memstream serve``'s dashboard and its Prometheus lag gauges.

``LagSampler`` refreshes a ``jobs.ops.lag.LagMonitor`` (the code behind
``memstream lag``: same figures, same OK/WARN/STALL/STOP rules) every
``interval_s`` on a daemon thread and keeps a bounded history per group: total
lag in messages, the oldest unconsumed record's age, and throughput between two
samples — events/s *in* (the log ends of the group's partitions moving: what
producers appended) and *out* (the group's committed offsets moving: what it
consumed). Rates come from offsets, so they hold for any consumer, Faust, Flink
or the sink, without a metrics endpoint of its own.

``add_dashboard(app, sampler)`` serves ``GET /dashboard`` (one HTML page with
inline JS drawing SVG, no external asset: the page works offline) and
``GET /dashboard/data`` (the history as JSON, which the page polls).
``LagCollector`` turns the latest sample into gauges at scrape time, so a
Prometheus scrape costs no Kafka request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib.resources import files
from typing import Any, Protocol

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from connectors.kafka_offsets import OffsetsUnavailable, UnknownGroup
from jobs.ops.lag import GroupLag, as_json
from pipelines.lag import Status

log = logging.getLogger(__name__)

PAGE = files("jobs.serve").joinpath("dashboard.html").read_text(encoding="utf-8")


class LagSource(Protocol):
    """What the sampler reads (``jobs.ops.lag.LagMonitor``)."""

    def refresh(self, groups: Sequence[str] = ()) -> list[GroupLag]:
        """One sample of ``groups`` (empty: every group), sorted by group id."""
        ...


@dataclass(frozen=True)
class Point:
    """One group at one sample time."""

    at: float
    lag: int
    lag_seconds: float
    status: str
    stalled_seconds: float  # the group's longest stall (jobs.ops.lag.GroupLag)
    in_per_s: float | None  # None on a group's first sample: no rate yet
    out_per_s: float | None


def _rate(now: GroupLag, before: GroupLag, seconds: float) -> tuple[float, float]:
    """Events/s appended to and consumed from the partitions present in both samples."""
    earlier = {(row.topic, row.partition): row for row in before.partitions}
    appended = consumed = 0
    for row in now.partitions:
        old = earlier.get((row.topic, row.partition))
        if old is not None:
            appended += max(0, row.log_end_offset - old.log_end_offset)
            consumed += max(0, row.current_offset - old.current_offset)
    return appended / seconds, consumed / seconds


class LagSampler:
    """Samples consumer lag on a thread and keeps the last ``keep`` points per group."""

    def __init__(
        self,
        monitor: LagSource,
        groups: Sequence[str],
        interval_s: float,
        keep: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``groups``: the groups to follow (empty: every group on the cluster)."""
        self.interval_s = interval_s
        self._monitor = monitor
        self._groups = list(groups)
        self._keep = keep
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[str, deque[Point]] = {}
        self._latest: list[GroupLag] = []
        self._previous: dict[str, tuple[float, GroupLag]] = {}
        self._at: float | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag-sampler", daemon=True)

    def sample(self) -> None:
        """Take one sample now (the thread calls this every ``interval_s``)."""
        reports = self._monitor.refresh(self._groups)
        at = self._clock()
        with self._lock:
            for report in reports:
                in_rate = out_rate = None
                previous = self._previous.get(report.group)
                if previous is not None and at > previous[0]:
                    in_rate, out_rate = _rate(report, previous[1], at - previous[0])
                oldest = max((row.lag_seconds for row in report.partitions), default=0.0)
                point = Point(
                    at,
                    report.lag,
                    oldest,
                    report.status.value,
                    report.stalled_seconds,
                    in_rate,
                    out_rate,
                )
                series = self._series.setdefault(report.group, deque(maxlen=self._keep))
                series.append(point)
                self._previous[report.group] = (at, report)
            self._latest, self._at, self.error = reports, at, None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except (OffsetsUnavailable, UnknownGroup) as exc:
                # Kept for the page; the next sample may succeed (broker back,
                # group created).
                log.warning("lag sample failed: %s", exc)
                self.error = str(exc)
            self._stop.wait(self.interval_s)

    def start(self) -> LagSampler:
        """Start sampling on a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (the sample in progress completes)."""
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 30)

    def latest(self) -> list[GroupLag]:
        """The groups as of the last sample."""
        with self._lock:
            return list(self._latest)

    def data(self) -> dict[str, Any]:
        """What ``/dashboard/data`` answers: the latest sample and every group's history."""
        with self._lock:
            latest = as_json(self._latest, self._at) if self._at is not None else None
            series = {
                group: [asdict(point) for point in points]
                for group, points in sorted(self._series.items())
            }
        return {
            "interval_s": self.interval_s,
            "error": self.error,
            "latest": latest,
            "series": series,
        }


class LagCollector(Collector):
    """Prometheus gauges of the sampler's latest lag figures, made at scrape time."""

    def __init__(self, sampler: LagSampler) -> None:
        """Read ``sampler`` on every scrape."""
        self._sampler = sampler

    def collect(self) -> Iterator[Metric]:
        """Lag in messages and seconds per partition; one 0/1 gauge per group and status."""
        labels = ["group", "topic", "partition"]
        messages = GaugeMetricFamily(
            "memstream_consumer_lag_messages",
            "Records between a group's committed offset and the last stable offset.",
            labels=labels,
        )
        seconds = GaugeMetricFamily(
            "memstream_consumer_lag_seconds",
            "Age of the oldest record a group has not consumed.",
            labels=labels,
        )
        status = GaugeMetricFamily(
            "memstream_consumer_group_status",
            "1 for a group's current status (OK, WARN, STALL, STOP), 0 for the others.",
            labels=["group", "status"],
        )
        stalled = GaugeMetricFamily(
            "memstream_consumer_stalled_seconds",
            "How long a group's committed offset has stood still while its lag grew "
            "(0: it has not); STALL above memstream_consumer_stall_after_seconds.",
            labels=labels,
        )
        stall_after = GaugeMetricFamily(
            "memstream_consumer_stall_after_seconds",
            "A group's stall time: the status rules' threshold for stalled seconds.",
            labels=["group"],
        )
        for report in self._sampler.latest():
            for row in report.partitions:
                where = [report.group, row.topic, str(row.partition)]
                messages.add_metric(where, row.lag)
                seconds.add_metric(where, row.lag_seconds)
                stalled.add_metric(where, row.stalled_seconds)
            for name in Status:
                status.add_metric([report.group, name.value], float(report.status is name))
            stall_after.add_metric([report.group], report.stall_after_s)
        yield from (messages, seconds, status, stalled, stall_after)


def add_dashboard(app: FastAPI, sampler: LagSampler) -> None:
    """Serve the page and its data from ``sampler`` (no API key: no tenant data in either)."""

    @app.get("/dashboard", include_in_schema=False)
    def dashboard() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.get("/dashboard/data", include_in_schema=False)
    def dashboard_data() -> dict[str, Any]:
        return sampler.data()
