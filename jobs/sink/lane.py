"""One store as the sink job drives it: direct writes, or its Redis spool, and the drain.

A :class:`StoreLane` pairs a store's writer with its spool and its
:class:`~pipelines.backpressure.StorePolicy`. ``apply`` writes a batch directly
while the policy allows it and spools it otherwise; a write that fails (store
down, transient error) or keeps exceeding the latency budget switches the store
to spooling, and every later operation for it follows into the spool, so order
is kept. ``drain_if_due`` replays the spool oldest first, in batches, when the
policy's probe is due; a drain that completes switches the store back to direct
writes. Metrics go to jobs/sink/metrics.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import redis

from connectors.protocols import BackpressureError, BatchingSink
from connectors.redis_memory import RedisSpool
from jobs.sink import metrics as metrics
from pipelines.backpressure import BackpressureConfig, StorePolicy
from schemas.ops import MemoryOperation

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def spool_namespace(store_namespace: str | None, store: str) -> str:
    """The Redis namespace of one store's spool (``RedisSpool`` keeps one stream per namespace)."""
    return f"{store_namespace}.spool-{store}" if store_namespace else f"spool-{store}"


class StoreUnavailable(RuntimeError):
    """A store without a fallback (working memory) could not be written; retry the batch."""


class OperationSpool(Protocol):
    """Where a store's operations wait while it is down or slow (``RedisSpool``)."""

    def spool(self, ops: Sequence[MemoryOperation]) -> None:
        """Append operations at the end of the spool."""
        ...

    def spool_depth(self) -> int:
        """How many operations wait."""
        ...

    def drain(self, apply: Callable[[list[MemoryOperation]], bool], batch_size: int = ...) -> int:
        """Feed the spool to ``apply`` oldest first; a batch it raises on stays, False stops."""
        ...


@dataclass
class Fallback:
    """A store's spool and the policy deciding when it is used."""

    spool: OperationSpool
    policy: StorePolicy


DRAIN_CHUNK_DIVISOR = 8


class StoreLane:
    """One store as the job drives it: direct writes, or its spool, and the drain."""

    def __init__(
        self,
        name: str,
        sink: BatchingSink,
        fallback: Fallback | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        """``fallback`` None: errors surface as StoreUnavailable (the working tier)."""
        self.name = name
        self.sink = sink
        self.fallback = fallback
        self.clock = clock
        self._slow_drain: str | None = None
        # A drained batch must come in under the latency budget for the spool to
        # empty; a whole chunk (256) takes Chroma 0.2-0.4 s on 2 busy cores, so a
        # slow-but-up store drained chunk by chunk never recovered. An eighth
        # of a chunk is ~30-100 ms for Chroma and Neo4j at their measured rates.
        self.drain_chunk = max(1, sink.chunk_size // DRAIN_CHUNK_DIVISOR)
        if fallback is not None:
            metrics.SPOOL_DEPTH.labels(name).set(fallback.spool.spool_depth())

    @classmethod
    def spooled(
        cls,
        sink: BatchingSink,
        client: redis.Redis,
        *,
        store_namespace: str | None,
        config: BackpressureConfig,
        clock: Clock = time.monotonic,
    ) -> StoreLane:
        """A lane with a Redis spool; operations left there by an earlier run go first."""
        name = sink.store_name
        spool = RedisSpool(client, namespace=spool_namespace(store_namespace, name))
        left = spool.spool_depth() > 0
        policy = StorePolicy(name, config, spooled=left, now=clock())
        return cls(name, sink, Fallback(spool, policy), clock=clock)

    def apply(self, ops: Sequence[MemoryOperation]) -> None:
        """Write (or spool) the operations addressed to this store, in order."""
        self.drain_if_due()
        mine = [op for op in ops if self.sink.tier in op.tiers]
        if not mine:
            return
        fallback = self.fallback
        if fallback is not None and not fallback.policy.direct:
            self._spool(fallback, mine)
            return
        started = self.clock()
        try:
            self.sink.write(mine)
            self.sink.flush()
        except BackpressureError as exc:
            if fallback is None:
                raise StoreUnavailable(str(exc)) from exc
            # The unapplied ones are the oldest of this store's backlog: spool
            # them first, and everything after them follows them there.
            self._spool(fallback, exc.operations)
            reason = fallback.policy.record_failure(self.clock())
            metrics.FALLBACK_ACTIVATIONS.labels(self.name, reason.value).inc()
            log.warning("%s: falling back to the spool: %s", self.name, exc)
            return
        elapsed = self.clock() - started
        metrics.OPS_WRITTEN.labels(self.name, "direct").inc(len(mine))
        metrics.WRITE_SECONDS.labels(self.name).observe(elapsed)
        if fallback is not None:
            tripped = fallback.policy.record_write(elapsed, self.clock())
            if tripped is not None:
                metrics.FALLBACK_ACTIVATIONS.labels(self.name, tripped.value).inc()
                log.warning(
                    "%s: writes over the %.3f s budget (last %.3f s): falling back to the spool",
                    self.name,
                    fallback.policy.config.latency_budget_s,
                    elapsed,
                )

    def drain_if_due(self) -> None:
        """Replay the spool when the policy says it is time to probe the store."""
        fallback = self.fallback
        if fallback is None or not fallback.policy.probe_due(self.clock()):
            return
        spool = fallback.spool
        self._slow_drain = None
        try:
            drained = spool.drain(self._write_drained, self.drain_chunk)
        except BackpressureError as exc:
            fallback.policy.record_drain(completed=False, now=self.clock())
            log.info(
                "%s: still unavailable, %d op(s) spooled: %s", self.name, spool.spool_depth(), exc
            )
        else:
            left = spool.spool_depth()
            if self._slow_drain is None and left == 0:
                took = fallback.policy.record_drain(completed=True, now=self.clock())
                if took is not None:
                    metrics.DRAIN_SECONDS.labels(self.name).observe(took)
                log.info("%s: spool drained (%d op(s)); direct writes resume", self.name, drained)
            else:
                # Up but slow: what was applied has left the spool, so every
                # probe makes progress, and the next one comes soon.
                fallback.policy.record_drain(completed=False, progressed=True, now=self.clock())
                log.info(
                    "%s: drained %d op(s), %d left, still slow: %s",
                    self.name,
                    drained,
                    left,
                    self._slow_drain,
                )
        metrics.SPOOL_DEPTH.labels(self.name).set(spool.spool_depth())

    def _write_drained(self, ops: list[MemoryOperation]) -> bool:
        started = self.clock()
        self.sink.write(ops)
        self.sink.flush()
        elapsed = self.clock() - started
        metrics.OPS_WRITTEN.labels(self.name, "drain").inc(len(ops))
        budget = self.sink.latency_budget_s
        if elapsed > budget:
            # Applied, so the batch leaves the spool; the store is still slow,
            # so the drain stops and later operations keep spooling until a
            # drain comes in under the budget (docs/guarantees.md). Keeping an
            # applied batch spooled instead left a store that is slow but
            # never quite fast enough with a spool that never emptied.
            self._slow_drain = f"drain batch took {elapsed:.3f}s > {budget}s"
            return False
        return True

    def _spool(self, fallback: Fallback, ops: Sequence[MemoryOperation]) -> None:
        if ops:
            fallback.spool.spool(ops)
            metrics.OPS_SPOOLED.labels(self.name).inc(len(ops))
            metrics.SPOOL_DEPTH.labels(self.name).set(fallback.spool.spool_depth())
