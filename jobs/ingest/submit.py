"""Submit the PyFlink ingest job to a session cluster with the distribution's ``flink run``.

``memstream flink --cluster HOST:PORT`` ends here. The command is the one the
README prints::

    <pyflink>/bin/flink run -m HOST:PORT -p N -pyexec <python> -pyclientexec <python>
        [-d] [-s <checkpoint>] -py jobs/ingest/flink_job.py --namespace ... --parallelism N ...

``flink run`` starts a client JVM, which runs the job file with this
interpreter (``-pyclientexec``); the job file calls ``memstream flink``
without ``--cluster``, whose ``run()`` builds the job and submits it through
that JVM to the cluster's REST API. The TaskManagers' Python workers run
``-pyexec``, this interpreter as well. The Kafka connector jar goes with the
job (``pipeline.jars``, uploaded to the cluster's blob server), as locally.

Resume: ``-s`` names the newest retained checkpoint (the client's
``execution.state-recovery.path``, which the job file sets too), so state and
source offsets continue together on the cluster.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from infra.flink_cluster import FlinkFiles, flink_home
from jobs.ingest.flink_job import FlinkOptions, latest_checkpoint
from memstream.settings import Settings

log = logging.getLogger(__name__)

JOB_FILE = Path(__file__).resolve().parent / "flink_job.py"


def parse_address(address: str) -> str:
    """``HOST:PORT`` checked (a port number after the last colon); raises ValueError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"--cluster takes HOST:PORT of the REST API, e.g. 127.0.0.1:18481, not {address!r}"
        )
    return f"{host}:{int(port)}"


def job_arguments(options: FlinkOptions) -> list[str]:
    """The ``memstream flink`` options that reproduce ``options`` inside ``flink run``."""
    args = [
        "--namespace",
        options.namespace,
        "--group-id",
        options.group_id,
        "--checkpoint-interval",
        repr(options.checkpoint_interval_s),
        "--parallelism",
        str(options.parallelism),
        "--restart-attempts",
        str(options.restart_attempts),
        "--restart-delay",
        repr(options.restart_delay_s),
    ]
    if options.resume:
        args.append("--resume")
    if options.until_end:
        args.append("--until-end")
    return args


def flink_run_command(options: FlinkOptions, cluster: str, *, detach: bool) -> list[str]:
    """The ``flink run`` argv submitting the ingest job to ``cluster`` (HOST:PORT)."""
    command = [
        str(flink_home() / "bin" / "flink"),
        "run",
        "-m",
        cluster,
        "-p",
        str(options.parallelism),
        "-pyexec",
        sys.executable,
        "-pyclientexec",
        sys.executable,
    ]
    if detach:
        command.append("-d")
    if options.resume and (checkpoint := latest_checkpoint(options.checkpoint_dir)) is not None:
        command += ["-s", checkpoint.as_uri()]
    return [*command, "-py", str(JOB_FILE), *job_arguments(options)]


def submit(settings: Settings, options: FlinkOptions, cluster: str, *, detach: bool) -> int:
    """Run ``flink run`` in the foreground, its output on ours; returns its exit code."""
    files = FlinkFiles(settings)
    # The client reads its logging config and the Python interpreters from the
    # project's conf dir (also when the cluster is someone else's: -m wins).
    files.write()
    command = flink_run_command(options, cluster, detach=detach)
    log.info("submitting to %s: %s", cluster, " ".join(command))
    env = {**os.environ, **files.environment()}
    done = subprocess.run(command, env=env, check=False)  # noqa: S603 - argv built here, no shell
    return done.returncode
