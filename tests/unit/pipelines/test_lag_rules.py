"""Lag in seconds and the group status rules, over constructed sample histories."""

from __future__ import annotations

import pytest

from pipelines.lag import History, Rules, Sample, Status, lag_seconds, partition_status, worst

RULES = Rules(window_s=60.0, stop_after_s=300.0)


def samples(*rows: tuple[float, int, int]) -> list[Sample]:
    return [Sample(at=at, committed=committed, end=end) for at, committed, end in rows]


# --- lag in seconds ---------------------------------------------------------------------


def test_lag_seconds_interpolates_when_the_committed_record_was_appended() -> None:
    # The log end went 100 -> 200 between t=10 and t=20: record 149 (end 150) at t=15.
    history = samples((10.0, 0, 100), (20.0, 0, 200), (30.0, 0, 250))
    assert lag_seconds(history, committed=149, now=40.0) == pytest.approx(25.0)


def test_lag_seconds_uses_the_bracketing_pair_of_samples() -> None:
    history = samples((0.0, 0, 10), (10.0, 0, 20), (20.0, 0, 60))
    # Record 29 (end 30) lies a quarter of the way from end 20 (t=10) to end 60 (t=20).
    assert lag_seconds(history, committed=29, now=20.0) == pytest.approx(20.0 - 12.5)


def test_lag_seconds_is_zero_at_the_log_end() -> None:
    history = samples((0.0, 0, 10), (10.0, 0, 20))
    assert lag_seconds(history, committed=20, now=99.0) == 0.0
    assert lag_seconds(history, committed=25, now=99.0) == 0.0  # committed past the LSO


def test_lag_seconds_is_unknown_before_the_history() -> None:
    history = samples((10.0, 0, 100), (20.0, 0, 200))
    assert lag_seconds(history, committed=99, now=30.0) is None  # record 99 predates t=10
    assert lag_seconds([], committed=0, now=30.0) is None


def test_lag_seconds_never_negative() -> None:
    history = samples((10.0, 0, 100), (20.0, 0, 200))
    assert lag_seconds(history, committed=150, now=12.0) == 0.0


# --- status rules -----------------------------------------------------------------------


def test_ok_when_caught_up() -> None:
    history = samples((0.0, 10, 10), (10.0, 10, 10))
    assert partition_status(history, members=0, record_age_s=None, rules=RULES) is Status.OK


def test_ok_when_lag_touched_zero_in_the_window() -> None:
    history = samples((0.0, 10, 10), (10.0, 10, 15), (20.0, 10, 20))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.OK


def test_ok_when_offsets_move_and_lag_shrinks() -> None:
    history = samples((0.0, 10, 30), (10.0, 20, 35), (20.0, 30, 38))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.OK


def test_warn_when_offsets_move_but_lag_grows() -> None:
    history = samples((0.0, 10, 20), (10.0, 15, 30), (20.0, 20, 40))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.WARN


def test_no_warn_when_lag_dipped_within_the_window() -> None:
    history = samples((0.0, 10, 20), (10.0, 25, 30), (20.0, 26, 40))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.OK


def test_stall_when_a_member_stops_moving_with_lag() -> None:
    history = samples((0.0, 10, 20), (10.0, 10, 20), (20.0, 10, 25))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.STALL


def test_stop_when_no_members_and_no_movement() -> None:
    history = samples((0.0, 10, 20), (10.0, 10, 20))
    assert partition_status(history, members=0, record_age_s=None, rules=RULES) is Status.STOP


def test_no_members_but_moving_offsets_is_not_stopped() -> None:
    # Flink's source: no group members, commits on every checkpoint.
    history = samples((0.0, 10, 40), (30.0, 30, 50), (60.0, 45, 55))
    assert partition_status(history, members=0, record_age_s=None, rules=RULES) is Status.OK


def test_stop_when_unmoved_longer_than_stop_after_even_with_members() -> None:
    history = samples(*((float(t), 10, 20) for t in range(0, 301, 30)))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.STOP
    short = history[1:]  # unmoved for 270 s only: a stalled live consumer
    assert partition_status(short, members=1, record_age_s=None, rules=RULES) is Status.STALL


def test_single_sample_stop_needs_no_members_and_an_old_record() -> None:
    one = samples((0.0, 10, 20))
    assert partition_status(one, members=0, record_age_s=301.0, rules=RULES) is Status.STOP
    assert partition_status(one, members=0, record_age_s=5.0, rules=RULES) is Status.OK
    assert partition_status(one, members=0, record_age_s=None, rules=RULES) is Status.OK
    assert partition_status(one, members=2, record_age_s=301.0, rules=RULES) is Status.OK


def test_only_the_window_counts() -> None:
    # Lag was zero at t=0, outside the 60 s window; inside, the member is stuck.
    history = samples((0.0, 10, 10), (100.0, 10, 20), (130.0, 10, 20))
    assert partition_status(history, members=1, record_age_s=None, rules=RULES) is Status.STALL


def test_status_needs_a_sample() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        partition_status([], members=1, record_age_s=None, rules=RULES)


def test_group_status_is_the_worst_partition() -> None:
    assert worst([Status.OK, Status.STOP, Status.WARN]) is Status.STOP
    assert worst([Status.WARN, Status.STALL]) is Status.STALL
    assert worst([Status.OK, Status.WARN]) is Status.WARN
    assert worst([]) is Status.OK


# --- history ----------------------------------------------------------------------------


def test_history_keeps_one_sample_beyond_the_longest_rule() -> None:
    history = History(Rules(window_s=10.0, stop_after_s=20.0))
    kept: list[Sample] = []
    for t in range(0, 50, 5):
        kept = history.add("g", "t", 0, Sample(at=float(t), committed=1, end=2))
    assert [s.at for s in kept] == [25.0, 30.0, 35.0, 40.0, 45.0]
    other = history.add("g", "t", 1, Sample(at=45.0, committed=0, end=0))
    assert other == [Sample(at=45.0, committed=0, end=0)]


def test_history_keeps_stop_reachable() -> None:
    rules = Rules(window_s=10.0, stop_after_s=20.0)
    history = History(rules)
    kept: list[Sample] = []
    for t in range(0, 50, 5):
        kept = history.add("g", "t", 0, Sample(at=float(t), committed=1, end=2))
    assert partition_status(kept, members=1, record_age_s=None, rules=rules) is Status.STOP


def test_history_rejects_samples_out_of_order() -> None:
    history = History(RULES)
    history.add("g", "t", 0, Sample(at=10.0, committed=1, end=2))
    with pytest.raises(ValueError, match="time order"):
        history.add("g", "t", 0, Sample(at=5.0, committed=1, end=2))
