"""``memstream worker``: run the ingest worker in the foreground until Ctrl-C or SIGTERM.

The worker consumes the input topics, runs the stages and produces
``memory.ops``, ``memory.pending`` and ``memory.dlq`` (jobs/ingest/faust_worker.py).
Stop it with Ctrl-C or SIGTERM: the batch in hand completes, offsets are
committed and the process exits 0. A SIGKILL loses nothing either: a restart
resumes from the last committed offsets.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from jobs.cli.publish import EXIT_BROKER, EXIT_USAGE
from jobs.cli.run import Engine

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def worker(
    engine: Annotated[
        Engine, typer.Option(help="Stream engine; `faust` runs here in the foreground.")
    ] = Engine.FAUST,
    namespace: Annotated[
        str,
        typer.Option(help="Prefix of every topic and of the consumer group (tests, shadow runs)."),
    ] = "",
    group_id: Annotated[
        str | None,
        typer.Option(
            help="Consumer group id (also the prefix of the state changelog) "
            "[default: settings ingest.group_id, memstream-ingest]."
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Most records handed to the stages at once [default: settings "
            "ingest.batch_size, 64].",
        ),
    ] = None,
    batch_within: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Seconds a partial batch waits for more records [default: settings "
            "ingest.batch_within_s, 0.02].",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            help="Port of the Prometheus /metrics endpoint; give each worker on one machine "
            "its own, 0 for none [default: settings metrics.ingest_port, 18091].",
        ),
    ] = None,
    loglevel: Annotated[str, typer.Option(help="Log level: debug, info, warning.")] = "info",
) -> None:
    """Run the ingest worker until Ctrl-C/SIGTERM.

    Exit codes: 0 stopped on request; 2 usage error; 3 Kafka or its topics are
    not there; 70 a batch's outputs could not be published (restart it).
    """
    if engine is not Engine.FAUST:
        _err.print(
            f"error: `memstream worker` runs the faust engine; the {engine.value} "
            "ingest job has its own command.",
            markup=False,
        )
        raise typer.Exit(EXIT_USAGE)
    # Imported here: Faust and the settings-bound job load in ~1 s, which
    # `memstream --help` should not wait for.
    from jobs.ingest.faust_worker import run_worker
    from jobs.ingest.worker_config import WorkerConfig, input_partitions
    from memstream.settings import get_settings

    settings = get_settings()
    given = {"group_id": group_id, "batch_size": batch_size, "batch_within_s": batch_within}
    config = WorkerConfig.from_settings(
        settings, namespace=namespace, **{k: v for k, v in given.items() if v is not None}
    )
    try:
        partitions = input_partitions(config)
    except Exception as exc:  # KafkaException or missing topics: say which
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    port = settings.metrics.ingest_port if metrics_port is None else metrics_port
    run_worker(config, settings, partitions=partitions, metrics_port=port, loglevel=loglevel)


if __name__ == "__main__":
    typer.run(worker)
