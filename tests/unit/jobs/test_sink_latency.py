"""The sink's latency metrics (issue 15): end to end from the broker, event-time lag apart.

An operation whose producer stamped it a year ago (a replayed backlog, or a
clock far off) reached the broker a moment ago: the end-to-end histogram sees
the moment, the event-time lag the year. No services: the sink's own functions
over plain records.
"""

from __future__ import annotations

from datetime import timedelta

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
)
from memory_ops import T0, turn
from prometheus_client import REGISTRY

from jobs.sink.job import broker_time, observe_applied

YEAR_S = timedelta(days=365).total_seconds()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_the_record_timestamp_is_when_it_reached_the_broker() -> None:
    appended = Message(topic="memory.ops", timestamp=(TIMESTAMP_LOG_APPEND_TIME, 1_700_000_000_500))
    created = Message(topic="memory.ops", timestamp=(TIMESTAMP_CREATE_TIME, 1_700_000_000_250))
    unstamped = Message(topic="memory.ops", timestamp=(TIMESTAMP_NOT_AVAILABLE, 0))
    assert broker_time(appended, read_at=1_800_000_000.0) == 1_700_000_000.5
    assert broker_time(created, read_at=1_800_000_000.0) == 1_700_000_000.25
    assert broker_time(unstamped, read_at=1_800_000_000.0) == 1_800_000_000.0


def test_end_to_end_starts_at_the_broker_and_event_time_lag_at_the_event() -> None:
    ops = [turn(0), turn(1)]  # event time T0
    now = T0.timestamp() + YEAR_S
    e2e = "memstream_sink_end_to_end_seconds"
    lag = "memstream_sink_event_time_lag_seconds"
    before = {
        name: (sample(f"{name}_count"), sample(f"{name}_sum"), sample(f"{name}_bucket", le="1.6"))
        for name in (e2e, lag)
    }

    # One reached the broker 0.3 s before it was applied, one "after" (clocks apart).
    observe_applied(ops, [now - 0.3, now + 2.0], now)

    def added(name: str) -> tuple[float, float, float]:
        count, total, fast = before[name]
        return (
            sample(f"{name}_count") - count,
            round(sample(f"{name}_sum") - total, 6),
            sample(f"{name}_bucket", le="1.6") - fast,
        )

    assert added(e2e) == (2, 0.3, 2)  # a negative span counts as 0
    count, total, fast = added(lag)
    assert (count, fast) == (2, 0)
    assert 2 * YEAR_S - 10 < total <= 2 * YEAR_S  # the turns' event times are T0 and just after
