"""What every local service shares: where its files live, start, health wait, stop, status.

A concrete service (infra/kafka_broker.py, redis_server.py, neo4j_server.py,
chroma_server.py) says how to prepare it, the command that runs it and how to
tell it is healthy; this base class does the rest the same way for all.

Files of a service named ``x`` under ``settings.state_dir``::

    data/x/    its data directory
    logs/x.log its output (stdout and stderr)
    run/x.pid  pid and start time of the running process
"""

from __future__ import annotations

import socket
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from infra import process
from memstream.settings import Settings

# managed: started and stopped by memstream; embedded: runs inside the caller's
# process (Chroma's PersistentClient); external: someone else's server, only checked.
Mode = Literal["managed", "embedded", "external"]

# Lines of the log shown when a service does not come up: enough for a Java
# stack trace's head or Redis's "Address already in use".
LOG_LINES_ON_ERROR = 25


class ServiceStartError(RuntimeError):
    """A service did not become healthy; the message names its log file."""


@dataclass(frozen=True)
class ServiceStatus:
    """One row of `memstream infra status`."""

    name: str
    up: bool
    mode: Mode
    pid: int | None
    port: int | None
    rss_mb: float | None
    log: Path | None
    data_dir: Path


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class Service(ABC):
    """A local service run as a background process (or embedded / external)."""

    name: str
    # Seconds between SIGTERM and SIGKILL; each service says why its value.
    stop_timeout_s: float = 15.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = settings.state_dir / "data" / self.name
        self.log_file = settings.state_dir / "logs" / f"{self.name}.log"
        self.pid_file = settings.state_dir / "run" / f"{self.name}.pid"

    @property
    @abstractmethod
    def mode(self) -> Mode:
        """How this service runs with the current settings."""

    @property
    @abstractmethod
    def port(self) -> int | None:
        """The port clients connect to (None when embedded)."""

    @abstractmethod
    def healthy(self) -> bool:
        """One quick health probe (a real request, not just an open port)."""

    @abstractmethod
    def command(self) -> list[str]:
        """The argv that runs the service in the foreground."""

    def prepare(self) -> None:
        """Everything before the first start: downloads, builds, formatting."""
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def after_healthy(self) -> None:  # noqa: B027 - an optional hook; most services need none
        """Set-up that needs the running service (e.g. Kafka topics); idempotent."""

    def environ(self) -> dict[str, str] | None:
        """The environment the process runs with; None: the caller's own."""
        return None

    def pid(self) -> int | None:
        """The pid of our running process, if any."""
        return process.running_pid(self.pid_file)

    def start(self) -> bool:
        """Start the process unless ours already runs; True when it was started now."""
        if self.mode != "managed" or self.pid() is not None:
            return False
        if self.healthy():
            # Already served on this port by a process we did not start (another
            # state dir, a developer's own server): reuse it rather than collide.
            return False
        self.prepare()
        process.spawn(
            self.command(), pid_file=self.pid_file, log_file=self.log_file, env=self.environ()
        )
        return True

    def wait_healthy(self, timeout_s: float) -> None:
        """Poll the health probe until it passes; raise ServiceStartError on time-out or exit."""
        if self.mode == "embedded":
            return
        deadline = time.monotonic() + timeout_s
        while True:
            if self.healthy():
                return
            if self.mode == "managed" and self.pid() is None:
                raise self._start_error("exited before it became healthy")
            if time.monotonic() >= deadline:
                raise self._start_error(f"not healthy after {timeout_s:.0f} s")
            time.sleep(process.POLL_INTERVAL_S)

    def _start_error(self, what: str) -> ServiceStartError:
        where = f"port {self.port}" if self.port is not None else "its data dir"
        if self.mode == "external":
            return ServiceStartError(f"{self.name} (external, {where}) {what}")
        return ServiceStartError(
            f"{self.name} ({where}) {what}; log: {self.log_file}\n"
            f"--- last lines of {self.log_file} ---\n"
            f"{process.tail(self.log_file, LOG_LINES_ON_ERROR)}"
        )

    def stop(self) -> bool:
        """Stop our process (SIGTERM, then SIGKILL after stop_timeout_s); True if one ran."""
        if self.mode != "managed":
            return False
        return process.stop(self.pid_file, self.stop_timeout_s)

    def status(self) -> ServiceStatus:
        """Whether the service answers now, with its pid, memory and files."""
        pid = self.pid() if self.mode == "managed" else None
        return ServiceStatus(
            name=self.name,
            up=self.mode == "embedded" or self.healthy(),
            mode=self.mode,
            pid=pid,
            port=self.port,
            rss_mb=process.rss_mb(pid) if pid is not None else None,
            log=self.log_file if self.mode == "managed" else None,
            data_dir=self.data_dir,
        )
