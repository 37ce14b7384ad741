"""Micro-batching of concurrent recall queries: one embedding worker, one forward pass per batch.

The HTTP API runs each request on a thread of its pool. Left alone, every
request runs its own MiniLM forward pass, and those passes fight for the
interpreter lock and the two cores (the load test measured 22 recalls/s with
p95 1.8 s). Here each caller hands its query text to one worker thread and
waits: the worker takes the first text waiting, gathers what else arrives
within ``max_wait_s`` (at most ``max_batch`` texts), embeds them as one padded
batch and hands each caller its own row. While a batch runs, new queries queue
up and form the next one. The worker waits for company only while queries
come together (its last batch held more than one): a caller asking alone, as
an SDK in one thread does, never pays the wait.

A batch that raises is retried text by text, so an exception (a text the
tokenizer refuses, say) reaches only the caller whose text caused it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Job:
    text: str
    result: Future[Vector] = field(default_factory=Future)


class QueryBatcher:
    """Embeds texts handed in by many threads, in batches, on one worker thread."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], Vector],
        *,
        max_batch: int,
        max_wait_s: float,
        name: str = "query-batcher",
    ) -> None:
        """``embed`` maps texts to one row each (``Encoder.embed_queries``)."""
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        if max_wait_s < 0:
            raise ValueError("max_wait_s must not be negative")
        self._embed = embed
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        # close() puts None last: the worker finishes what came before it, then exits.
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._close_lock = threading.Lock()
        self.batches = 0  # forward passes run; texts / batches is the mean batch size
        self._together = False  # the last batch held more than one text
        self.texts = 0
        # A daemon: a process that exits without close() must not hang on it.
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def embed(self, text: str) -> Vector:
        """The vector of ``text``; blocks until its batch ran. Raises what embedding raised."""
        job = _Job(text)
        with self._close_lock:
            if self._closed:
                raise RuntimeError("the query batcher is closed")
            self._queue.put(job)
        return job.result.result()

    def close(self) -> None:
        """Embed what is already waiting, then stop the worker; later calls raise."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._worker.join()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            # Alone last time: take only what already waits, do not wait for more.
            deadline = time.monotonic() + (self.max_wait_s if self._together else 0.0)
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
                except queue.Empty:
                    break
                if item is None:
                    stopping = True  # after this batch: it was queued before close()
                    break
                batch.append(item)
            self._together = len(batch) > 1
            self._answer(batch)

    def _answer(self, batch: list[_Job]) -> None:
        try:
            vectors = self._embed([job.text for job in batch])
            if len(vectors) != len(batch):
                raise RuntimeError(f"{len(vectors)} query vectors for {len(batch)} texts")
        except Exception as exc:  # noqa: BLE001 - handed to its caller, raised in its thread
            if len(batch) == 1:
                batch[0].result.set_exception(exc)
                return
            # Find whose text failed: the others still get their vectors.
            _LOG.debug("a batch of %d queries failed; embedding them one by one", len(batch))
            for job in batch:
                self._answer([job])
            return
        self.batches += 1
        self.texts += len(batch)
        for job, vector in zip(batch, vectors, strict=True):
            job.result.set_result(vector)
