"""``memstream lag [--group G] [--watch] [--json]``: consumer lag per group, topic and partition.

Laid out like ``kafka-consumer-groups --describe``: GROUP TOPIC PARTITION
CURRENT-OFFSET LOG-END-OFFSET LAG, plus LAG-SECONDS and the group's STATUS
(rules in ``pipelines.lag``), sorted, with a summary line. LOG-END-OFFSET is the
last stable offset, so a transactional topic's open transaction is not lag.

LAG-SECONDS is the age of the oldest unconsumed record. Each refresh samples
every log end; once the samples bracket the moment the committed record was
appended, that moment is interpolated from them. Before that — always on the
first call, and for records older than the kept samples — the record's own
timestamp is read (one record per partition, from an assigned consumer, cached
per offset). That timestamp is the producer's CreateTime unless the topic uses
LogAppendTime; producers here stamp records as they send them, so both agree
to within the send latency. A lag made only of transaction markers or aborted
records has nothing waiting, so its age is 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table

from pipelines.lag import Rules

if TYPE_CHECKING:
    from jobs.ops.lag import GroupLag, LagMonitor

EXIT_USAGE = 2
EXIT_BROKER = 3
# Often enough to watch a Faust worker (commits every 2.8 s) move; a Flink job
# (commits every 30 s) still gets several samples per checkpoint. Each refresh
# costs four admin requests, nothing for a broker.
DEFAULT_INTERVAL_S = 5.0
_DEFAULTS = Rules()
# Only a bound for measuring the table's natural width; far beyond any row.
_UNBOUNDED_WIDTH = 100_000

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def render(reports: Sequence[GroupLag]) -> Table:
    """The describe-style table, one row per partition, with the summary as its caption."""
    from jobs.ops.lag import seconds, summary

    table = Table(box=None, caption=summary(reports), caption_justify="left", pad_edge=False)
    # In a narrow terminal (--watch) long names fold onto more lines; figures never do.
    table.add_column("GROUP", overflow="fold")
    table.add_column("TOPIC", overflow="fold")
    for header in ("PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("STATUS", no_wrap=True, min_width=len("STATUS"))
    for report in reports:
        if not report.partitions:
            table.add_row(report.group, "-", "-", "-", "-", "-", "-", report.status.value)
        for row in report.partitions:
            table.add_row(
                report.group,
                row.topic,
                str(row.partition),
                str(row.current_offset),
                str(row.log_end_offset),
                str(row.lag),
                seconds(row.lag_seconds),
                report.status.value,
            )
    return table


def _emit_json(reports: Sequence[GroupLag]) -> None:
    from jobs.ops.lag import as_json

    typer.echo(json.dumps(as_json(reports, time.time())))


def _print_table(table: Table) -> None:
    # At its natural width, never wrapped: one partition per line, like
    # kafka-consumer-groups, also when piped (rich would assume 80 columns).
    unbounded = _out.options.update_width(_UNBOUNDED_WIDTH)
    natural = Measurement.get(_out, unbounded, table).maximum
    Console(highlight=False, width=max(_out.width, natural)).print(table)


def _refreshes(
    monitor: LagMonitor, groups: Sequence[str], interval: float, count: int
) -> Iterator[list[GroupLag]]:
    done = 0
    while True:
        yield monitor.refresh(groups)
        done += 1
        if count and done >= count:
            return
        time.sleep(interval)


def _watch(
    monitor: LagMonitor, groups: Sequence[str], interval: float, count: int, json_: bool
) -> None:
    if json_:  # one JSON document per line and refresh
        for reports in _refreshes(monitor, groups, interval, count):
            _emit_json(reports)
        return
    with Live(console=_out, auto_refresh=False) as live:
        for reports in _refreshes(monitor, groups, interval, count):
            live.update(render(reports), refresh=True)


def lag(
    group: Annotated[
        list[str] | None,
        typer.Option("--group", "-g", help="A consumer group to show (repeatable); default: all."),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="Refresh every --interval seconds.")
    ] = False,
    interval: Annotated[
        float, typer.Option(min=0.1, help="Seconds between refreshes with --watch.")
    ] = DEFAULT_INTERVAL_S,
    json_: Annotated[
        bool, typer.Option("--json", help="Print JSON (one line per refresh) instead of a table.")
    ] = False,
    count: Annotated[
        int, typer.Option(min=0, help="With --watch: stop after this many refreshes (0: never).")
    ] = 0,
    window: Annotated[
        float, typer.Option(min=0.0, help="Seconds of samples the status rules look at.")
    ] = _DEFAULTS.window_s,
    stop_after: Annotated[
        float,
        typer.Option(min=0.0, help="A group whose lagging commits stand still this long is STOP."),
    ] = _DEFAULTS.stop_after_s,
    stall_after: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="A group whose offsets stand still this long while its lag grows is STALL "
            "(default per group: sink 10 s, Faust worker 20 s, Flink two checkpoint "
            "intervals, others 60 s; settings *.stall_after_s).",
        ),
    ] = None,
) -> None:
    """Show consumer lag per group, topic and partition, with a status per group.

    STATUS (rules in pipelines/lag.py): OK keeping up; WARN lag grows while
    offsets move; STALL offsets stand still for --stall-after seconds while lag
    grows, or a member's offsets stand still with lag; STOP commits
    have stopped (no movement for --stop-after seconds, or no members and no
    movement). Trends need --watch; a single call judges from one sample.
    Exit codes: 0 shown; 2 unknown group; 3 Kafka unreachable.
    """
    # Here, not at the top, so that `memstream lag --help` starts fast: the
    # monitor pulls in confluent-kafka, the settings the review and recall stages.
    from connectors.kafka_offsets import OffsetReader, OffsetsUnavailable, UnknownGroup
    from jobs.ops.lag import LagMonitor, rules_from_settings
    from memstream.settings import get_settings

    settings = get_settings()
    rules = rules_from_settings(
        settings, window_s=window, stop_after_s=stop_after, stall_after_s=stall_after
    )
    monitor = LagMonitor(OffsetReader(settings.kafka.bootstrap), rules)
    groups = group or []
    try:
        if watch:
            _watch(monitor, groups, interval, count, json_)
        elif json_:
            _emit_json(monitor.refresh(groups))
        else:
            _print_table(render(monitor.refresh(groups)))
    except UnknownGroup as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except OffsetsUnavailable as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    except KeyboardInterrupt:  # Ctrl-C ends --watch; the last table stays on screen
        return
