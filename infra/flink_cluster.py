"""A standalone Flink session cluster: one JobManager and N TaskManagers as local processes.

The distribution is the one the ``apache-flink`` package ships (``pyflink/bin``,
``pyflink/lib``): ``jobmanager.sh start-foreground`` and ``taskmanager.sh
start-foreground`` run each process in the foreground, so infra/process.py
tracks, logs and stops it like every other service. The configuration is the
project's, written from the settings' ``flink`` section into
``<state_dir>/data/flink-jobmanager/conf`` (``FLINK_CONF_DIR``) before each
start: ports, memory, slots, heartbeats, and every directory Flink would put
under ``/tmp`` (pid files, blobs, uploads, RocksDB working files) moved under
the state dir.

Files under ``<state_dir>``::

    data/flink-jobmanager/conf/       config.yaml, log4j-console.properties
    data/flink-jobmanager/tmp/        io.tmp.dirs, blobs, web uploads
    logs/flink-jobmanager.log         the JobManager's output
    logs/flink-taskmanager-<i>.log    each TaskManager's output (its Python worker's too)
    flink/checkpoints/                the cluster's default checkpoint root (jobs set their own)

Health: the JobManager answers ``GET /overview``; TaskManager ``i`` is healthy
once it is registered in ``GET /taskmanagers`` under the resource id of its
latest start, ``memstream-tm-<i>-<start>`` (kept in ``run/flink-taskmanager-<i>.id``).

Python UDFs run in Python workers the TaskManagers start with
``python.executable``, this interpreter: the project must be importable there
(installed, or editable from the checkout).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import httpx
import yaml

from infra import process, toolchain
from infra.service import LOG_LINES_ON_ERROR, Mode, Service, ServiceStartError
from memstream.settings import Settings

JOBMANAGER: Final = "flink-jobmanager"
TASKMANAGER_PREFIX: Final = "flink-taskmanager-"
# A REST call on loopback answers in milliseconds; 2 s covers a JobManager busy
# with a (re)deployment on two loaded cores without stalling `infra status`.
_REST_TIMEOUT_S = 2.0
# The console-only logging of every process: infra/process.py puts stdout in
# the service's log file, so Flink's own rolling file would be a second copy.
_LOG4J = """\
# Written by memstream (infra/flink_cluster.py): console only, stdout is the log file.
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
"""


def flink_home() -> Path:
    """The Flink distribution inside the installed ``apache-flink`` package (``pyflink/``)."""
    # find_spec, not import: pyflink's __init__ is cheap, but the CLI's --help loads nothing.
    spec = importlib.util.find_spec("pyflink")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        home = Path(location)
        if (home / "bin" / "jobmanager.sh").is_file() and (home / "lib").is_dir():
            return home
    raise toolchain.ToolchainError(
        "no Flink distribution: the apache-flink package (pyflink/bin, pyflink/lib) is missing"
    )


def resource_id(index: int, start: str) -> str:
    """The resource id of TaskManager ``index`` started at ``start`` (shown in the web UI)."""
    return f"memstream-tm-{index}-{start}"


def taskmanager_index(resource: str) -> int | None:
    """Which TaskManager a resource id names (None: not one of ours)."""
    prefix, _, rest = resource.partition("memstream-tm-")
    index = rest.split("-", 1)[0]
    return int(index) if not prefix and index.isdigit() else None


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{name}.")
        else:
            flat[name] = value
    return flat


def _ms(seconds: float) -> str:
    return f"{int(seconds * 1000)} ms"


class FlinkFiles:
    """Where the cluster's files live and the configuration every process reads."""

    def __init__(self, settings: Settings) -> None:
        """Paths from ``settings.state_dir``."""
        self.settings = settings
        base = settings.state_dir / "data" / JOBMANAGER
        self.conf_dir = base / "conf"
        self.tmp_dir = base / "tmp"
        self.pid_dir = settings.state_dir / "run" / "flink"
        self.log_dir = settings.state_dir / "logs" / "flink"
        self.checkpoint_root = settings.state_dir / "flink" / "checkpoints"

    def configuration(self) -> dict[str, Any]:
        """The cluster's config.yaml as flat keys: the distribution's, then the project's."""
        shipped = flink_home() / "conf" / "config.yaml"
        # Flink's shipped file carries the JVM flags (--add-opens ...) Java 17 needs.
        values = _flatten(yaml.safe_load(shipped.read_text()) or {})
        flink = self.settings.flink
        host = flink.host
        values |= {
            "jobmanager.rpc.address": host,
            "jobmanager.rpc.port": flink.rpc_port,
            "jobmanager.bind-host": host,
            "rest.address": host,
            "rest.bind-address": host,
            "rest.port": flink.rest_port,
            "taskmanager.host": host,
            "taskmanager.bind-host": host,
            "taskmanager.numberOfTaskSlots": flink.slots_per_taskmanager,
            "jobmanager.memory.process.size": flink.jobmanager_memory,
            "taskmanager.memory.process.size": flink.taskmanager_memory,
            "parallelism.default": flink.parallelism,
            "heartbeat.interval": _ms(flink.heartbeat_interval_s),
            "heartbeat.timeout": _ms(flink.heartbeat_timeout_s),
            # The Python workers and `flink run -py`'s client: this environment,
            # where the stages and their models are installed.
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "io.tmp.dirs": str(self.tmp_dir),
            "blob.storage.directory": str(self.tmp_dir / "blobs"),
            "web.upload.dir": str(self.tmp_dir / "uploads"),
            "env.pid.dir": str(self.pid_dir),
            "env.log.dir": str(self.log_dir),
            "execution.checkpointing.dir": self.checkpoint_root.as_uri(),
        }
        return values

    def write(self) -> None:
        """Write config.yaml and the logging config into the conf dir (each start: settings win)."""
        for directory in (self.conf_dir, self.tmp_dir, self.pid_dir, self.log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        lines = [
            "# Written by memstream (infra/flink_cluster.py) from its settings; edits are lost."
        ]
        # JSON scalars are YAML scalars: strings with spaces or colons stay one value.
        lines += [
            f"{key}: {json.dumps(value)}" for key, value in sorted(self.configuration().items())
        ]
        (self.conf_dir / "config.yaml").write_text("\n".join(lines) + "\n")
        (self.conf_dir / "log4j-console.properties").write_text(_LOG4J)
        # `flink run` (the client) reads its own logging config from the same dir.
        shipped = flink_home() / "conf" / "log4j-cli.properties"
        (self.conf_dir / shipped.name).write_text(shipped.read_text())

    def environment(self) -> dict[str, str]:
        """What the distribution's scripts read: where Flink, Java, the config and pids are."""
        java = toolchain.find_java(self.settings.java_home)
        return {
            "FLINK_HOME": str(flink_home()),
            "FLINK_CONF_DIR": str(self.conf_dir),
            "FLINK_LOG_DIR": str(self.log_dir),
            "FLINK_PID_DIR": str(self.pid_dir),
            # bin/java -> the JDK home; config.sh runs $JAVA_HOME/bin/java.
            "JAVA_HOME": str(java.resolve().parent.parent),
        }


class _FlinkProcess(Service):
    """What the JobManager and the TaskManagers share: the distribution, config and REST API."""

    # A JobManager cancels its jobs and a TaskManager its tasks (and Python
    # workers) on SIGTERM; both finish in a few seconds. 30 s is bounded slack.
    stop_timeout_s = 30.0

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.files = FlinkFiles(settings)
        # One data dir for the cluster (conf and tmp): the processes share both.
        self.data_dir = self.files.conf_dir.parent

    @property
    def mode(self) -> Mode:
        """Always started and stopped by memstream (a foreign cluster is only submitted to)."""
        return "managed"

    @property
    def rest_url(self) -> str:
        """Base URL of the JobManager's REST API."""
        return f"http://{self.settings.flink.rest_address}"

    def rest(self, path: str) -> Any:
        """GET a REST resource of the JobManager; None when it does not answer."""
        try:
            response = httpx.get(f"{self.rest_url}{path}", timeout=_REST_TIMEOUT_S)
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None

    def environ(self) -> dict[str, str] | None:
        """The caller's environment (the models' offline flags, caches) plus Flink's."""
        return {**os.environ, **self.files.environment()}

    def script(self, name: str) -> str:
        """A script of the distribution's bin/."""
        return str(flink_home() / "bin" / name)


class FlinkJobManager(_FlinkProcess):
    """The session cluster's JobManager (dispatcher, resource manager, REST API)."""

    name = JOBMANAGER

    @property
    def port(self) -> int | None:
        """The REST port (what `flink run -m` and the health check use)."""
        return self.settings.flink.rest_port

    def healthy(self) -> bool:
        """``/overview`` answers."""
        return self.rest("/overview") is not None

    def prepare(self) -> None:
        """Write the cluster's configuration (settings may have changed since the last start)."""
        super().prepare()
        self.files.write()

    def command(self) -> list[str]:
        """``jobmanager.sh start-foreground`` on the project's conf dir."""
        return ["bash", self.script("jobmanager.sh"), "start-foreground"]


class FlinkTaskManager(_FlinkProcess):
    """TaskManager ``index`` (1-based) of the session cluster."""

    def __init__(self, settings: Settings, index: int) -> None:
        """``index``: which of ``settings.flink.taskmanagers`` this is."""
        self.name = f"{TASKMANAGER_PREFIX}{index}"
        self.index = index
        super().__init__(settings)

    @property
    def port(self) -> int | None:
        """None: a TaskManager takes free ports; clients talk to the JobManager."""
        return None

    @property
    def id_file(self) -> Path:
        """The resource id of the process started last (beside its pid file)."""
        return self.pid_file.with_suffix(".id")

    @property
    def resource(self) -> str:
        """The resource id the running (or last started) process registers under."""
        try:
            return self.id_file.read_text().strip()
        except FileNotFoundError:
            return resource_id(self.index, "none")

    def healthy(self) -> bool:
        """Registered with the JobManager under this start's resource id."""
        listing = self.rest("/taskmanagers")
        if not isinstance(listing, dict):
            return False
        return any(tm.get("id") == self.resource for tm in listing.get("taskmanagers", []))

    def start(self) -> bool:
        """Start unless ours runs, under a resource id of its own start.

        A fresh id per start: a SIGKILLed TaskManager stays registered until
        the JobManager's heartbeat gives up on it, and under the same id its
        replacement would look healthy before it ever came up. For the same
        reason a registration without a process of ours is not reused.
        """
        if self.pid() is not None:
            return False
        self.prepare()
        self.id_file.write_text(resource_id(self.index, f"{time.time_ns():x}"[-8:]))
        process.spawn(
            self.command(), pid_file=self.pid_file, log_file=self.log_file, env=self.environ()
        )
        return True

    def prepare(self) -> None:
        """Write the configuration too: a TaskManager may be started alone (a replacement)."""
        super().prepare()
        self.files.write()

    def command(self) -> list[str]:
        """``taskmanager.sh start-foreground`` with the resource id of this start."""
        return [
            "bash",
            self.script("taskmanager.sh"),
            "start-foreground",
            "-D",
            f"taskmanager.resource-id={self.resource}",
        ]

    def _start_error(self, what: str) -> ServiceStartError:
        return ServiceStartError(
            f"{self.name} ({self.resource}, JobManager "
            f"{self.settings.flink.rest_address}) {what}; log: {self.log_file}\n"
            f"--- last lines of {self.log_file} ---\n"
            f"{process.tail(self.log_file, LOG_LINES_ON_ERROR)}"
        )


def cluster_services(settings: Settings) -> list[Service]:
    """The JobManager, then every TaskManager, in start order."""
    managers: list[Service] = [FlinkJobManager(settings)]
    managers += [FlinkTaskManager(settings, i) for i in range(1, settings.flink.taskmanagers + 1)]
    return managers


def cluster_names(settings: Settings) -> list[str]:
    """The service names of the cluster's processes."""
    return [s.name for s in cluster_services(settings)]


def overview(rest_address: str) -> dict[str, Any] | None:
    """The ``/overview`` of the cluster at HOST:PORT (TaskManagers, slots, jobs), None when down."""
    try:
        response = httpx.get(f"http://{rest_address}/overview", timeout=_REST_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    data: dict[str, Any] = response.json()
    return data
