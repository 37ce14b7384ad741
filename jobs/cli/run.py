"""``memstream run --sample``: the whole pipeline on the bundled sample stream.

The command brings the local services up, publishes the sample stream
(memstream/data/sample/, one JSON-lines file per input topic) through the same validation
as ``memstream publish``, then runs the ingest job of the chosen engine (the
Faust worker, or the PyFlink job bounded to the input's end) and the sink job
as subprocesses — the way an operator runs them — and waits, showing progress,
until every event is ingested (lag 0 on the ingest group, or the bounded Flink
job finished), every operation is applied (lag 0 on the sink group) and no
store spool holds anything. It stops both jobs and prints the per-topic counts
and the memory report of every sample user (jobs/ops/memory_report.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from connectors.kafka_io import (
    DeadLetterPublisher,
    DeliveryFailed,
    KeyedProducer,
    end_offsets,
    read_topic,
)
from connectors.kafka_offsets import OffsetsUnavailable
from jobs.cli.publish import EXIT_BAD_LINES, EXIT_BROKER, EXIT_USAGE, publish_lines
from jobs.ops.pipeline_run import Engine, PipelineFailed, run_until_applied
from memstream.data import sample_dir
from memstream.settings import Settings, get_settings
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ, Topics

if TYPE_CHECKING:
    from infra import StartReport

SAMPLE_DIR = sample_dir()

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


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
    topics = Topics(namespace)
    # Records written before this run stay on the topics; count only ours.
    start = {topic: end_offsets(kafka.bootstrap, topics.name(topic)) for topic in watched}
    producer = KeyedProducer(
        kafka.bootstrap, client_id="memstream-run", max_message_bytes=kafka.max_message_bytes
    )
    dead_letters = DeadLetterPublisher(producer, topic=topics.dlq)
    reports = {}
    for topic in INPUT_TOPICS:
        with (sample_dir / f"{topic}.jsonl").open("rb") as lines:
            reports[topic] = publish_lines(
                lines, topic, producer, dead_letters, target=topics.name(topic)
            )
    producer.flush()
    counts = []
    for topic in watched:
        records = read_topic(kafka.bootstrap, topics.name(topic), start=start[topic])
        report = reports.get(topic)
        counts.append(
            TopicCount(
                topic=topics.name(topic),
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


def _print_report(settings: Settings, sample_dir: Path, namespace: str) -> None:
    # Imported here: chromadb and the Neo4j driver take seconds to import,
    # which `memstream --help` (and `memstream worker`, importing Engine) should not wait for.
    from jobs.ops.memory_report import report, users_in_files
    from jobs.stores import open_stores

    paths = [sample_dir / f"{topic}.jsonl" for topic in INPUT_TOPICS]
    # The sample is a replay of a past stream: report memory as of its newest event.
    stamps = [
        json.loads(line).get("ts")
        for path in paths
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]
    at = max(datetime.fromisoformat(s) for s in stamps if isinstance(s, str))
    with open_stores(settings, namespace or None) as readers:
        _out.print(f"\nmemory as of {at.isoformat()} (the newest sample event)")
        _out.print(report(users_in_files(paths), readers, at))


def run(
    sample: Annotated[
        bool,
        typer.Option("--sample", help="Run on the bundled sample stream (memstream/data/sample/)."),
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
    try:
        run_until_applied(settings, engine, namespace, _err)
    except (PipelineFailed, OffsetsUnavailable) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    _print_report(settings, SAMPLE_DIR, namespace)
    if any(c.dead_lettered or c.read_back != c.published for c in counts):
        raise typer.Exit(EXIT_BAD_LINES)
