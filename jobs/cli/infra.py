"""``memstream infra up|down|status``: the local services, without Docker."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

import infra
from memstream.settings import get_settings

# Exit code of `status` when any service is down (1 and 2 are typer's errors and usage).
EXIT_DOWN = 3
EXIT_FAILED = 1

_out = Console(highlight=False)
_err = Console(stderr=True, highlight=False)

app = typer.Typer(
    help=(
        "Local services without Docker: a single-node Kafka (KRaft) broker from Maven jars, "
        "Debian's redis-server, Neo4j Community embedded in a small Java launcher, and Chroma "
        "(embedded by default); with --flink also a Flink session cluster (one JobManager, "
        "two TaskManagers) from the distribution inside the apache-flink package.\n\n"
        "State (data, logs, pid files) lives under MEMSTREAM_STATE_DIR "
        "(default .memstream in the repository); "
        "jars and the Neo4j launcher are cached under MEMSTREAM_CACHE_DIR "
        "(default ~/.cache/memstream). Ports: MEMSTREAM_KAFKA__PORT (19092), "
        "MEMSTREAM_REDIS__PORT (16379), MEMSTREAM_NEO4J__BOLT_PORT (17687), "
        "MEMSTREAM_FLINK__REST_PORT (18481, Flink's REST API and web UI) and "
        "MEMSTREAM_FLINK__RPC_PORT (16123)."
    ),
    no_args_is_help=True,
)

ServiceNames = Annotated[
    list[str] | None,
    typer.Argument(
        help=f"Services to act on (default: {', '.join(infra.SERVICE_NAMES)}; "
        f"'{infra.FLINK}' is the Flink session cluster): {', '.join(infra.KNOWN_NAMES)}.",
        show_default=False,
    ),
]


def _check_names(names: list[str] | None) -> list[str] | None:
    unknown = sorted(set(names or ()) - set(infra.KNOWN_NAMES))
    if unknown:
        _err.print(f"[red]unknown service(s): {', '.join(unknown)}[/red]")
        raise typer.Exit(2)
    return names


FlinkFlag = Annotated[
    bool,
    typer.Option(
        "--flink",
        help="Also the Flink session cluster: a JobManager (REST on MEMSTREAM_FLINK__REST_PORT) "
        "and MEMSTREAM_FLINK__TASKMANAGERS (2) TaskManagers, each a local process; healthy "
        "when /overview answers and every TaskManager has registered.",
    ),
]


@app.command()
def up(services: ServiceNames = None, flink: FlinkFlag = False) -> None:
    """Start the services (all but the Flink cluster by default) and wait until each is healthy.

    Idempotent: a healthy service is reused. The first run downloads the Kafka
    jars and builds the Neo4j launcher with Maven (cached afterwards). With
    --flink (or the name 'flink') the Flink session cluster starts too; submit
    the ingest job to it with `memstream flink --cluster HOST:PORT`.
    """
    names = _check_names(services)
    settings = get_settings()

    def report(r: infra.StartReport) -> None:
        what = {"embedded": "embedded", "external": "external, reachable"}.get(
            r.mode, "started" if r.started else "already running"
        )
        _out.print(f"  [green]✓[/green] {r.name:<19} {what:<18} {r.seconds:6.1f} s")

    wanted = [*(names or infra.SERVICE_NAMES), *([infra.FLINK] if flink else [])]
    _out.print(f"starting {', '.join(dict.fromkeys(wanted))} …")
    try:
        with _out.status("waiting for the services to become healthy"):
            infra.up(settings, names, on_ready=report, flink=flink)
    except (infra.ServiceStartError, infra.ToolchainError) as exc:
        _err.print(f"[red]error:[/red] {exc}", markup=False, highlight=False)
        raise typer.Exit(EXIT_FAILED) from exc
    if flink or infra.FLINK in (names or ()):
        _out.print(f"  Flink web UI and REST API: http://{settings.flink.rest_address}")


@app.command()
def down(services: ServiceNames = None) -> None:
    """Stop the services (all by default, the Flink cluster too): SIGTERM, then SIGKILL later."""
    stopped = infra.down(get_settings(), _check_names(services))
    _out.print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@app.command()
def status(
    flink: Annotated[
        bool, typer.Option("--flink", help="List the Flink cluster's processes even when down.")
    ] = False,
) -> None:
    """Show each service: up/down, pid, port, memory, log and data directory.

    The Flink cluster's processes are listed with --flink or while any runs,
    with the JobManager's count of registered TaskManagers and free slots.
    Exit code 0 when every listed service is up, 3 when any is down.
    """
    settings = get_settings()
    rows = infra.status(settings, flink=flink)
    table = Table(title="memstream services")
    for column in ("service", "state", "mode", "pid", "port", "RSS MB"):
        table.add_column(column, no_wrap=True)
    # Paths wrap rather than being cut: they are what one copies to read a log.
    table.add_column("log", overflow="fold")
    table.add_column("data", overflow="fold")
    for s in rows:
        table.add_row(
            s.name,
            "[green]up[/green]" if s.up else "[red]down[/red]",
            s.mode,
            str(s.pid or "-"),
            str(s.port or "-"),
            f"{s.rss_mb:.0f}" if s.rss_mb is not None else "-",
            str(s.log or "-"),
            str(s.data_dir),
        )
    _out.print(table)
    if any(s.name.startswith("flink-") for s in rows):
        seen = infra.flink_overview(settings.flink.rest_address)
        _out.print(
            f"flink cluster http://{settings.flink.rest_address}: "
            + (
                f"{seen['taskmanagers']} TaskManager(s), {seen['slots-available']} of "
                f"{seen['slots-total']} slot(s) free, {seen['jobs-running']} job(s) running"
                if seen is not None
                else "not answering"
            )
        )
    if not all(s.up for s in rows):
        raise typer.Exit(EXIT_DOWN)
