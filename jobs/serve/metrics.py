"""Prometheus metrics of the HTTP API: requests per route, their latency, and ``GET /metrics``.

``RequestMetrics`` is ASGI middleware labelling each request by its route
*template* (``/v1/users/{user_id}/recall``), never its path: user ids, pending
ids and query text stay out of the labels, so no tenant data reaches a metrics
store. ``add_metrics_route(app, extra)`` serves the default registry (this
process's collectors: the API's, the Python runtime's) plus ``extra`` (the lag
gauges of ``memstream serve``'s sampler).

``/metrics`` needs no API key, as Prometheus scrapers usually present none;
it holds no tenant data. The API listens on loopback by default; put it behind
a proxy that filters ``/metrics`` and ``/dashboard`` if it must face a network.
"""

from __future__ import annotations

import time

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUESTS = Counter(
    "memstream_api_requests_total",
    "HTTP requests answered, by method, route template and status code.",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "memstream_api_request_seconds",
    "Time to answer an HTTP request, by route template.",
    ["route"],
    # Recall p50/p95 measured 138-292 ms at 1k-10k facts and ~1.4-1.9 s at 100k
    # (issue 6 note); health checks answer in about a millisecond.
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 10),
)
UNMATCHED = "unmatched"  # the route label of a request no route took (a 404)


class RequestMetrics:
    """ASGI middleware: count and time every HTTP request under its route template."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; record its status and duration when it is answered."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def recorded(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recorded)
        finally:
            route = getattr(scope.get("route"), "path", UNMATCHED)
            REQUESTS.labels(method=scope["method"], route=route, status=str(status)).inc()
            REQUEST_SECONDS.labels(route=route).observe(time.perf_counter() - started)


def add_metrics_route(app: FastAPI, extra: CollectorRegistry | None = None) -> None:
    """Serve ``GET /metrics``: the default registry, then ``extra`` if given."""

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        body = generate_latest(REGISTRY)
        if extra is not None:
            body += generate_latest(extra)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
