"""``memstream replay`` and ``memstream audit diff``: rebuild memory from the log, compare it.

``replay`` re-runs the ingest pipeline over a range of the input topics into a
shadow store namespace (jobs/ops/replay.py says how, jobs/ops/replay_plan.py what a
range is); ``audit diff`` lists how a shadow namespace differs from live memory
(jobs/ops/audit_diff.py). Both refuse bad arguments with exit code 2 before they
write anything.

The heavy modules (the NLP stages, chromadb, the Neo4j driver) are imported
inside the commands, so ``memstream --help`` and a refused argument stay fast.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from confluent_kafka import KafkaException
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from connectors.kafka_range import RangeReader
from jobs.ops.replay_plan import ReplayError, ReplayPlan, ReplayRequest, plan_ranges
from memstream.settings import get_settings
from schemas.topics import INPUT_TOPICS

if TYPE_CHECKING:
    from jobs.ops.replay import ReplaySummary

EXIT_DIFFERENT = 1
EXIT_USAGE = 2
EXIT_SERVICE = 3

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False, soft_wrap=True)

audit_app = typer.Typer(
    help="Audit memory against the log: compare a replayed shadow namespace with live memory.",
    no_args_is_help=True,
)


def _fail(code: int, message: str) -> typer.Exit:
    _err.print(f"error: {message}", markup=False)
    return typer.Exit(code)


def _time(option: str, value: str | None) -> datetime | None:
    """An ISO 8601 time; without an offset it is UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _fail(
            EXIT_USAGE, f"{option} {value!r} is not an ISO 8601 time (e.g. 2026-03-02T09:05:00Z)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _summary_table(plan: ReplayPlan, summary: ReplaySummary) -> Table:
    table = Table(title=f"replay into shadow namespace {plan.request.namespace!r}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("events read", str(summary.events))
    table.add_row("users", str(len(summary.users)))
    table.add_row("operations applied", str(summary.ops))
    for store, count in summary.per_store.items():
        table.add_row(f"  written to {store}", str(count))
    reasons = Counter(letter.reason.value for letter in summary.dead_letters)
    table.add_row("dead letters (not published)", str(len(summary.dead_letters)))
    for reason, count in sorted(reasons.items()):
        table.add_row(f"  {reason}", str(count))
    if summary.skipped:
        table.add_row("duplicates skipped", str(summary.skipped))
    return table


def replay(
    namespace: Annotated[
        str,
        typer.Option(
            help="Shadow store namespace to write (its own Chroma collections, Neo4j `ns`, "
            "Redis key prefix). Must be new: not empty, not live memory ('')."
        ),
    ],
    topic: Annotated[
        list[str] | None,
        typer.Option(
            help="Input topic to replay (repeatable). Default: all three, "
            f"{', '.join(INPUT_TOPICS)}, merged in record-timestamp order."
        ),
    ] = None,
    partition: Annotated[
        int | None, typer.Option(help="Only this partition of each topic. Default: all.")
    ] = None,
    from_offset: Annotated[
        int | None,
        typer.Option(help="First offset replayed, on every selected partition."),
    ] = None,
    from_time: Annotated[
        str | None,
        typer.Option(
            help="Replay records stamped at or after this ISO 8601 time (UTC if no offset)."
        ),
    ] = None,
    to_offset: Annotated[
        int | None,
        typer.Option(
            help="Stop BEFORE this offset (exclusive, like the log end). Default: log end."
        ),
    ] = None,
    to_time: Annotated[
        str | None,
        typer.Option(help="Replay records stamped at or before this ISO 8601 time (inclusive)."),
    ] = None,
    topic_namespace: Annotated[
        str, typer.Option(help="Prefix of the topic names (private topics of tests and demos).")
    ] = "",
) -> None:
    """Re-run the ingest pipeline over an offset or time range into a shadow namespace.

    Give `--from-offset N` or `--from-time T`, optionally `--to-offset M` or
    `--to-time T`. Offsets apply to every selected partition and must lie in
    what it holds now ([log start, log end]); a time before the retention start
    of a partition that lost records is refused. Records of several topics are
    merged in record-timestamp order, each partition kept in offset order, so
    each user's events are replayed in the order they were appended.

    The replay starts from EMPTY state (not a copy of the live job's): a replay
    of the whole retained log rebuilds the live state; a partial one shows what
    that range alone decides. It writes only the shadow namespace — no Kafka
    output, no committed offsets, nothing live. Compare with
    `memstream audit diff NAME`.

    Exit codes: 0 replayed; 2 bad argument (nothing written); 3 Kafka or a store failed.
    """
    request = ReplayRequest(
        namespace=namespace,
        topics=tuple(topic) if topic else INPUT_TOPICS,
        partition=partition,
        from_offset=from_offset,
        from_time=_time("--from-time", from_time),
        to_offset=to_offset,
        to_time=_time("--to-time", to_time),
        topic_namespace=topic_namespace,
    )
    settings = get_settings()
    reader = RangeReader(settings.kafka.bootstrap)
    try:
        plan = plan_ranges(reader, request)  # checks the request before asking the broker
    except ReplayError as exc:
        raise _fail(EXIT_USAGE, str(exc)) from None
    except (KafkaException, RuntimeError, TimeoutError) as exc:  # no typer.Exit raised in there
        raise _fail(EXIT_SERVICE, f"Kafka at {settings.kafka.bootstrap}: {exc}") from None
    _run(plan, reader)


def _run(plan: ReplayPlan, reader: RangeReader) -> None:
    # Imported here: the stages load spaCy, Flair and torch; the stores chromadb and neo4j.
    import redis
    from neo4j.exceptions import ServiceUnavailable

    from connectors.protocols import BackpressureError
    from jobs.ingest.stages import load_pipeline
    from jobs.ops.replay import merge_by_time, open_writers, run_replay
    from jobs.stores import open_stores

    settings = get_settings()
    namespace = plan.request.namespace
    try:
        with open_stores(settings, namespace) as stores:
            held = stores.users()
    except (redis.ConnectionError, ServiceUnavailable) as exc:
        raise _fail(EXIT_SERVICE, f"a store is unavailable: {exc}") from None
    if held:
        raise _fail(
            EXIT_USAGE,
            f"namespace {namespace!r} already holds memory of {len(held)} user(s); "
            "a replay writes into a new namespace: choose another --namespace",
        )
    ranges = [(r.topic, r.partition, r.start, r.end) for r in plan.ranges]
    try:
        with _err.status(f"reading {plan.total} offset(s) from {len(ranges)} partition(s)"):
            records = merge_by_time(reader.read(ranges), plan.request.topic_namespace)
    except (RuntimeError, TimeoutError) as exc:  # what RangeReader.read raises
        raise _fail(EXIT_SERVICE, f"Kafka at {reader.bootstrap}: {exc}") from None
    # Importing flair sets its logger to INFO on stdout, and loading the tagger
    # then logs its whole vocabulary there; stdout is the replay's summary.
    import flair  # noqa: F401  # configures that logger, so it must come first

    logging.getLogger("flair").setLevel(logging.WARNING)
    with _err.status("loading the ingest stages"):
        pipeline = load_pipeline(settings)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    try:
        with open_writers(settings, namespace) as writers, Progress(*columns, console=_err) as bar:
            task = bar.add_task(f"replay → {namespace}", total=len(records))
            summary = run_replay(
                pipeline,
                records,
                list(writers),
                batch_size=settings.ingest.batch_size,
                on_batch=lambda n: bar.advance(task, n),
            )
    except BackpressureError as exc:
        raise _fail(
            EXIT_SERVICE,
            f"{exc}; the shadow namespace {namespace!r} is incomplete: replay into a new one",
        ) from None
    _out.print(_summary_table(plan, summary))


@audit_app.command("diff")
def diff(
    name: Annotated[str, typer.Argument(help="The shadow namespace (as given to `replay`).")],
    against: Annotated[
        str, typer.Option(help="The namespace to compare with. Default: live memory ('').")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List how a shadow namespace differs from live memory, for the users it holds.

    Per user: fact versions present on one side only (episodic: Chroma,
    semantic: Neo4j), versions whose fields differ (value, polarity, validity,
    expiry, state, lineage ... one row per field), pending items, their
    resolutions, statuses and working-memory turns. When Chroma last served an
    item, and whether it sits in the archive, are not compared.

    Exit codes: 0 no difference; 1 differences; 2 bad argument or an empty
    shadow namespace; 3 a store failed.
    """
    if not name:
        raise _fail(EXIT_USAGE, "NAME must be a shadow namespace; '' is live memory")
    if name == against:
        raise _fail(EXIT_USAGE, f"comparing {name!r} with itself; give another --against")
    # Imported here: chromadb and the Neo4j driver take seconds to import.
    from jobs.ops.audit_diff import audit, summary, table
    from jobs.stores import open_stores

    settings = get_settings()
    try:
        with (
            open_stores(settings, name) as shadow,
            open_stores(settings, against or None) as live,
        ):
            result = audit(shadow, live, name, against)
    except ValueError as exc:  # a namespace the stores cannot hold
        raise _fail(EXIT_USAGE, str(exc)) from None
    if not result.users:
        raise _fail(
            EXIT_USAGE,
            f"namespace {name!r} holds no memory: nothing to compare "
            f"(create it with `memstream replay --namespace {name} ...`)",
        )
    if as_json:
        typer.echo(result.to_json())
    else:
        if result.differences:
            _out.print(table(result))
        _out.print(summary(result))
    if not result.equal:
        raise typer.Exit(EXIT_DIFFERENT)
