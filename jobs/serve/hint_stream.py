"""Hints as a server-sent-events stream (``text/event-stream``), for the HTTP API.

One event per hint::

    id: h_...            the hint id (a reconnecting client can tell repeats)
    event: hint
    data: {MemoryHint as JSON, one line}

The stream opens with a comment once the follower is positioned (a hint
published after the client has read it is delivered), and sends a comment
line after ``keepalive_s`` without a hint, so proxies keep the connection
and a client that went away is noticed at the next write.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

from schemas.hints import MemoryHint

MEDIA_TYPE = "text/event-stream"
OPENED = b": following memory.hints\n\n"
KEEPALIVE = b": keep-alive\n\n"


def event_of(hint: MemoryHint) -> bytes:
    """One hint as an SSE event (JSON has no raw newline, so one data line)."""
    return f"id: {hint.hint_id}\nevent: hint\ndata: {hint.model_dump_json()}\n\n".encode()


def sse(
    hints: Iterator[MemoryHint | None],
    keepalive_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[bytes]:
    """The SSE bytes of a hint follower (None items are its quiet polls)."""
    try:
        first = next(hints, None)  # a follower yields once it is positioned
        yield OPENED
        quiet_since = clock()
        for hint in itertools.chain([first], hints):
            if hint is not None:
                yield event_of(hint)
                quiet_since = clock()
            elif clock() - quiet_since >= keepalive_s:
                yield KEEPALIVE
                quiet_since = clock()
    finally:
        close = getattr(hints, "close", None)
        if close is not None:
            close()  # the follower's consumer goes with the client
