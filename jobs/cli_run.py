"""``memstream run --sample``: the whole pipeline on the bundled sample stream.

The command brings the local services up, publishes the sample stream
(data/sample/, one JSON-lines file per input topic) through the same validation
as ``memstream publish``, then runs the ingest job of the chosen engine (the
Faust worker, or the PyFlink job bounded to the input's end) and the sink job
as subprocesses — the way an operator runs them — and waits, showing progress,
until every event is ingested (lag 0 on the ingest group, or the bounded Flink
job finished), every operation is applied (lag 0 on the sink group) and no
store spool holds anything. It stops both jobs and prints the per-topic counts
and the memory report of every sample user (jobs/memory_report.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from connectors import kafka_admin
from connectors.kafka_io import (
    DeadLetterPublisher,
    DeliveryFailed,
    KeyedProducer,
    end_offsets,
    read_topic,
)
from connectors.kafka_offsets import OffsetReader, OffsetsUnavailable
from jobs.cli_publish import EXIT_BAD_LINES, EXIT_BROKER, EXIT_USAGE, publish_lines
from memstream.settings import Settings, get_settings
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ, MEMORY_OPS

if TYPE_CHECKING:
    from infra import StartReport

_REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = _REPO_ROOT / "data" / "sample"
# The jobs' default group ids (jobs/cli_worker.py, jobs/cli_flink.py, jobs/cli_sink.py).
_FAUST_GROUP = "memstream-ingest"
_FLINK_GROUP = "memstream-ingest-flink"
_SINK_GROUP = "memstream-sink"
_SPOOLED_STORES = ("chroma", "neo4j")  # the stores with a spool (jobs/sink_job.py)
# The sample (~400 events) takes about a minute on 2 cores, most of it loading
# the NLP models (Faust) or starting the Flink mini-cluster; 10 min means stuck.
_RUN_TIMEOUT_S = 600.0
_POLL_S = 0.5  # how often progress is sampled
# A job finishes its batch in hand on SIGTERM; the Flink mini-cluster and
# Faust's shutdown take several seconds on 2 cores.
_STOP_TIMEOUT_S = 60.0

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


class Engine(StrEnum):
    """Stream engines that run the ingest job."""

    FAUST = "faust"
    FLINK = "flink"


@dataclass(frozen=True)
class TopicCount:
    """What happened to one topic in this run."""

    topic: str
    published: int
    dead_lettered: int
    read_back: int
    keys: int
    partitions: int


def _start_services(settings: Settings) -> None:
    # Imported here: infra loads the Neo4j driver (~1.5 s), which `--help` and
    # a usage error should not wait for.
    import infra

    def ready(report: StartReport) -> None:
        how = "started" if report.started else "already up"
        _err.print(f"{report.name}: {how} ({report.mode}, {report.seconds:.1f} s)")

    try:
        infra.up(settings, on_ready=ready)
    except (infra.ServiceStartError, infra.ToolchainError) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None


def publish_sample(
    settings: Settings, sample_dir: Path = SAMPLE_DIR, namespace: str = ""
) -> list[TopicCount]:
    """Publish every sample file to its topic and read this run's records back.

    ``namespace`` prefixes every topic name written and read (the topics must
    exist), so a test can run this against topics of its own.
    """
    kafka = settings.kafka
    watched = (*INPUT_TOPICS, MEMORY_DLQ)
    # Records written before this run stay on the topics; count only ours.
    start = {topic: end_offsets(kafka.bootstrap, namespace + topic) for topic in watched}
    producer = KeyedProducer(
        kafka.bootstrap, client_id="memstream-run", max_message_bytes=kafka.max_message_bytes
    )
    dead_letters = DeadLetterPublisher(producer, topic=namespace + MEMORY_DLQ)
    reports = {}
    for topic in INPUT_TOPICS:
        with (sample_dir / f"{topic}.jsonl").open("rb") as lines:
            reports[topic] = publish_lines(
                lines, topic, producer, dead_letters, target=namespace + topic
            )
    producer.flush()
    counts = []
    for topic in watched:
        records = read_topic(kafka.bootstrap, namespace + topic, start=start[topic])
        report = reports.get(topic)
        counts.append(
            TopicCount(
                topic=namespace + topic,
                published=report.published if report else dead_letters.sent,
                dead_lettered=report.dead_lettered if report else 0,
                read_back=len(records),
                keys=len({r.key for r in records}),
                partitions=len({r.partition for r in records}),
            )
        )
    return counts


def _table(counts: list[TopicCount]) -> Table:
    table = Table(title="sample stream: published and read back in this run")
    for column in ("topic", "published", "dead-lettered", "read back", "keys", "partitions"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for c in counts:
        table.add_row(
            c.topic,
            str(c.published),
            str(c.dead_lettered),
            str(c.read_back),
            str(c.keys),
            str(c.partitions),
        )
    return table


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
    # The NLP libraries must never reach for a model hub (STACK.md).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            [sys.executable, "-m", *args], cwd=_REPO_ROOT, env=env, stdout=out, stderr=out
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
    import redis  # here: see _print_report

    from connectors.redis_memory import RedisSpool
    from jobs.sink_job import spool_namespace

    client = redis.Redis.from_url(settings.redis.url, decode_responses=True)
    return sum(
        RedisSpool(client, namespace=spool_namespace(store_namespace, store)).spool_depth()
        for store in _SPOOLED_STORES
    )


def _wait_applied(
    settings: Settings, engine: Engine, ingest: _Job, sink: _Job, namespace: str
) -> None:
    """Show progress until the sample is ingested and applied; raise RuntimeError on failure."""
    bootstrap = settings.kafka.bootstrap
    reader = OffsetReader(bootstrap)
    inputs = [namespace + t for t in INPUT_TOPICS]
    ingest_group = namespace + (_FLINK_GROUP if engine is Engine.FLINK else _FAUST_GROUP)
    deadline = time.monotonic() + _RUN_TIMEOUT_S
    with Progress(console=_err, transient=False) as progress:
        events = progress.add_task(f"ingest ({engine.value}): events", total=None)
        ops = progress.add_task("sink: operations applied", total=None)
        while time.monotonic() < deadline:
            if sink.process.poll() is not None:
                raise RuntimeError(
                    f"the sink job exited ({sink.process.returncode}):\n{sink.tail()}"
                )
            code = ingest.process.poll()
            bounded_done = engine is Engine.FLINK and code == 0
            if code is not None and not bounded_done:
                raise RuntimeError(f"the ingest job exited ({code}):\n{ingest.tail()}")
            read = _progress(reader, bootstrap, ingest_group, inputs)
            applied = _progress(
                reader, bootstrap, namespace + _SINK_GROUP, [namespace + MEMORY_OPS]
            )
            progress.update(events, completed=read.committed, total=read.end)
            progress.update(ops, completed=applied.committed, total=applied.end)
            ingested = bounded_done or read.done
            if ingested and applied.done and _spooled(settings, namespace or None) == 0:
                return
            time.sleep(_POLL_S)
    raise RuntimeError(f"the sample was not applied within {_RUN_TIMEOUT_S:.0f} s")


def _ingest_args(engine: Engine, namespace: str) -> list[str]:
    if engine is Engine.FLINK:
        # Bounded to what the input topics hold now (the sample was published
        # first); a short checkpoint interval makes the outputs visible sooner.
        return [
            "jobs.cli_flink",
            "--namespace",
            namespace,
            "--until-end",
            "--checkpoint-interval",
            "5",
        ]
    return ["jobs.cli_worker", "--namespace", namespace]


def _print_report(settings: Settings, sample_dir: Path, namespace: str) -> None:
    # Imported here: chromadb and the Neo4j driver take seconds to import,
    # which `memstream --help` (and `memstream worker`, importing Engine) should not wait for.
    from jobs.memory_report import open_readers, report, users_in_files

    paths = [sample_dir / f"{topic}.jsonl" for topic in INPUT_TOPICS]
    # The sample is a replay of a past stream: report memory as of its newest event.
    stamps = [
        json.loads(line).get("ts")
        for path in paths
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]
    at = max(datetime.fromisoformat(s) for s in stamps if isinstance(s, str))
    with open_readers(settings, namespace or None) as readers:
        _out.print(f"\nmemory as of {at.isoformat()} (the newest sample event)")
        _out.print(report(users_in_files(paths), readers, at))


def run(
    sample: Annotated[
        bool, typer.Option("--sample", help="Run on the bundled sample stream (data/sample/).")
    ] = False,
    engine: Annotated[Engine, typer.Option(help="Stream engine of the ingest job.")] = Engine.FAUST,
    namespace: Annotated[
        str,
        typer.Option(
            help="Prefix of every topic and group, and the stores' namespace (tests, shadow runs); "
            "the topics must exist."
        ),
    ] = "",
) -> None:
    """Run the whole pipeline on the sample stream and print each user's memory.

    Exit codes: 0 every sample event was published and applied; 1 an event was
    dead-lettered or missing on read-back; 2 usage error; 3 a service, Kafka or
    a job failed.
    """
    if not sample:
        _err.print(
            "error: only --sample is available; publish your own events with "
            "`memstream publish TOPIC FILE` and run `memstream worker` and `memstream sink`.",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    settings = get_settings()
    _start_services(settings)
    try:
        counts = publish_sample(settings, namespace=namespace)
    except (DeliveryFailed, TimeoutError, KeyError) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    _out.print(_table(counts))
    sink_args = ["jobs.cli_sink", "--namespace", namespace]
    if namespace:
        sink_args += ["--store-namespace", namespace]
    jobs = [
        _spawn("sink", sink_args, settings),
        _spawn(engine.value, _ingest_args(engine, namespace), settings),
    ]
    try:
        _wait_applied(settings, engine, jobs[1], jobs[0], namespace)
    except (RuntimeError, OffsetsUnavailable) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    finally:
        for job in reversed(jobs):  # ingest first: the sink then finishes what it produced
            _stop(job)
    _print_report(settings, SAMPLE_DIR, namespace)
    if any(c.dead_lettered or c.read_back != c.published for c in counts):
        raise typer.Exit(EXIT_BAD_LINES)
