"""The contracts every memory store connector implements, in one place.

- :class:`MemorySink` — what the sink job drives: ``setup()`` once, ``write(batch)``
  for each batch of :class:`~schemas.ops.MemoryOperation`, ``flush()`` before it
  commits its Kafka offsets. A sink that cannot keep up raises
  :class:`BackpressureError` carrying the operations it did not apply, so the job
  can put exactly those into the Redis spool and replay them later.
- :class:`BatchingSink` — the one implementation of that buffering / error-mapping
  logic, shared by the Redis, Chroma and Neo4j writers (each only says how to apply
  one chunk of operations to its store).
- :class:`SearchHit` — the one model every store's fact reader returns (defined in
  ``schemas.hits``; imported here for the readers' signatures).
- :class:`WorkingMemoryReader`, :class:`EpisodicReader`, :class:`SemanticReader`,
  :class:`NamespaceReader` — the read side of the three tiers as the query
  service, the report, replay and the audit use it (implemented by the
  Redis, Chroma and Neo4j connectors, and in memory by ``memstream.testing``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from schemas._base import Scalar
from schemas.episodes import StoredEpisode
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, Tier
from schemas.ops import MemoryOperation, WorkingTurn

if TYPE_CHECKING:  # the connectors import this module
    from connectors.namespace_dump import UserDump
    from connectors.redis_memory import ErasureRecord, PendingEntry, ReviewEntry

# docs/guarantees.md: "when a store's write latency goes over 200 ms or it is down,
# operations go to a Redis spool instead".
DEFAULT_LATENCY_BUDGET_S = 0.2
# Operations applied per store round trip. 256 keeps one Neo4j UNWIND transaction
# and one Chroma upsert well below a second on the 2-core dev machine (see
# benchmarks/bench_writers.py for the measured rates).
DEFAULT_CHUNK_SIZE = 256


class BackpressureError(Exception):
    """A store is down or too slow: ``operations`` were NOT applied and must be spooled.

    Every write is idempotent, so spooling an operation that was in fact
    partially applied (a chunk interrupted mid-way) is harmless: replaying it
    converges to the same state.
    """

    def __init__(self, store: str, reason: str, operations: Sequence[MemoryOperation]) -> None:
        super().__init__(f"{store}: {reason} ({len(operations)} operation(s) not applied)")
        self.store = store
        self.reason = reason
        self.operations: list[MemoryOperation] = list(operations)


@runtime_checkable
class MemorySink(Protocol):
    """A memory tier that applies operations idempotently."""

    @property
    def tier(self) -> Tier:
        """The tier this sink writes; it keeps only operations that list it."""
        ...

    @property
    def store_name(self) -> str:
        """The store's name in metrics, spools and summaries (``redis``, ``chroma``, ``neo4j``)."""
        ...

    def setup(self) -> None:
        """Create what the store needs (constraints, collections); safe to call again."""
        ...

    def write(self, batch: Sequence[MemoryOperation]) -> None:
        """Accept a batch; may apply it now or on :meth:`flush`. Raises BackpressureError."""
        ...

    def flush(self) -> None:
        """Apply everything accepted so far. Raises BackpressureError."""
        ...


class BatchingSink(ABC):
    """Buffers operations for one tier and applies them in chunks.

    ``write`` keeps the operations addressed to this sink's tier and applies every
    full chunk at once; ``flush`` applies the remainder. A transient store error
    or a chunk slower than the latency budget raises :class:`BackpressureError`
    with every operation not yet applied (the buffer is then empty: the caller
    owns those operations). Any other error propagates with the buffer left as it
    was, so nothing is dropped silently.
    """

    tier: ClassVar[Tier]
    store_name: ClassVar[str]

    def __init__(
        self,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        latency_budget_s: float = DEFAULT_LATENCY_BUDGET_S,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        self.chunk_size = chunk_size
        self.latency_budget_s = latency_budget_s
        self._buffer: list[MemoryOperation] = []

    @abstractmethod
    def setup(self) -> None:
        """Create what the store needs; idempotent."""

    @abstractmethod
    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        """Apply one chunk of operations (all addressed to this tier) to the store."""

    @abstractmethod
    def _is_transient(self, error: Exception) -> bool:
        """Whether ``error`` means the store is unavailable (spool) rather than a bug."""

    def write(self, batch: Sequence[MemoryOperation]) -> None:
        """Buffer the operations for this tier and apply every full chunk.

        Raises ValueError (before buffering anything) for an operation whose record
        belongs to another tenant or user than the operation itself: writers scope
        by the operation and describe by the record, so the two must agree.
        """
        for op in batch:
            owner = (op.record.tenant_id, op.record.user_id) if op.record else None
            if owner is not None and owner != (op.tenant_id, op.user_id):
                raise ValueError(f"operation {op.op_id}: record belongs to {owner}")
        self._buffer.extend(op for op in batch if self.tier in op.tiers)
        self._drain(full_chunks_only=True)

    def flush(self) -> None:
        """Apply every buffered operation."""
        self._drain(full_chunks_only=False)

    def close(self) -> None:  # noqa: B027  # an optional hook, not abstract
        """Release the store client; nothing to release by default."""

    def _drain(self, *, full_chunks_only: bool) -> None:
        while self._buffer and (len(self._buffer) >= self.chunk_size or not full_chunks_only):
            chunk = self._buffer[: self.chunk_size]
            started = time.perf_counter()
            try:
                self._apply(chunk)
            except Exception as error:
                if not self._is_transient(error):
                    raise
                unapplied, self._buffer = self._buffer, []
                raise BackpressureError(self.store_name, repr(error), unapplied) from error
            del self._buffer[: len(chunk)]
            elapsed = time.perf_counter() - started
            if elapsed > self.latency_budget_s and self._buffer:
                unapplied, self._buffer = self._buffer, []
                reason = f"chunk took {elapsed:.3f}s > budget {self.latency_budget_s:.3f}s"
                raise BackpressureError(self.store_name, reason, unapplied)


@runtime_checkable
class WorkingMemoryReader(Protocol):
    """The read side of the working tier (Redis): pending items, statuses, turns, erasures."""

    def pending(self, tenant_id: str, user_id: str, at: datetime | None = None) -> list[SearchHit]:
        """Pending items not yet expired at ``at`` (default now), soonest expiry first."""
        ...

    def statuses(self, tenant_id: str, user_id: str) -> dict[str, Scalar]:
        """Every unexpired status of a user, by name."""
        ...

    def recent_turns(self, tenant_id: str, user_id: str, session_id: str) -> list[WorkingTurn]:
        """The last turns of a session, oldest first."""
        ...

    def erasures(self, tenant_id: str) -> list[ErasureRecord]:
        """The tenant's audited erasures, oldest first."""
        ...

    def pending_items(
        self, tenant_id: str, user_id: str, at: datetime | None = None
    ) -> list[PendingEntry]:
        """The queued records (with their review outcomes), soonest expiry first."""
        ...

    def pending_users(self, tenant_id: str) -> list[str]:
        """The tenant's users with a pending queue, sorted (the review console lists them)."""
        ...

    def review_decisions(self, tenant_id: str) -> list[ReviewEntry]:
        """The tenant's audited confirms and rejects, oldest first."""
        ...


@runtime_checkable
class EpisodicReader(Protocol):
    """The read side of the episodic tier (Chroma): every version, by similarity or whole."""

    def query(
        self,
        tenant_id: str,
        user_id: str,
        *,
        embedding: Sequence[float] | None = None,
        text: str | None = None,
        k: int = 10,
        at: datetime | None = None,
        session_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest versions of a user's facts (``at``: current then only)."""
        ...

    def get(
        self,
        tenant_id: str,
        user_id: str,
        *,
        archived: bool = False,
        at: datetime | None = None,
    ) -> list[SearchHit]:
        """A user's stored versions (``at``: current then only)."""
        ...

    def chain(self, tenant_id: str, user_id: str, subject: str, predicate: str) -> list[SearchHit]:
        """Every version of one (subject, predicate), oldest first."""
        ...

    def user_facts(self, tenant_id: str, user_id: str) -> list[tuple[SearchHit, list[float]]]:
        """Every live fact version of the user with its stored vector."""
        ...

    def user_episodes(self, tenant_id: str, user_id: str) -> list[StoredEpisode]:
        """Every episode of the user, oldest first, with its vector."""
        ...

    def mark_retrieved(
        self, tenant_id: str, fact_ids: Sequence[str], episode_ids: Sequence[str]
    ) -> None:
        """Recall served these items: they stay out of the 30-day archive a while longer."""
        ...

    def revision(self, tenant_id: str, user_id: str) -> str | None:
        """A token that changes whenever the user's facts or episodes change (None: none yet)."""
        ...


@runtime_checkable
class SemanticReader(Protocol):
    """The read side of the semantic tier (Neo4j): consolidated facts and their chains."""

    def facts_as_of(
        self,
        tenant_id: str,
        user_id: str,
        at: datetime,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> list[SearchHit]:
        """The versions of a user's facts that held at ``at``."""
        ...

    def chain(self, tenant_id: str, user_id: str, subject: str, predicate: str) -> list[SearchHit]:
        """Every version of one (subject, predicate), oldest first."""
        ...


@runtime_checkable
class NamespaceReader(Protocol):
    """One store namespace read whole, user by user (``memstream audit diff``)."""

    def users(self) -> list[tuple[str, str]]:
        """Every (tenant, user) with memory in any tier of the namespace, sorted."""
        ...

    def dump(self, tenant_id: str, user_id: str) -> UserDump:
        """All of one user's memory in the namespace, as comparable plain data."""
        ...
