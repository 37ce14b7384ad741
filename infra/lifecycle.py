"""``up``, ``down`` and ``status`` of the local services.

The API behind `memstream infra`, ``./dev demo`` and the integration-test fixtures.

``up`` and ``down`` hold an exclusive file lock (``<state_dir>/run/infra.lock``)
so that parallel processes (pytest workers, two terminals) never start the same
service twice: the second caller waits, then finds the service healthy and
reuses it.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from infra.chroma_server import ChromaServer
from infra.flink_cluster import cluster_services
from infra.kafka_broker import KafkaBroker
from infra.neo4j_server import Neo4jServer
from infra.redis_server import RedisServer
from infra.service import Mode, Service, ServiceStatus
from memstream.settings import Settings

# Start order; they start concurrently, this only orders the reports.
SERVICE_TYPES: tuple[type[Service], ...] = (KafkaBroker, RedisServer, Neo4jServer, ChromaServer)
SERVICE_NAMES: tuple[str, ...] = tuple(t.name for t in SERVICE_TYPES)
# The Flink session cluster (JobManager and TaskManagers, infra/flink_cluster.py)
# is one name here and opt-in: only the PyFlink engine on a cluster needs it,
# and its three JVMs take ~5 GB, so a plain `up` leaves it out.
FLINK = "flink"
KNOWN_NAMES: tuple[str, ...] = (*SERVICE_NAMES, FLINK)


@dataclass(frozen=True)
class StartReport:
    """What ``up`` did for one service."""

    name: str
    mode: Mode
    started: bool  # False: it was already running (or is embedded / external)
    seconds: float  # from the start of ``up`` until it was healthy


def select(
    settings: Settings, names: Collection[str] | None = None, *, flink: bool = False
) -> list[Service]:
    """The named services (the default ones when ``names`` is empty or None), in start order.

    ``flink`` (or the name "flink") adds the session cluster's processes.
    """
    unknown = set(names or ()) - set(KNOWN_NAMES)
    if unknown:
        raise ValueError(f"unknown service(s) {sorted(unknown)}; known: {', '.join(KNOWN_NAMES)}")
    wanted = set(names or SERVICE_NAMES) | ({FLINK} if flink else set())
    selected = [t(settings) for t in SERVICE_TYPES if t.name in wanted]
    if FLINK in wanted:
        selected += cluster_services(settings)
    return selected


@contextmanager
def _infra_lock(settings: Settings) -> Iterator[None]:
    path = settings.state_dir / "run" / "infra.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def up(
    settings: Settings,
    services: Collection[str] | None = None,
    on_ready: Callable[[StartReport], None] | None = None,
    *,
    flink: bool = False,
) -> list[StartReport]:
    """Start the services that are not running and wait until each is healthy.

    Idempotent: a service already healthy is reused, not restarted. Raises
    ServiceStartError (naming the log file) when one does not come up within
    ``settings.service_start_timeout_s``; ToolchainError when Java/Maven fail.
    ``on_ready`` is called as each service becomes healthy; ``flink`` adds the
    Flink session cluster.
    """
    reports: list[StartReport] = []
    with _infra_lock(settings):
        t0 = time.monotonic()
        selected = select(settings, services, flink=flink)
        # Spawn every process first, then wait: the JVMs warm up side by side.
        started = {s.name: s.start() for s in selected}
        deadline = time.monotonic() + settings.service_start_timeout_s
        for service in selected:
            service.wait_healthy(max(0.0, deadline - time.monotonic()))
            service.after_healthy()
            report = StartReport(
                service.name, service.mode, started[service.name], time.monotonic() - t0
            )
            reports.append(report)
            if on_ready is not None:
                on_ready(report)
    return reports


def down(settings: Settings, services: Collection[str] | None = None) -> list[str]:
    """Stop the named (default: all, the Flink cluster too) services; returns those that ran."""
    with _infra_lock(settings):
        selected = select(settings, services, flink=not services)
        # In parallel: Neo4j alone takes ~10 s to shut down cleanly.
        with ThreadPoolExecutor(max_workers=len(selected) or 1) as pool:
            stopped = list(pool.map(lambda s: s.stop(), selected))
    return [s.name for s, was_running in zip(selected, stopped, strict=True) if was_running]


def status(settings: Settings, *, flink: bool = False) -> list[ServiceStatus]:
    """The state of every service (no lock: it only looks).

    The Flink cluster's processes are listed with ``flink`` or while any of them runs.
    """
    running = any(s.pid() is not None for s in cluster_services(settings))
    return [s.status() for s in select(settings, flink=flink or running)]
