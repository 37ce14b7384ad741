"""The query batcher: each caller gets its own row, batches stay bounded, errors stay local."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pytest

from jobs.serve.memory_service import MemoryService, MemoryStores
from jobs.serve.query_batcher import QueryBatcher
from memstream.settings import Settings
from memstream.testing import HashingEmbedder, InMemoryStores, RecordingPublisher


class Recorder:
    """Embeds a text as [len(text), first char code]; records every batch it saw."""

    def __init__(self, gate: threading.Event | None = None, bad: str = "boom") -> None:
        self.batches: list[list[str]] = []
        self.gate = gate
        self.bad = bad
        self.lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.gate is not None:
            self.gate.wait(5)
        with self.lock:
            self.batches.append(list(texts))
        if self.bad in texts:
            raise ValueError(f"cannot embed {self.bad!r}")
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def _many(batcher: QueryBatcher, texts: list[str]) -> list[npt.NDArray[np.float32]]:
    with ThreadPoolExecutor(max_workers=len(texts)) as pool:
        return list(pool.map(batcher.embed, texts))


def test_each_caller_gets_the_row_of_its_own_text() -> None:
    embed = Recorder()
    batcher = QueryBatcher(embed, max_batch=8, max_wait_s=0.005)
    texts = [f"{chr(97 + i % 26)}{'x' * i}" for i in range(40)]
    try:
        vectors = _many(batcher, texts)
    finally:
        batcher.close()
    for text, vector in zip(texts, vectors, strict=True):
        assert vector.tolist() == [len(text), ord(text[0])]
    assert sorted(t for batch in embed.batches for t in batch) == sorted(texts)
    assert batcher.texts == 40


def test_concurrent_queries_share_a_batch_of_at_most_max_batch() -> None:
    gate = threading.Event()  # holds the first batch so the others queue up behind it
    embed = Recorder(gate)
    batcher = QueryBatcher(embed, max_batch=4, max_wait_s=0.05)
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = [pool.submit(batcher.embed, f"q{i}") for i in range(10)]
        threading.Event().wait(0.2)  # the first batch waits at the gate, the rest queue up
        gate.set()
        vectors = [r.result(timeout=5) for r in results]
    batcher.close()
    assert [v.tolist()[0] for v in vectors] == [len(f"q{i}") for i in range(10)]
    assert max(len(b) for b in embed.batches) == 4
    assert len(embed.batches) < 10  # shared, not one pass per query
    assert batcher.batches == len(embed.batches)


def test_a_caller_asking_alone_does_not_wait_for_company() -> None:
    batcher = QueryBatcher(Recorder(), max_batch=8, max_wait_s=1.0)
    started = time.monotonic()
    for text in ("tea", "jazz", "opera"):
        batcher.embed(text)
    assert time.monotonic() - started < 1.0  # not a second's wait per query
    batcher.close()


def test_a_failing_text_raises_only_in_its_callers_thread() -> None:
    gate = threading.Event()
    embed = Recorder(gate)
    batcher = QueryBatcher(embed, max_batch=8, max_wait_s=0.05)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = {t: pool.submit(batcher.embed, t) for t in ("tea", "boom", "jazz", "opera")}
        threading.Event().wait(0.1)
        gate.set()
        with pytest.raises(ValueError, match="boom"):
            results["boom"].result(timeout=5)
        for text in ("tea", "jazz", "opera"):
            assert results[text].result(timeout=5).tolist() == [len(text), ord(text[0])]
    # The worker survived: later queries are still answered.
    assert batcher.embed("later").tolist() == [5, ord("l")]
    batcher.close()


def test_a_wrong_number_of_rows_fails_the_callers_not_the_worker() -> None:
    batcher = QueryBatcher(lambda texts: np.zeros((0, 2), np.float32), max_batch=4, max_wait_s=0)
    with pytest.raises(RuntimeError, match="0 query vectors for 1 texts"):
        batcher.embed("tea")
    with pytest.raises(RuntimeError):
        batcher.embed("again")  # still answered (with its error), not hung
    batcher.close()


def test_close_answers_what_waits_then_refuses_new_queries() -> None:
    gate = threading.Event()
    embed = Recorder(gate)
    batcher = QueryBatcher(embed, max_batch=2, max_wait_s=0)
    with ThreadPoolExecutor(max_workers=5) as pool:
        results = [pool.submit(batcher.embed, f"q{i}") for i in range(5)]
        threading.Event().wait(0.1)
        closer = pool.submit(batcher.close)
        gate.set()
        closer.result(timeout=5)
        assert [r.result(timeout=5).tolist()[0] for r in results] == [2.0] * 5
    with pytest.raises(RuntimeError, match="closed"):
        batcher.embed("late")
    batcher.close()  # twice is fine
    assert not batcher._worker.is_alive()


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        QueryBatcher(Recorder(), max_batch=0, max_wait_s=0)
    with pytest.raises(ValueError):
        QueryBatcher(Recorder(), max_batch=1, max_wait_s=-1)


def _stores() -> MemoryStores:
    tiers = InMemoryStores.create()
    return MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=RecordingPublisher(),
    )


@pytest.mark.parametrize("batching", [True, False])
def test_the_service_embeds_queries_through_the_batcher_when_set(batching: bool) -> None:
    settings = Settings(api={"query_batching": batching, "query_batch_max": 3})  # type: ignore[arg-type]
    service = MemoryService(settings, stores=_stores())
    try:
        assert (service.query_batcher is not None) is batching
        assert service.recall("acme", "u1", "when can the technician come?") == []
        if service.query_batcher is not None:
            assert service.query_batcher.max_batch == 3
            assert service.query_batcher.texts == 1
    finally:
        service.close()
