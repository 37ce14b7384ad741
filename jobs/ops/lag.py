"""Consumer lag per group, topic and partition, sampled from the cluster.

``LagMonitor`` is what ``memstream lag`` prints and what the dashboard and the
API's lag gauges read. LOG-END-OFFSET is the last stable offset, so a
transactional topic's open transaction is not lag. The lag in seconds is the
age of the oldest unconsumed record, interpolated from sampled log ends once
they bracket it, else read from the record's own timestamp (cached per offset).
The status rules live in ``pipelines.lag``; ``rules_from_settings`` sizes the
stall time of each job's group from the settings (sink, Faust worker, Flink).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from connectors.kafka_offsets import GroupInfo, OffsetReader, Position
from memstream.settings import Settings
from pipelines.lag import (
    History,
    Rules,
    Sample,
    Status,
    lag_seconds,
    partition_status,
    stalled_for,
    worst,
)


def rules_from_settings(
    settings: Settings,
    *,
    window_s: float | None = None,
    stop_after_s: float | None = None,
    stall_after_s: float | None = None,
) -> Rules:
    """The status rules with each job's stall time from its settings section.

    ``stall_after_s`` given (``memstream lag --stall-after``) applies to every
    group; otherwise the ingest, sink and Flink groups get their sections'
    times and any other group ``metrics.stall_after_s``.
    """
    defaults = Rules()
    by_group: tuple[tuple[str, float], ...] = ()
    if stall_after_s is None:
        by_group = (
            (settings.ingest.group_id, settings.ingest.stall_after_s),
            (settings.sink.group_id, settings.sink.stall_after_s),
            (settings.flink.group_id, settings.flink.stall_after),
        )
    return Rules(
        window_s=defaults.window_s if window_s is None else window_s,
        stop_after_s=defaults.stop_after_s if stop_after_s is None else stop_after_s,
        stall_after_s=settings.metrics.stall_after_s if stall_after_s is None else stall_after_s,
        stall_after_by_group=by_group,
    )


@dataclass(frozen=True)
class PartitionLag:
    """One row: a group's position on one partition."""

    topic: str
    partition: int
    current_offset: int
    log_end_offset: int
    lag_seconds: float
    # How long the committed offset has stood still while the lag grew (0: it
    # has not); above the group's stall time the status is STALL.
    stalled_seconds: float = 0.0

    @property
    def lag(self) -> int:
        return max(0, self.log_end_offset - self.current_offset)


@dataclass(frozen=True)
class GroupLag:
    """A group's state, members, status and rows (sorted by topic, partition)."""

    group: str
    state: str
    members: int
    status: Status
    partitions: list[PartitionLag]
    stall_after_s: float = Rules().stall_after_s  # the group's stall time

    @property
    def stalled_seconds(self) -> float:
        """The longest stall among the group's partitions."""
        return max((row.stalled_seconds for row in self.partitions), default=0.0)

    @property
    def lag(self) -> int:
        return sum(row.lag for row in self.partitions)


class LagMonitor:
    """Samples the cluster on each ``refresh`` and keeps the history the estimates need."""

    def __init__(
        self, reader: OffsetReader, rules: Rules, clock: Callable[[], float] = time.time
    ) -> None:
        self._reader = reader
        self._rules = rules
        self._clock = clock
        self._history = History(rules)
        # Append time of the record at (topic, partition, offset): it never changes.
        self._appended: dict[tuple[Position, int], float] = {}

    def refresh(self, groups: Sequence[str] = ()) -> list[GroupLag]:
        """One sample of ``groups`` (default: every group), sorted by group id.

        Raises UnknownGroup when a named group does not exist. Partitions of
        deleted topics are left out.
        """
        if groups:
            self._reader.require(groups)
        names = sorted(set(groups)) or self._reader.groups()
        infos = self._reader.describe(names)
        committed = {name: self._reader.committed(name) for name in names}
        ends = self._reader.log_ends(pos for offsets in committed.values() for pos in offsets)
        now = self._clock()
        histories = {
            name: {
                position: self._history.add(name, *position, Sample(now, offset, ends[position]))
                for position, offset in sorted(committed[name].items())
                if position in ends
            }
            for name in names
        }
        beyond_history = {
            (position, history[-1].committed)
            for by_position in histories.values()
            for position, history in by_position.items()
            if lag_seconds(history, history[-1].committed, now) is None
        }
        appended = self._appended_at(beyond_history)
        return [self._report(infos[name], histories[name], appended, now) for name in names]

    def _report(
        self,
        info: GroupInfo,
        histories: dict[Position, list[Sample]],
        appended: dict[tuple[Position, int], float],
        now: float,
    ) -> GroupLag:
        rows, statuses = [], []
        rules = self._rules.for_group(info.group_id)
        for position, history in histories.items():
            latest = history[-1]
            age = lag_seconds(history, latest.committed, now)
            if age is None:
                stamp = appended.get((position, latest.committed))
                # No visible record at or after the offset: only transaction
                # markers or aborted records lie before the end; nothing waits.
                age = 0.0 if stamp is None else max(0.0, now - stamp)
            stalled = stalled_for(history)
            rows.append(PartitionLag(*position, latest.committed, latest.end, age, stalled))
            statuses.append(partition_status(history, info.members, age, rules))
        return GroupLag(
            info.group_id, info.state, info.members, worst(statuses), rows, rules.stall_after_s
        )

    def _appended_at(self, wanted: set[tuple[Position, int]]) -> dict[tuple[Position, int], float]:
        """Append times of the records at ``wanted`` positions, read once and cached."""
        missing = sorted(wanted - self._appended.keys())
        while missing:  # one read per batch holding each partition once
            batch: dict[Position, int] = {}
            for position, offset in missing:
                batch.setdefault(position, offset)
            for position, stamp in self._reader.record_times(batch).items():
                self._appended[(position, batch[position])] = stamp
            missing = [item for item in missing if batch.get(item[0]) != item[1]]
        # Offsets no group sits at any more are forgotten.
        self._appended = {key: self._appended[key] for key in wanted if key in self._appended}
        return self._appended


def as_json(reports: Sequence[GroupLag], at: float) -> dict[str, Any]:
    """The machine-readable form of one refresh."""
    return {
        "at": datetime.fromtimestamp(at, UTC).isoformat(),
        "groups": [
            {
                "group": report.group,
                "state": report.state,
                "members": report.members,
                "status": report.status.value,
                "lag": report.lag,
                "stalled_seconds": round(report.stalled_seconds, 3),
                "stall_after_s": report.stall_after_s,
                "partitions": [
                    {
                        "topic": row.topic,
                        "partition": row.partition,
                        "current_offset": row.current_offset,
                        "log_end_offset": row.log_end_offset,
                        "lag": row.lag,
                        "lag_seconds": round(row.lag_seconds, 3),
                        "stalled_seconds": round(row.stalled_seconds, 3),
                    }
                    for row in report.partitions
                ],
            }
            for report in reports
        ],
        "summary": summary(reports),
    }


def seconds(value: float) -> str:
    return f"{value:.1f}"


def summary(reports: Sequence[GroupLag]) -> str:
    """One line: groups, partitions, total lag, worst time lag, groups per status."""
    rows = [row for report in reports for row in report.partitions]
    counts = Counter(report.status for report in reports)
    by_status = ", ".join(f"{status.value} {counts[status]}" for status in Status if counts[status])
    oldest = max((row.lag_seconds for row in rows), default=0.0)
    # Which groups rule 0 flags, and for how long: the reason behind a STALL.
    stalled = [
        f"{report.group} {seconds(report.stalled_seconds)} s (> {seconds(report.stall_after_s)} s)"
        for report in reports
        if report.stalled_seconds > report.stall_after_s
    ]
    line = (
        f"{len(reports)} group(s), {len(rows)} partition(s), lag {sum(r.lag for r in rows)} "
        f"message(s), oldest unconsumed {seconds(oldest)} s; {by_status or 'no groups'}"
    )
    return line + (f"; offsets still while lag grows: {', '.join(stalled)}" if stalled else "")
