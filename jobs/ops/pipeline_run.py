"""Run the ingest and sink jobs as subprocesses until a published stream is applied.

What ``memstream run`` does after publishing: start ``memstream sink`` and the
ingest job of the chosen engine (the Faust worker, or the PyFlink job bounded to
what the input topics hold) the way an operator runs them, each logging to
``<state_dir>/logs/run-<job>.log``; show progress (rich) from the groups'
committed offsets; return once every event is ingested (lag 0 on the ingest
group, or the bounded Flink job finished), every operation applied (lag 0 on
the sink group) and no store spool holds anything; stop both jobs either way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import redis
from rich.console import Console
from rich.progress import Progress

from connectors import kafka_admin
from connectors.kafka_offsets import OffsetReader
from connectors.redis_memory import RedisSpool
from jobs.sink.lane import spool_namespace
from memstream.settings import Settings
from schemas.topics import Topics

_SPOOLED_STORES = ("chroma", "neo4j")  # the stores with a spool (jobs/sink/job.py)
# The sample (~400 events) took 1-3 minutes on the shared 2-core machine, most of
# it loading the NLP models (Faust) or starting the Flink mini-cluster and
# waiting for its checkpoints; 10 min means stuck.
_RUN_TIMEOUT_S = 600.0
_POLL_S = 0.5  # how often progress is sampled
# A job finishes its batch in hand on SIGTERM; the Flink mini-cluster and
# Faust's shutdown take several seconds on 2 cores.
_STOP_TIMEOUT_S = 60.0


class PipelineFailed(RuntimeError):
    """A job exited, or the stream was not applied in time; the message holds the log tail."""


class Engine(StrEnum):
    """Stream engines that run the ingest job."""

    FAUST = "faust"
    FLINK = "flink"


@dataclass
class _Job:
    """A job subprocess and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _spawn(name: str, args: list[str], settings: Settings) -> _Job:
    log = settings.state_dir / "logs" / f"run-{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # The NLP libraries must never reach for a model hub (docs/dependencies.md).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            [sys.executable, "-m", *args], env=env, stdout=out, stderr=out
        )
    return _Job(name, process, log)


def _stop(job: _Job) -> None:
    if job.process.poll() is None:
        job.process.send_signal(signal.SIGTERM)
        try:
            job.process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            job.process.kill()
            job.process.wait()


@dataclass(frozen=True)
class _Progress:
    """Offsets a group has committed and the ends it must reach, summed over partitions."""

    committed: int
    end: int

    @property
    def done(self) -> bool:
        return self.committed >= self.end


def _progress(reader: OffsetReader, bootstrap: str, group: str, topics: list[str]) -> _Progress:
    counts = kafka_admin.partition_counts(bootstrap, topics)
    positions = [(t, p) for t, n in counts.items() for p in range(n)]
    ends = reader.log_ends(positions)
    committed = reader.committed(group) if group in reader.groups() else {}
    return _Progress(
        committed=sum(min(committed.get(pos, 0), end) for pos, end in ends.items()),
        end=sum(ends.values()),
    )


def _spooled(settings: Settings, store_namespace: str | None) -> int:
    client = redis.Redis.from_url(settings.redis.url, decode_responses=True)
    return sum(
        RedisSpool(client, namespace=spool_namespace(store_namespace, store)).spool_depth()
        for store in _SPOOLED_STORES
    )


def _wait_applied(
    settings: Settings, engine: Engine, ingest: _Job, sink: _Job, namespace: str, console: Console
) -> None:
    """Show progress until the stream is ingested and applied."""
    bootstrap = settings.kafka.bootstrap
    reader = OffsetReader(bootstrap)
    topics = Topics(namespace)
    inputs = topics.inputs
    ingest_group = namespace + (
        settings.flink.group_id if engine is Engine.FLINK else settings.ingest.group_id
    )
    deadline = time.monotonic() + _RUN_TIMEOUT_S
    with Progress(console=console, transient=False) as progress:
        events = progress.add_task(f"ingest ({engine.value}): events", total=None)
        ops = progress.add_task("sink: operations applied", total=None)
        while time.monotonic() < deadline:
            if sink.process.poll() is not None:
                raise PipelineFailed(
                    f"the sink job exited ({sink.process.returncode}):\n{sink.tail()}"
                )
            code = ingest.process.poll()
            bounded_done = engine is Engine.FLINK and code == 0
            if code is not None and not bounded_done:
                raise PipelineFailed(f"the ingest job exited ({code}):\n{ingest.tail()}")
            read = _progress(reader, bootstrap, ingest_group, inputs)
            applied = _progress(
                reader, bootstrap, namespace + settings.sink.group_id, [topics.memory_ops]
            )
            progress.update(events, completed=read.committed, total=read.end)
            progress.update(ops, completed=applied.committed, total=applied.end)
            ingested = bounded_done or read.done
            if ingested and applied.done and _spooled(settings, namespace or None) == 0:
                return
            time.sleep(_POLL_S)
    raise PipelineFailed(f"the stream was not applied within {_RUN_TIMEOUT_S:.0f} s")


def _ingest_args(engine: Engine, namespace: str) -> list[str]:
    if engine is Engine.FLINK:
        # Bounded to what the input topics hold now (the sample was published
        # first); a short checkpoint interval makes the outputs visible sooner.
        return [
            "jobs.cli.flink",
            "--namespace",
            namespace,
            "--until-end",
            "--checkpoint-interval",
            "5",
        ]
    return ["jobs.cli.worker", "--namespace", namespace]


def run_until_applied(settings: Settings, engine: Engine, namespace: str, console: Console) -> None:
    """Start the sink and the ingest job, wait until everything is applied, stop both.

    Raises PipelineFailed (or OffsetsUnavailable when Kafka stops answering).
    """
    sink_args = ["jobs.cli.sink", "--namespace", namespace]
    if namespace:
        sink_args += ["--store-namespace", namespace]
    sink = _spawn("sink", sink_args, settings)
    ingest = _spawn(engine.value, _ingest_args(engine, namespace), settings)
    try:
        _wait_applied(settings, engine, ingest, sink, namespace, console)
    finally:
        _stop(ingest)  # first: the sink then finishes what it produced
        _stop(sink)
