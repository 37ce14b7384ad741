"""Backpressure policy of the sink job: write a store directly, or spool its operations.

Pure: no clock, no store, no Redis. The sink job (jobs/sink/job.py) keeps one
:class:`StorePolicy` per store, tells it what each write did, and asks it where
the next operations go. docs/guarantees.md: "when a store's write latency goes over
200 ms or it is down, operations go to a Redis spool instead, and are replayed
in order, in batches, when it recovers".

States of one store::

    DIRECT ──(error / down, or `slow_writes_to_trip` writes over budget in a row)──▶ SPOOLING
    SPOOLING ──(probe due: the job drains the spool oldest first)──▶ drain ok ──▶ DIRECT
                                                                  └▶ drain failed ──▶ SPOOLING,
                                                                     next probe after a longer wait

Order: while a store is SPOOLING every operation for it goes to the spool,
never straight to the store, and the store returns to DIRECT only once the
spool has been drained completely, so a store sees its operations in the order
they were consumed. The recovery probe is the drain itself (the oldest spooled
batch written for real), so "it answers again" and "it keeps up again" are
measured with the same yardstick as a direct write.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    """Where a store's operations go."""

    DIRECT = "direct"
    SPOOLING = "spooling"


class Trip(StrEnum):
    """Why a store fell back to the spool (a metric label)."""

    ERROR = "error"  # the store raised a transient error or is down
    SLOW = "slow"  # writes took longer than the latency budget


@dataclass(frozen=True)
class BackpressureConfig:
    """Thresholds of the policy, the same for every store."""

    # docs/guarantees.md: "when a store's write latency goes over 200 ms".
    latency_budget_s: float = 0.2
    # One slow write is not a slow store: the first write of a process opens a
    # Chroma collection or warms Neo4j's query plan cache (several hundred ms
    # measured once per process on the dev machine). Two in a row is a trend.
    slow_writes_to_trip: int = 2
    # First wait before probing a store that fell back; doubled after each
    # failed probe up to ``probe_max_s``. 1 s: a restarted Redis/Neo4j answers
    # within seconds, and a probe costs one spooled batch.
    probe_initial_s: float = 1.0
    # Upper bound of the wait between probes: a recovered store is noticed
    # within 30 s without hammering one that stays down.
    probe_max_s: float = 30.0
    # Wait before the next probe after a drain that applied batches but found
    # the store slow. The store is up, and each probe drains until a batch
    # comes in over the budget, so a wait caps the drain: at 1 s, one or two
    # batches of 32 a second. 0: the sink's next loop drains again, so a slow
    # store works at its own pace, and the loop still polls Kafka between
    # drains. Measured with the soak benchmark at load ~4.7 (8 min, one run
    # each): the spool peaked at 490 operations with the 1 s wait, 47 without.
    probe_after_progress_s: float = 0.0

    def __post_init__(self) -> None:
        if self.latency_budget_s <= 0:
            raise ValueError("latency_budget_s must be > 0")
        if self.slow_writes_to_trip < 1:
            raise ValueError("slow_writes_to_trip must be >= 1")
        if not 0 < self.probe_initial_s <= self.probe_max_s:
            raise ValueError("need 0 < probe_initial_s <= probe_max_s")
        if not 0 <= self.probe_after_progress_s <= self.probe_max_s:
            raise ValueError("need 0 <= probe_after_progress_s <= probe_max_s")


class StorePolicy:
    """The direct-or-spool state machine of one store.

    Times are plain seconds from any monotonic clock the caller owns (``now``
    arguments), so the policy is deterministic under test.
    """

    def __init__(
        self,
        store: str,
        config: BackpressureConfig | None = None,
        *,
        spooled: bool = False,
        now: float = 0.0,
    ) -> None:
        """Start DIRECT, or SPOOLING with a probe due at once when ``spooled``.

        ``spooled`` is for a restart that finds operations left in the spool:
        they are older than anything consumed next, so they must go first.
        """
        self.store = store
        self.config = config or BackpressureConfig()
        self._mode = Mode.SPOOLING if spooled else Mode.DIRECT
        self._slow_in_a_row = 0
        self._probe_wait_s = self.config.probe_initial_s
        self._next_probe_at = now
        self._spooling_since: float | None = now if spooled else None

    @property
    def mode(self) -> Mode:
        """Where operations for this store go now."""
        return self._mode

    @property
    def direct(self) -> bool:
        """Whether operations may be written to the store directly."""
        return self._mode is Mode.DIRECT

    @property
    def spooling_since(self) -> float | None:
        """When the store fell back (None while DIRECT)."""
        return self._spooling_since

    def record_write(self, latency_s: float, now: float) -> Trip | None:
        """A direct write succeeded in ``latency_s``; returns SLOW if the store trips on it."""
        if not self.direct:
            raise RuntimeError(f"{self.store}: direct write recorded while spooling")
        if latency_s <= self.config.latency_budget_s:
            self._slow_in_a_row = 0
            return None
        self._slow_in_a_row += 1
        if self._slow_in_a_row < self.config.slow_writes_to_trip:
            return None
        self._trip(now)
        return Trip.SLOW

    def record_failure(self, now: float) -> Trip:
        """A direct write failed (store down, transient error, or a chunk over budget)."""
        if not self.direct:
            raise RuntimeError(f"{self.store}: direct write recorded while spooling")
        self._trip(now)
        return Trip.ERROR

    def probe_due(self, now: float) -> bool:
        """Whether the job should try to drain the spool now."""
        return not self.direct and now >= self._next_probe_at

    def record_drain(
        self, *, completed: bool, now: float, progressed: bool = False
    ) -> float | None:
        """The outcome of a drain attempt; returns the time spent spooling when it completed.

        ``completed``: the spool was emptied and every batch was within budget,
        so the store goes back to DIRECT. Otherwise it stays SPOOLING. After a
        drain that applied batches but found the store slow (``progressed``)
        the next probe comes after ``probe_after_progress_s`` (at once by
        default): the store is up, and waiting would only let the spool grow;
        a later failure waits ``probe_initial_s`` first. After a failed drain
        it waits twice as long as the last (up to ``probe_max_s``).
        """
        if self.direct:
            raise RuntimeError(f"{self.store}: drain recorded while direct")
        if completed:
            since = self._spooling_since if self._spooling_since is not None else now
            self._mode = Mode.DIRECT
            self._spooling_since = None
            self._slow_in_a_row = 0
            self._probe_wait_s = self.config.probe_initial_s
            return now - since
        if progressed:
            self._probe_wait_s = self.config.probe_initial_s
            self._next_probe_at = now + self.config.probe_after_progress_s
            return None
        self._probe_wait_s = min(self._probe_wait_s * 2, self.config.probe_max_s)
        self._next_probe_at = now + self._probe_wait_s
        return None

    def _trip(self, now: float) -> None:
        self._mode = Mode.SPOOLING
        self._spooling_since = now
        self._slow_in_a_row = 0
        self._probe_wait_s = self.config.probe_initial_s
        self._next_probe_at = now + self._probe_wait_s
