"""Consumer lag: lag in seconds from sampled log-end offsets, and a Burrow-style status.

Pure: the caller samples, per consumer group and partition, the committed offset
and the log-end offset (the last stable offset, for transactional topics) at a
wall-clock time, and passes the samples in. Nothing here reads a clock or Kafka.

**Lag in seconds** is the age of the oldest record the group has not consumed,
the one at the committed offset ``c``. It was appended when the log end moved
past ``c`` (to ``c + 1``); between two samples ``(t0, e0)`` and ``(t1, e1)`` with
``e0 <= c < e1`` that moment is interpolated linearly, assuming an even produce
rate between the samples (as kafka-lag-exporter does). When the history does not
reach back to ``c`` the estimate is ``None`` and the caller falls back to the
record's own timestamp.

**Status** of a partition, from its samples in the window (the last
``window_s`` seconds), first matching rule wins; a group takes the worst status
of its partitions (OK < WARN < STALL < STOP):

0. STALL when the committed offset has stood still with records waiting for
   more than ``stall_after_s`` while the lag grew (producers append, the
   consumer takes nothing), unless rules 2-3 below say STOP. This rule comes
   before rule 1 on purpose: a sink that caught up a minute ago and then
   stopped writing must not read OK for the rest of the window. The time is
   sized per group (:meth:`Rules.for_group`): a few seconds for consumers that
   commit every batch (the sink, the Faust worker), more than a checkpoint
   interval for Flink, which commits only at its checkpoints.

1. OK when the latest lag is 0, or any lag in the window is 0 (Burrow rule 1: a
   consumer that caught up within the window keeps up).
2. STOP when commits have stopped: the committed offset has not moved for
   ``stop_after_s`` or longer; or the group has no members and the committed
   offset did not move across the window. With a single sample (no movement
   known yet), STOP when the group has no members and the oldest unconsumed
   record has waited ``stop_after_s`` or longer. Membership alone is not
   enough: Flink's Kafka source assigns partitions itself and commits on each
   checkpoint, so its group never has members while it works.
3. STALL when the group has members but the committed offset did not move across
   the window (Burrow's STALLED: a live consumer stuck on a record).
4. WARN when the committed offset moves but the lag never shrank between two
   consecutive samples and ended higher than it started (Burrow rule 3: the
   consumer is slower than the producers and falls behind).
5. OK otherwise.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum


class Status(StrEnum):
    """A consumer group's (or partition's) health, in increasing severity."""

    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {status: rank for rank, status in enumerate(Status)}


@dataclass(frozen=True)
class Sample:
    """One observation of a partition: when, the group's committed offset, the log end."""

    at: float  # seconds since the epoch
    committed: int
    end: int

    @property
    def lag(self) -> int:
        """Records between the committed offset and the log end (never negative)."""
        return max(0, self.end - self.committed)


@dataclass(frozen=True)
class Rules:
    """The constants of the status rules (see the module docstring)."""

    # Four Flink checkpoint intervals (30 s, docs/guarantees.md), the slowest
    # committer among our jobs: a healthy Flink job moves its offsets at least
    # three times in a window. Faust commits every 2.8 s (its default).
    window_s: float = 120.0
    # Ten Flink checkpoint intervals without a commit: Flink tolerates failed
    # checkpoints and goes on, so a few missed commits are not yet "stopped".
    stop_after_s: float = 300.0
    # Rule 0 for a group none of ``stall_after_by_group`` names: two Flink
    # checkpoint intervals, the slowest committer among our jobs, so no healthy
    # consumer of ours trips it between two commits.
    stall_after_s: float = 60.0
    # (group id, seconds) pairs; a group matches an id it equals or ends with,
    # so a namespaced group (``run-1.memstream-sink``) gets its job's time.
    stall_after_by_group: tuple[tuple[str, float], ...] = ()

    def for_group(self, group: str) -> Rules:
        """These rules with the stall time of ``group`` (the longest matching id wins)."""
        matching = [(gid, s) for gid, s in self.stall_after_by_group if group.endswith(gid)]
        if not matching:
            return self
        _, seconds = max(matching, key=lambda pair: len(pair[0]))
        return replace(self, stall_after_s=seconds)


def lag_seconds(history: Sequence[Sample], committed: int, now: float) -> float | None:
    """Age at ``now`` of the record at offset ``committed``, from the log-end samples.

    ``history`` is ordered by time. Returns 0.0 when the committed offset is at
    the latest log end, ``None`` when no two samples bracket the moment the log
    end passed ``committed`` (the history is too short).
    """
    if not history:
        return None
    if committed >= history[-1].end:
        return 0.0
    target = committed + 1  # the log end once the record at `committed` exists
    ends = [sample.end for sample in history]
    # The first sample whose log end includes the record; log ends never decrease.
    after = bisect.bisect_left(ends, target)
    if after == 0:
        return None
    before, later = history[after - 1], history[after]
    fraction = (target - before.end) / (later.end - before.end)
    appended_at = before.at + fraction * (later.at - before.at)
    return max(0.0, now - appended_at)


def in_window(history: Sequence[Sample], window_s: float) -> list[Sample]:
    """The samples taken within ``window_s`` of the latest one."""
    if not history:
        return []
    start = history[-1].at - window_s
    return [sample for sample in history if sample.at >= start]


def _unmoved_for(history: Sequence[Sample]) -> float:
    """How long the latest committed offset has been seen unchanged."""
    latest = history[-1]
    first_seen = latest.at
    for sample in reversed(history):
        if sample.committed != latest.committed:
            break
        first_seen = sample.at
    return latest.at - first_seen


def stalled_for(history: Sequence[Sample]) -> float:
    """How long the committed offset has stood still with records waiting and the lag growing.

    The span of the trailing samples that share the latest committed offset and
    all have lag (a consumer at the log end has nothing to take, so the clock
    starts at the first sample with records waiting); 0.0 when the lag did not
    grow across that span, or when nothing waits.
    """
    if not history or history[-1].lag == 0:
        return 0.0
    latest = history[-1]
    start = latest
    for sample in reversed(history):
        if sample.committed != latest.committed or sample.lag == 0:
            break
        start = sample
    return latest.at - start.at if latest.lag > start.lag else 0.0


def partition_status(
    history: Sequence[Sample], members: int, record_age_s: float | None, rules: Rules
) -> Status:
    """The status of one partition from its ordered samples (rules in the module docstring).

    ``members`` is the group's member count at the latest sample;
    ``record_age_s`` the age of the oldest unconsumed record, if known.
    """
    if not history:
        raise ValueError("a partition status needs at least one sample")
    status = _window_status(history, members, record_age_s, rules)
    # Rule 0 raises OK or WARN to STALL; a STOP stays a STOP.
    if status.severity < Status.STALL.severity and stalled_for(history) > rules.stall_after_s:
        return Status.STALL
    return status


def _window_status(
    history: Sequence[Sample], members: int, record_age_s: float | None, rules: Rules
) -> Status:
    """Rules 1 to 5 of the module docstring."""
    window = in_window(history, rules.window_s)
    if any(sample.lag == 0 for sample in window):
        return Status.OK
    if _unmoved_for(history) >= rules.stop_after_s:
        return Status.STOP
    if len(window) < 2:
        waited_long = record_age_s is not None and record_age_s >= rules.stop_after_s
        return Status.STOP if members == 0 and waited_long else Status.OK
    unmoved = window[0].committed == window[-1].committed
    if unmoved:
        return Status.STOP if members == 0 else Status.STALL
    lags = [sample.lag for sample in window]
    never_shrank = all(earlier <= later for earlier, later in zip(lags, lags[1:], strict=False))
    return Status.WARN if never_shrank and lags[-1] > lags[0] else Status.OK


def worst(statuses: Iterable[Status]) -> Status:
    """The most severe status; OK for none (a group with nothing committed lags nowhere)."""
    return max(statuses, key=lambda status: status.severity, default=Status.OK)


class History:
    """Samples per (group, topic, partition), kept as long as the rules can use them.

    Samples older than the longer of the window and the stop time are dropped
    (bar the one just before that cutoff): no rule looks further back, and the
    record-timestamp fallback covers offsets older than the kept log ends. A
    stall time is meant to be shorter than both (a stall is seen before a stop).
    """

    def __init__(self, rules: Rules) -> None:
        self._keep_s = max(rules.window_s, rules.stop_after_s)
        self._samples: dict[tuple[str, str, int], deque[Sample]] = {}

    def add(self, group: str, topic: str, partition: int, sample: Sample) -> list[Sample]:
        """Record ``sample`` and return the partition's retained samples, oldest first."""
        samples = self._samples.setdefault((group, topic, partition), deque())
        if samples and sample.at < samples[-1].at:
            raise ValueError("samples must be added in time order")
        samples.append(sample)
        # Keep one sample at or before the cutoff, so that "unmoved for
        # stop_after_s" can be seen and the oldest kept offsets stay bracketed.
        cutoff = sample.at - self._keep_s
        while len(samples) > 1 and samples[1].at <= cutoff:
            samples.popleft()
        return list(samples)
