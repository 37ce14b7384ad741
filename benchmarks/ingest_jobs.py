"""The job subprocesses of bench_ingest.py and bench_soak.py: start, wait for, measure, stop."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connectors.kafka_io import end_offsets
from connectors.kafka_offsets import OffsetReader

ROOT = Path(__file__).resolve().parent.parent
# Model loading plus a 1,200-event backlog on 2 busy cores stays well inside
# this, for Flink too (~10 events/s measured, one record per call).
CATCH_UP_TIMEOUT_S = 900.0
# Metrics endpoints off in the benchmark: other jobs on this machine may hold
# the default ports (settings.metrics), and nothing scrapes them here.
_JOB_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MEMSTREAM_METRICS__INGEST_PORT": "0",
    "MEMSTREAM_METRICS__FLINK_PORT": "0",
    "MEMSTREAM_METRICS__SINK_PORT": "0",
}


class Job:
    """A job subprocess and the consumer group it commits under."""

    def __init__(
        self, name: str, command: list[str], group: str, env: dict[str, str] | None = None
    ) -> None:
        """Start ``command`` with the offline NLP environment (plus ``env``)."""
        self.name = name
        self.group = group
        self.metrics_port = 0  # set where the job's throughput comes from its metrics
        self._command = command
        self._env = {**os.environ, **_JOB_ENV, **(env or {})}
        slug = "-".join(name.replace("(", "").replace(")", "").split()[:2])
        self.log = Path(tempfile.gettempdir()) / f"bench-ingest-{slug}-{os.getpid()}.log"
        self._log_start = 0  # where the current process's output begins in the log
        self.process = self._spawn("wb")

    def _spawn(self, mode: str) -> subprocess.Popen[bytes]:
        with self.log.open(mode) as out:
            return subprocess.Popen(  # noqa: S603 - our interpreter and modules
                self._command, cwd=ROOT, env=self._env, stdout=out, stderr=out
            )

    def kill(self) -> None:
        """SIGKILL the job (not its descendants: they die with it or are orphaned) and reap it."""
        self.process.kill()
        self.process.wait(timeout=60)

    def restart(self) -> None:
        """Start the same command again, its output appended to the same log."""
        self._log_start = self.log.stat().st_size
        self.process = self._spawn("ab")

    def log_since_start(self) -> str:
        """What the current process has written to the log so far."""
        with self.log.open("rb") as log:
            log.seek(self._log_start)
            return log.read().decode(errors="replace")

    def rss_mib(self) -> float:
        """Resident memory now, summed over the process and its descendants (0 once exited)."""
        return sum(_rss_kib(pid) for pid in _process_tree(self.process.pid)) / 1024

    def peak_rss_mib(self) -> float:
        """The sum of VmHWM over the process and its descendants (Linux)."""
        total_kib = 0
        for pid in _process_tree(self.process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except FileNotFoundError:  # exited meanwhile
                continue
            total_kib += next(
                (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")),
                0,
            )
        return total_kib / 1024

    def check_alive(self) -> None:
        """Raise if the job has exited (its log says why)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited; see {self.log}")

    def wait_caught_up(self, bootstrap: str, topics: Sequence[str]) -> float:
        """Wait until the group has committed every input's end; returns when (monotonic)."""
        ends = {(t, p): e for t in topics for p, e in end_offsets(bootstrap, t).items()}
        reader = OffsetReader(bootstrap)
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while time.monotonic() < deadline:
            self.check_alive()
            done = reader.committed(self.group)
            if all(done.get(position, 0) >= end for position, end in ends.items()):
                return time.monotonic()
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not catch up; see {self.log}")

    def stop(self) -> None:
        """SIGTERM and wait."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)


def _rss_kib(pid: int) -> int:
    """One process's resident set (KiB): psutil where installed, else /proc; 0 once exited."""
    try:
        # Optional (not a dependency of the project) and without type stubs here.
        psutil: Any = importlib.import_module("psutil")
    except ImportError:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return 0
        return next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
    try:
        return int(psutil.Process(pid).memory_info().rss // 1024)
    except psutil.Error:  # exited meanwhile
        return 0


def _process_tree(pid: int) -> list[int]:
    """``pid`` and every descendant, from /proc's children lists."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except FileNotFoundError:  # the thread or process ended meanwhile
                continue
    return tree
