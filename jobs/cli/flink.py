"""``memstream flink``: the PyFlink ingest job on a local mini-cluster, or submitted to a cluster.

The job (jobs/ingest/flink_job.py) consumes the input topics, runs the stages with
the per-user state in Flink keyed state and writes ``memory.ops``,
``memory.pending`` and ``memory.dlq`` transactionally. It runs in the
foreground until Ctrl-C/SIGTERM, or with ``--until-end`` until it has processed
what the input topics held when it started. ``--resume`` continues from the
newest checkpoint; without it the job starts empty and replays the topics.

``--cluster HOST:PORT`` submits the same job to a Flink session cluster's REST
API instead (``memstream infra up --flink`` starts one at 127.0.0.1:18481):
``jobs/ingest/submit.py`` runs the distribution's ``flink run -m HOST:PORT
-py jobs/ingest/flink_job.py`` with these options, and the job file calls this
command again, without ``--cluster``, inside ``flink run``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated

import typer
from rich.console import Console

from jobs.cli.publish import EXIT_BROKER
from schemas.topics import INPUT_TOPICS, OUTPUT_TOPICS

# A cluster that does not answer, a bad address, or more subtasks than the
# input topics have partitions or the cluster has slots: the user's to fix.
EXIT_USAGE = 2

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int) -> typer.Exit:
    _err.print(f"error: {message}", markup=False)
    return typer.Exit(code)


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
        typer.Option(
            min=1,
            help="Subtasks per operator, at most the partitions of each input topic "
            "[default: settings flink.parallelism, 1; with --cluster every slot of the "
            "cluster, up to the partitions].",
        ),
    ] = None,
    restart_attempts: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Restarts from the last checkpoint before a failing job fails for good "
            "[default: settings flink.restart_attempts, 3; with --cluster "
            "flink.cluster_restart_attempts, 24].",
        ),
    ] = None,
    restart_delay: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="Seconds between those restarts [default: settings flink.restart_delay_s, 5; "
            "with --cluster flink.cluster_restart_delay_s, 5].",
        ),
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
    cluster: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Submit the job to the Flink session cluster whose REST API is at HOST:PORT "
            "(`memstream infra up --flink`: 127.0.0.1:18481) with `flink run -m HOST:PORT -py "
            "jobs/ingest/flink_job.py`, instead of running a local mini-cluster. The cluster's "
            "TaskManagers must run this Python environment (the project importable there) and "
            "see the state dir (checkpoints; --resume).",
        ),
    ] = None,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="With --cluster: return once the job is submitted (its JobID is printed); "
            "stop it with `flink cancel` or the web UI. Without it, this command waits for "
            "the job (Ctrl-C leaves the job running on the cluster).",
        ),
    ] = False,
) -> None:
    """Run the PyFlink ingest job until Ctrl-C/SIGTERM (or the end of the input with --until-end).

    Locally the job runs in a mini-cluster inside this process; with --cluster
    it is submitted to a session cluster and its subtasks spread over the
    TaskManagers' slots.

    Exit codes: 0 finished (--until-end), stopped or submitted (--detach); 2 the
    cluster does not answer, or --parallelism exceeds the input topics'
    partitions or the cluster's slots; 3 Kafka, its topics, Java or the
    connector jar are not there; else `flink run`'s own code.
    """
    # Imported here: PyFlink, the settings-bound job and infra load in seconds,
    # which `memstream --help` should not wait for.
    from confluent_kafka import KafkaException

    from connectors import kafka_admin
    from infra import ToolchainError, flink_overview
    from jobs.ingest.flink_job import FlinkOptions, run
    from jobs.ingest.submit import parse_address, submit
    from memstream.settings import get_settings

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # On the jobs logger, not the root: PyFlink's loopback server sets the
    # root level to WARNING when the environment is created.
    logging.getLogger("jobs").setLevel(logging.INFO)
    settings = get_settings()
    slots: int | None = None
    if cluster is not None:
        try:
            cluster = parse_address(cluster)
        except ValueError as exc:
            raise _fail(str(exc), EXIT_USAGE) from None
        seen = flink_overview(cluster)
        if seen is None:
            raise _fail(
                f"no Flink cluster answers at http://{cluster}/overview "
                "(`memstream infra up --flink` starts one; `memstream infra status` shows it)",
                EXIT_USAGE,
            )
        slots = int(seen["slots-total"])
    elif detach:
        raise _fail("--detach needs --cluster (a local run is the process itself)", EXIT_USAGE)
    try:
        if cluster is not None:
            # Until a lost TaskManager is replaced, a restart fails at once.
            if restart_attempts is None:
                restart_attempts = settings.flink.cluster_restart_attempts
            if restart_delay is None:
                restart_delay = settings.flink.cluster_restart_delay_s
        given = {
            "group_id": group_id,
            "checkpoint_interval_s": checkpoint_interval,
            "parallelism": parallelism,
            "restart_attempts": restart_attempts,
            "restart_delay_s": restart_delay,
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
    partitions = min(present[options.topic(t)] for t in INPUT_TOPICS)
    if cluster is not None and parallelism is None:
        # Every slot, so that each TaskManager runs a subtask, but no idle reader.
        options = dataclasses.replace(options, parallelism=min(slots or 1, partitions))
    if options.parallelism > partitions:
        # A source subtask beyond a topic's partitions reads nothing of it, and
        # the keyed stage behind it gets no more keys than the partitions spread.
        raise _fail(
            f"--parallelism {options.parallelism} is above the {partitions} partitions of the "
            f"input topics on {options.bootstrap}: at most {partitions}",
            EXIT_USAGE,
        )
    if slots is not None and options.parallelism > slots:
        # Flink would wait for slots that never come (5 min), then fail the job.
        raise _fail(
            f"--parallelism {options.parallelism} is above the {slots} task slot(s) of the "
            f"cluster at {cluster}: at most {slots}, or start more TaskManagers",
            EXIT_USAGE,
        )
    if cluster is None:
        run(settings, options)
        return
    raise typer.Exit(submit(settings, options, cluster, detach=detach))


if __name__ == "__main__":
    typer.run(flink)
