"""``memstream publish TOPIC [FILE|-]``: JSON lines in, validated events out.

Every line is validated against the topic's schema. A valid line is published
as-is, keyed by ``tenant:user``; an invalid one is reported on stderr with its
line number and reason and sent to ``memory.dlq`` in a DeadLetter envelope.
Input is read as bytes and split on newline bytes, so a line that is not UTF-8 is
dead-lettered like any other bad line instead of crashing the reader.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from connectors.kafka_io import DeadLetterPublisher, DeliveryFailed, KeyedProducer
from memstream.settings import get_settings
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ
from schemas.validate import InvalidEvent, decode_event

EXIT_BAD_LINES = 1
EXIT_USAGE = 2
EXIT_BROKER = 3
# Files above this size get a progress bar (about 2,500 typical events): below
# it publishing takes well under a second and a bar would only flicker.
PROGRESS_MIN_BYTES = 1024 * 1024

_err = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class Rejection:
    """One line that did not become an event."""

    line: int
    reason: str
    detail: str


@dataclass
class PublishReport:
    """What one publish run did with its input."""

    topic: str
    published: int = 0
    blank: int = 0
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def dead_lettered(self) -> int:
        return len(self.rejections)


def publish_lines(
    lines: Iterable[bytes],
    topic: str,
    producer: KeyedProducer,
    dead_letters: DeadLetterPublisher,
    on_line: Callable[[bytes, Rejection | None], None] | None = None,
    target: str | None = None,
) -> PublishReport:
    """Validate each line as an event of ``topic`` and send it; the caller flushes.

    Valid lines go to ``target`` (default: ``topic`` itself; another name puts
    them in a separate namespace). Blank lines are counted and skipped (they
    carry no event). ``on_line`` is called after each non-blank line with its
    rejection, if any.
    """
    destination = target or topic
    report = PublishReport(topic)
    for number, raw_line in enumerate(lines, start=1):
        raw = raw_line.rstrip(b"\r\n")
        if not raw.strip():
            report.blank += 1
            continue
        rejection = None
        try:
            event = decode_event(topic, raw)
        except InvalidEvent as exc:
            dead_letters.publish(raw, exc, destination, line=number, stage="publish")
            rejection = Rejection(number, exc.reason.value, exc.detail)
            report.rejections.append(rejection)
        else:
            producer.send(destination, raw, key=event.key)
            report.published += 1
        if on_line is not None:
            on_line(raw_line, rejection)
    return report


def _print_rejection(rejection: Rejection) -> None:
    _err.print(f"line {rejection.line}: {rejection.reason}: {rejection.detail}", markup=False)


def _open_input(file: str) -> tuple[BinaryIO, int | None]:
    if file == "-":
        return sys.stdin.buffer, None
    path = Path(file)
    if not path.is_file():
        _err.print(f"error: no such file: {file}", markup=False)
        raise typer.Exit(EXIT_USAGE)
    return path.open("rb"), path.stat().st_size


def _publish_with_progress(
    source: BinaryIO,
    size: int | None,
    topic: str,
    producer: KeyedProducer,
    dead_letters: DeadLetterPublisher,
) -> PublishReport:
    show_bar = size is not None and size >= PROGRESS_MIN_BYTES and _err.is_terminal
    columns = (TextColumn("publishing"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=_err, transient=True, disable=not show_bar) as progress:
        task = progress.add_task("publish", total=size)

        def on_line(raw_line: bytes, rejection: Rejection | None) -> None:
            progress.advance(task, len(raw_line))
            if rejection is not None:
                _print_rejection(rejection)

        return publish_lines(source, topic, producer, dead_letters, on_line)


def publish(
    topic: Annotated[str, typer.Argument(help=f"Input topic: one of {', '.join(INPUT_TOPICS)}.")],
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE|-", help="JSON-lines file, one event per line; '-' reads stdin."
        ),
    ] = "-",
) -> None:
    """Validate JSON lines and publish them to an input topic, keyed by tenant:user.

    Each invalid line is reported on stderr with its line number and reason and
    sent to memory.dlq; every valid line is still published. Exit codes: 0 all
    published; 1 some lines dead-lettered; 2 usage error (unknown topic or file;
    the lines are still dead-lettered with reason unknown_topic); 3 Kafka
    unreachable or a message not acknowledged.
    """
    unknown_topic = topic not in INPUT_TOPICS
    if unknown_topic:
        _err.print(
            f"error: unknown topic {topic!r}; valid topics: {', '.join(INPUT_TOPICS)}. "
            f"Every line goes to {MEMORY_DLQ}.",
            markup=False,
        )
    source, size = _open_input(file)
    kafka = get_settings().kafka
    producer = KeyedProducer(
        kafka.bootstrap, client_id="memstream-publish", max_message_bytes=kafka.max_message_bytes
    )
    with source:
        try:
            producer.check_reachable()
            report = _publish_with_progress(
                source, size, topic, producer, DeadLetterPublisher(producer)
            )
            producer.flush()
        except DeliveryFailed as exc:
            _err.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_BROKER) from None
    typer.echo(
        f"{topic}: published {report.published}, dead-lettered {report.dead_lettered} "
        f"(to {MEMORY_DLQ}), blank lines skipped {report.blank}"
    )
    if unknown_topic:
        raise typer.Exit(EXIT_USAGE)
    if report.rejections:
        raise typer.Exit(EXIT_BAD_LINES)
