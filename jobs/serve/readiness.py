"""``GET /readyz``: whether the API can serve now — Redis, Chroma, Neo4j and the broker.

``/healthz`` stays liveness (the process answers; no dependency touched), so
an orchestrator restarts the API only when it is wedged, and merely stops
routing to it while a store is down. ``/readyz`` runs one probe per dependency
(each connector's ``ping``, the broker's metadata request), all at once and each
bounded by ``timeout_s``, and answers 200 when every one passed or 503 naming
the ones that did not, with their errors. Like ``/metrics`` it needs no API
key, holds no tenant data, and is not part of the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from schemas._base import Frozen

Probe = Callable[[], object]  # raises when its dependency is not ready
# A probe answers in milliseconds when its store is up and fails as fast when
# the port is closed; a hung store (frozen process, dropped packets) must not
# hang the probe itself beyond what a load balancer's check waits (usually 5 s).
DEFAULT_TIMEOUT_S = 3.0
# An error text is for the operator's eye, not a dump of the client's state.
_MAX_ERROR_CHARS = 300


class Check(Frozen):
    """One dependency's probe result."""

    ready: bool
    error: str | None = None


class ReadyReport(Frozen):
    """The answer of ``/readyz``: ready overall, and each dependency's check."""

    ready: bool
    checks: dict[str, Check]
    not_ready: list[str]


class Readiness:
    """Runs named probes concurrently, each within ``timeout_s``."""

    def __init__(self, probes: Mapping[str, Probe], timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.probes = dict(probes)
        self.timeout_s = timeout_s

    def check(self) -> ReadyReport:
        """Probe every dependency now."""
        # A pool per check: a probe stuck on a hung store keeps its thread, never
        # the next check's (the pool is not waited for on shutdown).
        pool = ThreadPoolExecutor(max_workers=max(1, len(self.probes)), thread_name_prefix="readyz")
        try:
            futures = {name: pool.submit(probe) for name, probe in self.probes.items()}
            checks = {name: self._outcome(future) for name, future in futures.items()}
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        failed = sorted(name for name, check in checks.items() if not check.ready)
        return ReadyReport(ready=not failed, checks=checks, not_ready=failed)

    def _outcome(self, future: Future[object]) -> Check:
        try:
            future.result(timeout=self.timeout_s)
        except FutureTimeout:
            return Check(ready=False, error=f"no answer within {self.timeout_s} s")
        except Exception as exc:  # noqa: BLE001 - any failure of a probe means "not ready"
            text = f"{type(exc).__name__}: {exc}"
            return Check(ready=False, error=text[:_MAX_ERROR_CHARS])
        return Check(ready=True)


def add_readiness(app: FastAPI, readiness: Readiness) -> None:
    """Serve ``GET /readyz`` from ``readiness``."""

    # Out of the OpenAPI document like /metrics and /dashboard: the document is
    # also built without stores (api.openapi_document), where there is no probe.
    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        """Readiness: Redis, Chroma, Neo4j and the broker answer (503 names those that do not)."""
        report = readiness.check()
        code = 200 if report.ready else 503
        return JSONResponse(report.model_dump(mode="json"), status_code=code)
