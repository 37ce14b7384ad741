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
        "(embedded by default).\n\n"
        "State (data, logs, pid files) lives under MEMSTREAM_STATE_DIR "
        "(default .memstream in the repository); "
        "jars and the Neo4j launcher are cached under MEMSTREAM_CACHE_DIR "
        "(default ~/.cache/memstream). Ports: MEMSTREAM_KAFKA__PORT (19092), "
        "MEMSTREAM_REDIS__PORT (16379), MEMSTREAM_NEO4J__BOLT_PORT (17687)."
    ),
    no_args_is_help=True,
)

ServiceNames = Annotated[
    list[str] | None,
    typer.Argument(
        help=f"Services to act on (default: all): {', '.join(infra.SERVICE_NAMES)}.",
        show_default=False,
    ),
]


def _check_names(names: list[str] | None) -> list[str] | None:
    unknown = sorted(set(names or ()) - set(infra.SERVICE_NAMES))
    if unknown:
        _err.print(f"[red]unknown service(s): {', '.join(unknown)}[/red]")
        raise typer.Exit(2)
    return names


@app.command()
def up(services: ServiceNames = None) -> None:
    """Start the services (all by default) and wait until each is healthy.

    Idempotent: a healthy service is reused. The first run downloads the Kafka
    jars and builds the Neo4j launcher with Maven (cached afterwards).
    """
    names = _check_names(services)

    def report(r: infra.StartReport) -> None:
        what = {"embedded": "embedded", "external": "external, reachable"}.get(
            r.mode, "started" if r.started else "already running"
        )
        _out.print(f"  [green]✓[/green] {r.name:<7} {what:<18} {r.seconds:6.1f} s")

    _out.print(f"starting {', '.join(names or infra.SERVICE_NAMES)} …")
    try:
        with _out.status("waiting for the services to become healthy"):
            infra.up(get_settings(), names, on_ready=report)
    except (infra.ServiceStartError, infra.ToolchainError) as exc:
        _err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(EXIT_FAILED) from exc


@app.command()
def down(services: ServiceNames = None) -> None:
    """Stop the services (all by default): SIGTERM, then SIGKILL after a grace period."""
    stopped = infra.down(get_settings(), _check_names(services))
    _out.print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@app.command()
def status() -> None:
    """Show each service: up/down, pid, port, memory, log and data directory.

    Exit code 0 when every service is up, 3 when any is down.
    """
    rows = infra.status(get_settings())
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
    if not all(s.up for s in rows):
        raise typer.Exit(EXIT_DOWN)
