"""The pass-through job of bench_ingest.py: a Faust app copying every input record to one topic.

    python benchmarks/ingest_passthrough.py NAMESPACE

It has the worker's batching (take_events, then send and await every record)
and no stages, so it is the ceiling of the engine and broker on this machine.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from memstream.settings import get_settings
from schemas.topics import Topics

PASSTHROUGH_TOPIC = "bench.passthrough"
PASSTHROUGH_GROUP = "bench-passthrough"


def run_passthrough(namespace: str) -> None:
    """Copy ``namespace``'s input topics to its ``bench.passthrough`` topic until stopped."""
    import faust  # imported here: bench_ingest.py imports this module's names only

    settings = get_settings()
    app = faust.App(
        namespace + PASSTHROUGH_GROUP,
        broker=f"kafka://{settings.kafka.bootstrap}",
        store="memory://",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        datadir=str(Path(tempfile.gettempdir()) / f"bench-ingest-faust-{os.getpid()}"),
    )
    raw: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
    source = app.topic(*Topics(namespace).inputs, **raw)
    sink = app.topic(Topics(namespace).name(PASSTHROUGH_TOPIC), **raw)

    async def copy(stream: Any) -> None:
        # The worker's batching (settings.ingest), so the ceiling differs
        # from the worker by the stages only.
        batching = settings.ingest
        async for events in stream.take_events(batching.batch_size, within=batching.batch_within_s):
            sent = [await sink.send(key=e.message.key, value=e.message.value) for e in events]
            await asyncio.gather(*sent)

    app.agent(source, name="passthrough")(copy)
    faust.Worker(app, loglevel="warning", quiet=True).execute_from_commandline()


if __name__ == "__main__":
    run_passthrough(sys.argv[1])
