"""The ``memstream`` command: one entry point, one sub-command per job."""

from __future__ import annotations

import typer

from jobs.cli import flink as cli_flink
from jobs.cli import infra as cli_infra
from jobs.cli import lag as cli_lag
from jobs.cli import publish as cli_publish
from jobs.cli import replay as cli_replay
from jobs.cli import run as cli_run
from jobs.cli import schemas as cli_schemas
from jobs.cli import serve as cli_serve
from jobs.cli import sink as cli_sink
from jobs.cli import trace as cli_trace
from jobs.cli import train as cli_train
from jobs.cli import worker as cli_worker

app = typer.Typer(
    name="memstream",
    help=(
        "memstream turns Kafka streams of dialogue turns, user actions and CRM webhooks "
        "into long-term memory for AI agents.\n\n"
        "Start here: `memstream infra up` starts the local services (Kafka, Redis, Neo4j; "
        "Chroma is embedded), `memstream run --sample` runs the main job on the bundled "
        "sample stream. Configuration comes from MEMSTREAM_* environment variables or a "
        ".env file (see README, 'Configuration')."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_show_locals=False,
)
app.add_typer(cli_infra.app, name="infra")
app.add_typer(cli_schemas.app, name="schemas")
app.add_typer(cli_train.app, name="train")
app.command("publish")(cli_publish.publish)
app.command("run")(cli_run.run)
app.command("lag")(cli_lag.lag)
app.command("worker")(cli_worker.worker)
app.command("sink")(cli_sink.sink)
app.command("flink")(cli_flink.flink)
app.command("serve")(cli_serve.serve)
app.command("mcp")(cli_serve.mcp)
app.command("trace")(cli_trace.trace)
app.command("replay")(cli_replay.replay)
app.add_typer(cli_replay.audit_app, name="audit")


def main() -> None:
    app()
