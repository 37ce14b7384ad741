"""The sink's hint composer: claims decide who publishes, recall failures still publish once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from connectors.redis_hints import HintClaims
from jobs.serve.memory_service import MAX_QUERY_CHARS, MemoryService
from jobs.sink.hints import HintComposer, Requested
from schemas.hints import HintRequest, HintSignal
from schemas.lineage import SourceLineage
from schemas.ops import MemoryOperation, OpType

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Claims:
    """Stand-in for the Redis claims: the first owner of a hint keeps it."""

    def __init__(self) -> None:
        self.owners: dict[tuple[str, str], str] = {}

    def claim(self, tenant_id: str, hint_id: str, owner: str) -> bool:
        return self.owners.setdefault((tenant_id, hint_id), owner) == owner


class Recall:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.queries: list[str] = []

    def recall(self, tenant_id: str, user_id: str, query: str, **_: Any) -> list[Any]:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return []

    def close(self) -> None:
        pass


def request(offset: int, query: str = "As I said, my number.") -> Requested:
    hint = HintRequest(
        hint_id="h_1",
        event_id="e-1",
        session_id="s1",
        turn_index=3,
        query=query,
        ts=T0,
        reason="explicit",
        signals=[HintSignal(name="memory_cue", evidence="as i said")],
    )
    op = MemoryOperation(
        op_id="o_1",
        op_type=OpType.REQUEST_HINT,
        tenant_id="acme",
        user_id="pat",
        tiers=[],
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=7, event_id="e-1"),
        at=T0,
        hint=hint,
    )
    return Requested(op, partition=2, offset=offset)


def composer(recall: Recall) -> HintComposer:
    return HintComposer(
        lambda: cast(MemoryService, recall), cast(HintClaims, Claims()), k=5, clock=lambda: T0
    )


def test_the_owner_publishes_again_a_copy_never() -> None:
    hints = composer(Recall())
    (first,) = hints.compose([request(10)])
    assert (first.hint_id, first.key, first.published_at) == ("h_1", "acme:pat", T0)
    assert [h.hint_id for h in hints.compose([request(10)])] == ["h_1"]  # redelivered owner
    assert hints.compose([request(11)]) == []  # a copy at another offset


def test_a_failing_recall_publishes_the_hint_without_hits() -> None:
    (hint,) = composer(Recall(ConnectionError("chroma down"))).compose([request(10)])
    assert hint.hits == [] and hint.recall_error == "recall failed: ConnectionError"
    assert "No stored memory about this user matches the query." in hint.context


def test_a_long_turn_is_recalled_by_its_beginning() -> None:
    recall = Recall()
    long_turn = "as I said " * 1_000
    (hint,) = composer(recall).compose([request(10, long_turn)])
    assert recall.queries == [long_turn[:MAX_QUERY_CHARS]]
    assert hint.recall_error is None and hint.query == long_turn
