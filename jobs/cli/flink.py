"""``memstream flink``: run the PyFlink ingest job on a local mini-cluster.

The job (jobs/ingest/flink_job.py) consumes the input topics, runs the stages with
the per-user state in Flink keyed state and writes ``memory.ops``,
``memory.pending`` and ``memory.dlq`` transactionally. It runs in the
foreground until Ctrl-C/SIGTERM, or with ``--until-end`` until it has processed
what the input topics held when it started. ``--resume`` continues from the
newest checkpoint; without it the job starts empty and replays the topics.
The same options work for ``flink run -py jobs/ingest/flink_job.py`` on a cluster.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.console import Console

from jobs.cli.publish import EXIT_BROKER
from schemas.topics import INPUT_TOPICS, OUTPUT_TOPICS

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def flink(
    namespace: Annotated[
        str,
        typer.Option(help="Prefix of every topic, of the group and of the checkpoint dir."),
    ] = "",
    group_id: Annotated[
        str | None,
        typer.Option(
            help="Job name: consumer group and transactional-id prefix "
            "[default: settings flink.group_id, memstream-ingest-flink]."
        ),
    ] = None,
    checkpoint_interval: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="Seconds between checkpoints; outputs become visible at each one "
            "[default: settings flink.checkpoint_interval_s, 30].",
        ),
    ] = None,
    parallelism: Annotated[
        int | None,
        typer.Option(min=1, help="Subtasks per operator [default: settings flink.parallelism, 1]."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Restore state and offsets from the newest checkpoint.")
    ] = False,
    until_end: Annotated[
        bool,
        typer.Option(
            "--until-end", help="Stop after the end offsets the input topics had at start."
        ),
    ] = False,
) -> None:
    """Run the PyFlink ingest job until Ctrl-C/SIGTERM (or the end of the input with --until-end).

    Exit codes: 0 finished (--until-end) or stopped; 3 Kafka, its topics, Java or
    the connector jar are not there.
    """
    # Imported here: PyFlink, the settings-bound job and infra load in seconds,
    # which `memstream --help` should not wait for.
    from confluent_kafka import KafkaException

    from connectors import kafka_admin
    from infra import ToolchainError
    from jobs.ingest.flink_job import FlinkOptions, run
    from memstream.settings import get_settings

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # On the jobs logger, not the root: PyFlink's loopback server sets the
    # root level to WARNING when the environment is created.
    logging.getLogger("jobs").setLevel(logging.INFO)
    settings = get_settings()
    try:
        given = {
            "group_id": group_id,
            "checkpoint_interval_s": checkpoint_interval,
            "parallelism": parallelism,
        }
        options = FlinkOptions.from_settings(
            settings,
            namespace=namespace,
            resume=resume,
            until_end=until_end,
            **{k: v for k, v in given.items() if v is not None},
        )
        wanted = [options.topic(t) for t in (*INPUT_TOPICS, *OUTPUT_TOPICS)]
        present = kafka_admin.partition_counts(options.bootstrap, wanted)
    except (ToolchainError, KafkaException) as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    missing = [t for t in wanted if t not in present]
    if missing:
        _err.print(
            f"error: missing topics on {options.bootstrap}: {', '.join(missing)} "
            "(`memstream infra up` creates the default ones)",
            markup=False,
        )
        raise typer.Exit(EXIT_BROKER)
    run(settings, options)


if __name__ == "__main__":
    typer.run(flink)
