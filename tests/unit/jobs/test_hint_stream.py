"""The SSE encoding of hints (the API) and its parsing (the SDK), without a broker."""

from __future__ import annotations

from collections.abc import Generator
from datetime import UTC, datetime

from jobs.serve.hint_stream import KEEPALIVE, OPENED, sse
from memstream.sdk import sse_data
from schemas.hints import HintSignal, MemoryHint
from schemas.lineage import SourceLineage

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HINT = MemoryHint(
    hint_id="h_1",
    tenant_id="acme",
    user_id="pat",
    session_id="s1",
    turn_index=2,
    event_id="e-2",
    ts=T0,
    reason="implicit",
    signals=[HintSignal(name="constraints", evidence="3 markers", value=3.0)],
    query="Only vegetarian,\nnothing with nuts",
    context="Memory ...\n- likes tofu",
    hits=[],
    lineage=SourceLineage(topic="dialogue.events", partition=0, offset=2, event_id="e-2"),
    published_at=T0,
)


def test_a_stream_opens_sends_each_hint_and_keeps_alive_when_quiet() -> None:
    closed = []

    def follower() -> Generator[MemoryHint | None]:
        try:
            yield None  # positioned
            yield HINT
            yield None
            yield None
            yield None
        finally:
            closed.append(True)

    ticks = iter([0.0, 1.0, 5.0, 20.0, 21.0, 22.0, 23.0])
    chunks = list(sse(follower(), keepalive_s=15.0, clock=lambda: next(ticks)))
    assert chunks[0] == OPENED
    assert chunks[1].startswith(b"id: h_1\nevent: hint\ndata: {")
    assert chunks[2:] == [KEEPALIVE]  # only the poll 15 s after the hint
    assert closed == [True]


def test_the_sdk_reads_back_exactly_the_hints_sent() -> None:
    def follower() -> Generator[MemoryHint | None]:
        yield None
        yield HINT
        yield HINT.model_copy(update={"hint_id": "h_2"})

    body = b"".join(sse(follower(), keepalive_s=15.0)) + KEEPALIVE
    lines = body.decode().split("\n")
    hints = [MemoryHint.model_validate_json(data) for data in sse_data(lines)]
    assert [h.hint_id for h in hints] == ["h_1", "h_2"]
    assert hints[0] == HINT  # the newline in the query survives (JSON escapes it)


def test_events_other_than_hints_are_skipped() -> None:
    lines = [
        "event: ping",
        "data: {}",
        "",
        ": comment",
        "event: hint",
        'data: {"a":',
        "data: 1}",
        "",
    ]
    assert list(sse_data(lines)) == ['{"a":\n1}']
