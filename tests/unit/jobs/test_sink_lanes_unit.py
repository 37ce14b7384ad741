"""The sink's store lanes over in-memory stores and spools: direct, fallback, drain, order."""

from __future__ import annotations

from collections.abc import Sequence

from memory_ops import T0, close, record, turn, upsert

from jobs.sink.lane import Fallback, StoreLane, StoreUnavailable
from memstream.testing import InMemoryEpisodic, InMemorySpool, InMemoryWorking
from pipelines.backpressure import BackpressureConfig, StorePolicy
from schemas.memory import Tier
from schemas.ops import MemoryOperation

FAST = BackpressureConfig(probe_initial_s=1.0, probe_max_s=4.0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def spooled_lane(store: InMemoryEpisodic, clock: Clock) -> tuple[StoreLane, InMemorySpool]:
    spool = InMemorySpool()
    policy = StorePolicy(store.store_name, FAST, spooled=False, now=clock())
    return StoreLane(store.store_name, store, Fallback(spool, policy), clock=clock), spool


def test_a_healthy_store_is_written_directly_and_only_with_its_own_ops() -> None:
    clock = Clock()
    chroma = InMemoryEpisodic()
    lane, spool = spooled_lane(chroma, clock)
    fact = upsert(record("f1", "monday"))
    working_only = turn(1)
    lane.apply([fact, working_only])
    assert [op.op_id for op in chroma.applied] == [fact.op_id]
    assert spool.spool_depth() == 0


def test_a_failing_store_spools_everything_after_in_order_then_drains_when_back() -> None:
    clock = Clock()
    chroma = InMemoryEpisodic()
    lane, spool = spooled_lane(chroma, clock)
    v1 = record("f1", "monday")
    ops = [
        upsert(v1),
        close(v1, T0.replace(hour=11)),
        upsert(record("f2", "tea", predicate="likes")),
    ]

    chroma.fail_with = ConnectionError("chroma down")
    lane.apply(ops[:1])
    lane.apply(ops[1:])  # spooling now: these follow the first into the spool
    assert chroma.applied == []
    assert [op.op_id for op in spool.ops] == [op.op_id for op in ops]

    chroma.fail_with = None
    lane.apply([])  # probe not due yet: nothing drained
    assert spool.spool_depth() == 3
    clock.now += 5
    later = upsert(record("f3", "friday", predicate="likes_day"))
    lane.apply([later])  # the probe drains the backlog first, then writes directly
    assert [op.op_id for op in chroma.applied] == [op.op_id for op in [*ops, later]]
    assert spool.spool_depth() == 0
    (closed,) = [h for h in chroma.get("acme", "u1") if h.fact_id == "f1"]
    assert closed.valid_until is not None  # the close, applied after the upsert, holds


def test_a_store_still_down_at_the_probe_keeps_its_spool() -> None:
    clock = Clock()
    chroma = InMemoryEpisodic()
    lane, spool = spooled_lane(chroma, clock)
    chroma.fail_with = ConnectionError("down")
    lane.apply([upsert(record("f1", "monday"))])
    clock.now += 5
    lane.apply([])
    assert spool.spool_depth() == 1 and chroma.applied == []


def test_working_memory_without_a_spool_raises_store_unavailable() -> None:
    working = InMemoryWorking()
    lane = StoreLane(working.store_name, working)
    working.fail_with = ConnectionError("redis down")
    try:
        lane.apply([turn(1)])
    except StoreUnavailable:
        pass
    else:
        raise AssertionError("a working-memory failure must surface for a retry")
    working.fail_with = None
    lane.apply([turn(1)])
    assert [t.turn_index for t in working.recent_turns("acme", "u1", "s1")] == [1]


def test_working_memory_keeps_the_last_turns_and_a_replay_changes_nothing() -> None:
    working = InMemoryWorking()
    lane = StoreLane(working.store_name, working)
    ops = [turn(i) for i in range(8)]
    lane.apply(ops)
    lane.apply(ops)
    assert [t.turn_index for t in working.recent_turns("acme", "u1", "s1")] == [3, 4, 5, 6, 7]
    assert working.tier is Tier.WORKING


class SlowEpisodic(InMemoryEpisodic):
    """A store that is up but takes ``seconds`` of the lane's clock per write."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__()
        self.lane_clock = clock
        self.seconds = seconds

    def write(self, ops: Sequence[MemoryOperation]) -> None:
        self.lane_clock.now += self.seconds
        super().write(ops)


def test_a_store_up_but_slow_empties_its_spool_batch_by_batch() -> None:
    # Every drain batch comes in over the budget. Each one applied leaves the
    # spool anyway, so the backlog shrinks at every probe (once it never did).
    clock = Clock()
    chroma = SlowEpisodic(clock, seconds=0.0)
    lane, spool = spooled_lane(chroma, clock)
    chroma.fail_with = ConnectionError("down")
    backlog = [upsert(record(f"f{i}", "monday")) for i in range(3 * lane.drain_chunk)]
    lane.apply(backlog)
    assert spool.spool_depth() == len(backlog)

    chroma.fail_with = None
    chroma.seconds = chroma.latency_budget_s * 2
    depths = []
    clock.now += FAST.probe_initial_s  # the first probe after the outage
    for _ in range(3):
        lane.apply([])  # a drain that progressed probes again on the next loop, no wait
        depths.append(spool.spool_depth())
    assert depths == [2 * lane.drain_chunk, lane.drain_chunk, 0]
    assert [op.op_id for op in chroma.applied] == [op.op_id for op in backlog]
    # The spool is empty: the next loop's probe finds nothing left, and writes
    # go direct again, judged by the budget like any direct write...
    first, second, third = (upsert(record(f"g{i}", "friday")) for i in range(3))
    lane.apply([first])
    assert spool.spool_depth() == 0
    # ...so two slow ones in a row send the store back to its spool...
    lane.apply([second])
    lane.apply([third])
    assert spool.spool_depth() == 1
    # ...until a drain comes in under the budget and direct writes resume.
    chroma.seconds = 0.0
    clock.now += FAST.probe_initial_s
    direct = upsert(record("g3", "friday"))
    lane.apply([direct])
    assert spool.spool_depth() == 0
    applied = [op.op_id for op in chroma.applied][len(backlog) :]
    assert applied == [op.op_id for op in (first, second, third, direct)]
