"""``memstream sink``: apply ``memory.ops`` to Redis, Chroma and Neo4j until Ctrl-C or SIGTERM.

The job (jobs/sink/job.py) commits its offsets only after a batch is written
or spooled, so a stop at any point, SIGKILL included, loses nothing: a restart
resumes from the last commit and re-applies at most one batch (harmlessly —
every write is idempotent). On Ctrl-C/SIGTERM the batch in hand completes, its
offsets are committed and the process exits 0. Prometheus metrics
(jobs/sink/metrics.py) are served on ``settings.metrics.sink_port`` (0: off).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console

from connectors.protocols import DEFAULT_CHUNK_SIZE
from jobs.cli.publish import EXIT_BROKER

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def sink(
    namespace: Annotated[
        str,
        typer.Option(help="Prefix of the topics and of the consumer group (tests, shadow runs)."),
    ] = "",
    store_namespace: Annotated[
        str | None,
        typer.Option(help="Namespace of the Redis keys, Chroma collections and Neo4j nodes."),
    ] = None,
    group_id: Annotated[
        str | None, typer.Option(help="Consumer group id [default: settings sink.group_id].")
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            # One batch is then at most one writer chunk, so a write's latency
            # is comparable with the budget (connectors/protocols.py).
            max=DEFAULT_CHUNK_SIZE,
            help="Most operations applied (and committed) at once "
            "[default: settings sink.batch_size].",
        ),
    ] = None,
    latency_budget_ms: Annotated[
        float | None,
        typer.Option(
            min=1.0,
            help="A store writing slower than this falls back to the spool "
            "[default: settings sink.latency_budget_ms, 200].",
        ),
    ] = None,
    loglevel: Annotated[str, typer.Option(help="Log level: debug, info, warning.")] = "info",
) -> None:
    """Run the sink job until Ctrl-C/SIGTERM.

    Exit codes: 0 stopped on request; 3 Kafka or a store could not be reached at start.
    """
    # Imported here: chromadb and the Neo4j driver load in seconds, which
    # `memstream --help` should not wait for.
    from jobs.metrics_endpoint import serve_metrics
    from jobs.sink.job import SinkConfig, SinkJob, open_lanes
    from memstream.settings import get_settings
    from pipelines.backpressure import BackpressureConfig

    logging.basicConfig(
        level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    # The Neo4j driver logs every "constraint already exists" notice at INFO.
    logging.getLogger("neo4j.notifications").setLevel(logging.WARNING)
    settings = get_settings()
    given: dict[str, Any] = {"group_id": group_id, "batch_size": batch_size}
    if latency_budget_ms is not None:
        given["backpressure"] = BackpressureConfig(latency_budget_s=latency_budget_ms / 1000)
    config = SinkConfig.from_settings(
        settings,
        topic_namespace=namespace,
        store_namespace=store_namespace,
        **{k: v for k, v in given.items() if v is not None},
    )
    try:
        lanes = open_lanes(config)
    except Exception as exc:  # a store down at start: say which, exit with the service code
        _err.print(f"error: cannot open the stores: {exc!r}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    stop = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        _err.print(f"{signal.Signals(signum).name}: finishing the batch in hand, then stopping")
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    job = SinkJob(config, lanes)
    serve_metrics(settings.metrics.host, settings.metrics.sink_port, "sink")
    _err.print(f"sink: consuming {config.topics.memory_ops} as group {config.group}")
    job.run(stop)
    _err.print(f"sink: stopped after {job.applied} operation(s)")


if __name__ == "__main__":
    typer.run(sink)
