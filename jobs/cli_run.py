"""``memstream run --sample``: the main job on the bundled sample stream.

For now (issue 2) the job brings the local services up, publishes the sample
stream (data/sample/, one JSON-lines file per input topic) through the same
validation as ``memstream publish``, reads this run's records back from the
broker and prints the counts per topic. The pipeline issues extend it with the
ingest and sink jobs of the chosen engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
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
from jobs.cli_publish import EXIT_BAD_LINES, EXIT_BROKER, EXIT_USAGE, publish_lines
from memstream.settings import Settings, get_settings
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ

if TYPE_CHECKING:
    from infra import StartReport

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"

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


def run(
    sample: Annotated[
        bool, typer.Option("--sample", help="Run on the bundled sample stream (data/sample/).")
    ] = False,
    engine: Annotated[
        Engine, typer.Option(help="Stream engine of the ingest job (wired in by the pipeline).")
    ] = Engine.FAUST,
) -> None:
    """Run the main job: start the services, publish the sample, count it back per topic.

    Exit codes: 0 every sample event was published and read back; 1 an event
    was dead-lettered or missing on read-back; 2 usage error; 3 a service or
    Kafka failed.
    """
    if not sample:
        _err.print(
            "error: only --sample is available until the ingest pipeline lands; "
            "publish your own events with `memstream publish TOPIC FILE`.",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    settings = get_settings()
    _start_services(settings)
    _err.print(f"engine {engine.value}: the ingest job is not part of `run` yet")
    try:
        counts = publish_sample(settings)
    except (DeliveryFailed, TimeoutError, KeyError) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    _out.print(_table(counts))
    if any(c.dead_lettered or c.read_back != c.published for c in counts):
        raise typer.Exit(EXIT_BAD_LINES)
