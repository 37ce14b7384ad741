"""Hints composed by the sink: recall for a turn's ``request_hint``, after its writes.

The sink applies a batch of ``memory.ops`` to the stores first; a hint request
in that batch comes after its turn's own operations (same key, same
partition, in order), so recall then reads the turn's facts and episode. The
recall is the query service's own (``MemoryService.recall`` over the sink's
stores, ``pipelines.context.render_context`` for the block): one way to
recall, whoever asks.

Which request publishes is decided by its claim (connectors/redis_hints.py):
a copy of a request already owned by another ``memory.ops`` record yields no
hint. A store that is down (spooling) makes the hint carry what recall could
read, or no hits and ``recall_error`` when recall failed: the hint is still
published once, never retried into a later batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from connectors.redis_hints import HintClaims
from jobs.serve.memory_service import MAX_QUERY_CHARS, MemoryService
from pipelines.context import render_context
from pipelines.triggers.hints import render_hint
from schemas.hints import MemoryHint
from schemas.ops import MemoryOperation, OpType
from schemas.query import RecallHit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Requested:
    """A ``request_hint`` operation and where it was on ``memory.ops``."""

    op: MemoryOperation
    partition: int
    offset: int


class HintComposer:
    """Claims each request and recalls for the ones it owns."""

    def __init__(
        self,
        service: Callable[[], MemoryService],
        claims: HintClaims,
        *,
        k: int,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """``service`` builds the recall service on first use (it loads MiniLM)."""
        self._service_factory = service
        self._service: MemoryService | None = None
        self.claims = claims
        self.k = k
        self.clock = clock

    def compose(self, requested: Sequence[Requested]) -> list[MemoryHint]:
        """The hints of the requests this batch owns, in their order."""
        hints = []
        for item in requested:
            op, hint = item.op, item.op.hint
            if op.op_type is not OpType.REQUEST_HINT or hint is None:
                continue
            owner = f"{item.partition}:{item.offset}"
            if not self.claims.claim(op.tenant_id, hint.hint_id, owner):
                continue  # a copy of a request another record owns
            hints.append(self._hint(op))
        return hints

    def _hint(self, op: MemoryOperation) -> MemoryHint:
        request = op.hint
        assert request is not None  # noqa: S101 - compose() passes requests only
        hits: list[RecallHit] = []
        error = None
        # A turn may be 100,000 characters; recall reads a query of MAX_QUERY_CHARS
        # (MiniLM reads ~1,000 of them anyway): the turn's beginning.
        query = request.query[:MAX_QUERY_CHARS]
        try:
            hits = self.service.recall(op.tenant_id, op.user_id, query, k=self.k, as_of=request.ts)
        except ValueError as exc:  # a query recall refuses (too long): no hits
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a store down: the hint says so, once
            log.warning("recall for hint %s failed: %r", request.hint_id, exc)
            error = f"recall failed: {type(exc).__name__}"
        return MemoryHint(
            hint_id=request.hint_id,
            tenant_id=op.tenant_id,
            user_id=op.user_id,
            session_id=request.session_id,
            turn_index=request.turn_index,
            event_id=request.event_id,
            ts=request.ts,
            reason=request.reason,
            signals=request.signals,
            query=request.query,
            context=render_hint(request, render_context(query, hits)),
            hits=hits,
            behaviour=request.behaviour,
            lineage=op.lineage,
            published_at=self.clock(),
            recall_error=error,
        )

    @property
    def service(self) -> MemoryService:
        """The recall service, built on the first hint."""
        if self._service is None:
            self._service = self._service_factory()
        return self._service

    def close(self) -> None:
        """Stop the service's threads (if it was built)."""
        if self._service is not None:
            self._service.close()
