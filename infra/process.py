"""Background processes tracked by pid files: spawn, identify, stop, measure.

A pid file holds the pid *and* the process's start time (field 22 of
``/proc/<pid>/stat``), so a pid recycled by the kernel for an unrelated
process is never taken for ours. Linux only, like the rest of infra/.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# How often stop() and the health waits poll; short enough that a service
# which comes up in 2 s is not reported as taking 3.
POLL_INTERVAL_S = 0.2


@dataclass(frozen=True)
class PidRecord:
    """What a pid file stores about the process it names."""

    pid: int
    start_ticks: int


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces; it ends at the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    # Field 22 (starttime) is index 19 once pid and comm are cut off.
    return int(fields[19]) if fields else None


def _reap(pid: int) -> None:
    # A child of this very process stays a zombie until waited for.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def is_running(record: PidRecord) -> bool:
    """True when the recorded process still exists and is not a zombie."""
    _reap(record.pid)
    fields = _stat_fields(record.pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == record.start_ticks


def read_pid_file(path: Path) -> PidRecord | None:
    """The record in ``path``, or None when there is none or it is unreadable."""
    try:
        data = json.loads(path.read_text())
        return PidRecord(pid=int(data["pid"]), start_ticks=int(data["start_ticks"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def running_pid(path: Path) -> int | None:
    """The pid recorded in ``path`` if that process is still alive; removes a stale file."""
    record = read_pid_file(path)
    if record is None:
        return None
    if is_running(record):
        return record.pid
    path.unlink(missing_ok=True)
    return None


def spawn(
    command: Sequence[str],
    *,
    pid_file: Path,
    log_file: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> PidRecord:
    """Start ``command`` detached (own session), output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} {shlex.join(command)}\n".encode())
        log.flush()
        # A new session: Ctrl-C in the terminal that ran `memstream infra up`
        # must not stop the shared services, and stop() can signal the group.
        proc = subprocess.Popen(  # noqa: S603 - argv list built by infra/, no shell
            list(command),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    # Reading /proc right after fork can race the exec; the start time is
    # fixed at fork, so this is the process we started.
    ticks = _start_ticks(proc.pid)
    record = PidRecord(pid=proc.pid, start_ticks=ticks if ticks is not None else -1)
    pid_file.write_text(json.dumps({"pid": record.pid, "start_ticks": record.start_ticks}))
    return record


def stop(pid_file: Path, timeout_s: float) -> bool:
    """SIGTERM the recorded process group, wait up to ``timeout_s``, then SIGKILL.

    Returns True when a running process was stopped, False when none was running.
    """
    record = read_pid_file(pid_file)
    if record is None or not is_running(record):
        pid_file.unlink(missing_ok=True)
        return False
    _signal_group(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_running(record):
            break
        time.sleep(POLL_INTERVAL_S)
    else:
        _signal_group(record.pid, signal.SIGKILL)
        while is_running(record):
            time.sleep(POLL_INTERVAL_S)
    pid_file.unlink(missing_ok=True)
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # spawn() made the process a session (and group) leader, so its children
    # (e.g. workers a server forks) get the signal too.
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, sig)


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB, or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file (empty when there is none)."""
    try:
        with path.open("rb") as f:
            # Logs can be large; 64 KiB holds the last 20 lines of any of ours.
            f.seek(max(0, path.stat().st_size - 65536))
            text = f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
