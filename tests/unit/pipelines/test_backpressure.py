"""The direct-or-spool policy of one store, driven with explicit times."""

from __future__ import annotations

import pytest

from pipelines.backpressure import BackpressureConfig, Mode, StorePolicy, Trip

CONFIG = BackpressureConfig(
    latency_budget_s=0.2, slow_writes_to_trip=2, probe_initial_s=1.0, probe_max_s=4.0
)


def test_fast_writes_stay_direct() -> None:
    policy = StorePolicy("neo4j", CONFIG)
    for t in range(10):
        assert policy.record_write(0.05, now=t) is None
    assert policy.mode is Mode.DIRECT


def test_one_slow_write_is_tolerated_two_in_a_row_trip() -> None:
    policy = StorePolicy("chroma", CONFIG)
    assert policy.record_write(0.5, now=0) is None
    assert policy.record_write(0.05, now=1) is None  # the streak is broken
    assert policy.record_write(0.5, now=2) is None
    assert policy.record_write(0.3, now=3) is Trip.SLOW
    assert policy.mode is Mode.SPOOLING
    assert policy.spooling_since == 3


def test_an_error_trips_at_once_and_probes_back_off_up_to_the_cap() -> None:
    policy = StorePolicy("neo4j", CONFIG)
    assert policy.record_failure(now=10) is Trip.ERROR
    assert not policy.probe_due(10.5)
    assert policy.probe_due(11)
    probes = []
    now = 11.0
    for _ in range(4):
        policy.record_drain(completed=False, now=now)
        wait = 0.0
        while not policy.probe_due(now + wait):
            wait += 0.5
        probes.append(wait)
        now += wait
    assert probes == [2.0, 4.0, 4.0, 4.0]  # doubled, capped at probe_max_s
    assert policy.mode is Mode.SPOOLING


def test_a_completed_drain_returns_to_direct_and_reports_the_outage_length() -> None:
    policy = StorePolicy("neo4j", CONFIG)
    policy.record_failure(now=100)
    policy.record_drain(completed=False, now=101)
    assert policy.record_drain(completed=True, now=103) == 3
    assert policy.direct
    assert policy.spooling_since is None
    # The back-off starts over for the next outage.
    policy.record_failure(now=200)
    assert policy.probe_due(201)


def test_a_drain_that_progressed_on_a_slow_store_probes_again_at_once() -> None:
    # Waiting after such a drain capped it at a batch or two a second, below
    # what arrived in the soak benchmark; the store is up, so drain again.
    policy = StorePolicy("chroma", CONFIG)
    policy.record_failure(now=10)
    policy.record_drain(completed=False, now=11)  # failed: the wait doubles to 2 s
    assert not policy.probe_due(12)
    policy.record_drain(completed=False, progressed=True, now=13)
    assert policy.probe_due(13)
    # A failure after progress backs off from the first wait again (doubled: 2 s).
    policy.record_drain(completed=False, now=13)
    assert not policy.probe_due(14.5)
    assert policy.probe_due(15)


def test_the_wait_after_progress_is_configurable() -> None:
    config = BackpressureConfig(probe_initial_s=1.0, probe_max_s=4.0, probe_after_progress_s=0.5)
    policy = StorePolicy("neo4j", config)
    policy.record_failure(now=0)
    policy.record_drain(completed=False, progressed=True, now=1)
    assert not policy.probe_due(1.4)
    assert policy.probe_due(1.5)


def test_a_restart_with_a_non_empty_spool_drains_before_any_direct_write() -> None:
    policy = StorePolicy("neo4j", CONFIG, spooled=True, now=50)
    assert not policy.direct
    assert policy.probe_due(50)
    with pytest.raises(RuntimeError):
        policy.record_write(0.01, now=50)  # the job must spool, not write, meanwhile


def test_the_policy_rejects_events_that_cannot_happen_in_its_state() -> None:
    policy = StorePolicy("neo4j", CONFIG)
    with pytest.raises(RuntimeError):
        policy.record_drain(completed=True, now=0)
    policy.record_failure(now=0)
    with pytest.raises(RuntimeError):
        policy.record_failure(now=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"latency_budget_s": 0},
        {"slow_writes_to_trip": 0},
        {"probe_initial_s": 5, "probe_max_s": 1},
        {"probe_after_progress_s": -1},
        {"probe_after_progress_s": 60, "probe_max_s": 30},
    ],
)
def test_invalid_config_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BackpressureConfig(**kwargs)  # type: ignore[arg-type]
