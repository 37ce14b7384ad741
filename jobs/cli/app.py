"""The ``memstream`` command: one entry point, one sub-command per job.

Commands are registered by name and imported only when they run or show their
own help: the command modules pull in Kafka, Faust, PyFlink, FastAPI, spaCy
and torch, and ``memstream --help`` should not wait for them. The root help
lists each command with the summary kept here; ``tests/unit/jobs/test_cli_app.py``
checks every summary against the first paragraph of the command's own help
and that importing this module loads none of the heavy libraries.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # Typer 0.29 builds its commands on its own copy of click; only the
    # annotations name it, the code uses typer's public classes.
    from typer import _click as click


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives and how the root help summarises it."""

    module: str
    attribute: str  # a command function, or a typer.Typer for a command group
    summary: str  # the first paragraph of the command's help, on one line


# In the order `memstream --help` lists them (typer lists commands before groups).
COMMANDS: dict[str, LazyCommand] = {
    "publish": LazyCommand(
        "jobs.cli.publish",
        "publish",
        "Validate JSON lines and publish them to an input topic, keyed by tenant:user.",
    ),
    "run": LazyCommand(
        "jobs.cli.run",
        "run",
        "Run the whole pipeline on the sample stream and print each user's memory.",
    ),
    "lag": LazyCommand(
        "jobs.cli.lag",
        "lag",
        "Show consumer lag per group, topic and partition, with a status per group.",
    ),
    "worker": LazyCommand(
        "jobs.cli.worker", "worker", "Run the ingest worker until Ctrl-C/SIGTERM."
    ),
    "sink": LazyCommand("jobs.cli.sink", "sink", "Run the sink job until Ctrl-C/SIGTERM."),
    "flink": LazyCommand(
        "jobs.cli.flink",
        "flink",
        "Run the PyFlink ingest job until Ctrl-C/SIGTERM (or the end of the input with "
        "--until-end).",
    ),
    "serve": LazyCommand(
        "jobs.cli.serve",
        "serve",
        "Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) until Ctrl-C.",
    ),
    "mcp": LazyCommand(
        "jobs.cli.serve",
        "mcp",
        "Serve the MCP tools read, search, store, history and confirm for one tenant.",
    ),
    "hints": LazyCommand(
        "jobs.cli.hints",
        "hints",
        "Follow the hints pushed to agents on memory.hints, for one tenant (or user), until "
        "Ctrl-C.",
    ),
    "trace": LazyCommand(
        "jobs.cli.trace",
        "trace",
        "Trace a fact or a remembered turn: source event from Kafka, decisions, versions.",
    ),
    "replay": LazyCommand(
        "jobs.cli.replay",
        "replay",
        "Re-run the ingest pipeline over an offset or time range into a shadow namespace.",
    ),
    "archive": LazyCommand(
        "jobs.cli.archive",
        "archive",
        "Move episodic items not retrieved for a number of days to each tenant's archive.",
    ),
    "infra": LazyCommand(
        "jobs.cli.infra",
        "app",
        "Local services without Docker: a single-node Kafka (KRaft) broker from Maven jars, "
        "Debian's redis-server, Neo4j Community embedded in a small Java launcher, and "
        "Chroma (embedded by default); with --flink also a Flink session cluster (one "
        "JobManager, two TaskManagers) from the distribution inside the apache-flink package.",
    ),
    "schemas": LazyCommand(
        "jobs.cli.schemas",
        "app",
        "JSON Schemas of every topic, for producers in any language.",
    ),
    "train": LazyCommand(
        "jobs.cli.train", "app", "Train the project's own models (fact tagger, NER tagger, TransE)."
    ),
    "audit": LazyCommand(
        "jobs.cli.replay",
        "audit_app",
        "Audit memory against the log: compare a replayed shadow namespace with live memory.",
    ),
}

_MARKUP_MODE: Final[Literal["markdown"]] = "markdown"


def load_command(name: str) -> click.Command:
    """Import command ``name`` and build it as if it had been registered on the root app."""
    entry = COMMANDS[name]
    target: Any = getattr(importlib.import_module(entry.module), entry.attribute)
    holder = typer.Typer(rich_markup_mode=_MARKUP_MODE)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    return typer.main.get_group(holder).commands[name]


class _Summary(TyperCommand):
    """Stands in for a command in the root help's list: a name and a summary."""

    def __init__(self, name: str, summary: str) -> None:
        super().__init__(name, help=summary)


class LazyGroup(TyperGroup):
    """The root group: loads a command the first time it is resolved."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, entry in COMMANDS.items():
            self.commands.setdefault(name, _Summary(name, entry.summary))
        self._listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if isinstance(command, _Summary) and not self._listing:
            command = self.commands[cmd_name] = load_command(cmd_name)
        return command

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing the commands needs only their names and summaries.
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="memstream",
    cls=LazyGroup,
    help=(
        "memstream turns Kafka streams of dialogue turns, user actions and CRM webhooks "
        "into long-term memory for AI agents.\n\n"
        "Start here: `memstream infra up` starts the local services (Kafka, Redis, Neo4j; "
        "Chroma is embedded), `memstream run --sample` runs the main job on the bundled "
        "sample stream. Configuration comes from MEMSTREAM_* environment variables or a "
        ".env file (see README, 'Configuration')."
    ),
    no_args_is_help=True,
    rich_markup_mode=_MARKUP_MODE,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    # No options of its own; makes typer build a group whose commands LazyGroup supplies.
    pass


def main() -> None:
    app()


if __name__ == "__main__":  # python -m jobs.cli.app, as the console script does
    main()
