"""The HTTP API: agents' recall, snapshot, history and memory actions over FastAPI.

``create_app(service, keys)`` builds the app; ``memstream serve`` runs it under
uvicorn. Paths are versioned (``/v1/...``), the OpenAPI document is served at
``/openapi.json`` and interactive docs at ``/docs``.

Tenancy: the tenant is never a request field. Every ``/v1`` call presents an API
key (``Authorization: Bearer <key>`` or ``X-API-Key: <key>``); the key names one
tenant and every call runs scoped to it. User ids are therefore only meaningful
inside the caller's tenant: another tenant's user id reads an empty user, and
another tenant's pending id is answered exactly like an unknown id (404, not
403, so nothing says it exists elsewhere).

Input is validated at the edge (id alphabets, lengths, ``k`` bounds, filter
keys), so a malformed request is a 422 and never reaches a store. Writes
(confirm, reject, store, forget) are events on ``user.actions``: the answer is
``202 Accepted`` with the receipt of where the event went.

Operations (no API key: Prometheus scrapers and an operator's browser carry
none, and neither answer holds tenant data): ``GET /metrics`` in the Prometheus
text format (jobs/serve/metrics.py: requests per route template, plus the lag
gauges when a sampler is given) and, with a ``jobs.serve.dashboard.LagSampler``,
``GET /dashboard`` charting consumer lag and throughput; none of them is part
of the OpenAPI document. ``GET /healthz`` is liveness (no dependency touched)
and ``GET /readyz`` readiness (jobs/serve/readiness.py: 200 when Redis, Chroma,
Neo4j and the broker answer, 503 naming those that do not).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from datetime import datetime
from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request, Security, status
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry
from pydantic import (
    AwareDatetime,
    BeforeValidator,
    Field,
    Strict,
    StrictBool,
    StringConstraints,
    model_validator,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connectors.kafka_io import DeliveryFailed
from jobs.serve.auth import presented_key, unauthorized
from jobs.serve.dashboard import LagCollector, LagSampler, add_dashboard
from jobs.serve.hint_stream import MEDIA_TYPE, sse
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import (
    MAX_K,
    MAX_QUERY_CHARS,
    MemoryService,
    UnknownPendingError,
)
from jobs.serve.metrics import RequestMetrics, add_metrics_route
from jobs.serve.readiness import Readiness, add_readiness
from schemas._base import Frozen, Identifier
from schemas.bounds import time_text
from schemas.hints import MemoryHint
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.query import ActionReceipt, MemorySnapshot, RecallFilters, RecallHit

API_VERSION = "1"
# schemas.ids.fact_id: "f_" + a 12-byte blake2b digest in hex. A pending id is the
# held fact's id, so anything else cannot name a pending item.
PENDING_ID_PATTERN = r"^f_[0-9a-f]{24}$"
# Every valid request body is a few KiB at most (the longest field, a stored
# memory's text, is 4,096 characters: schemas.memory.MemoryRecord); 64 KiB
# refuses oversized bodies before they are read into memory, with room to spare.
MAX_BODY_BYTES = 64 * 1024

UserId = Annotated[Identifier, Path(description="The user, within the caller's tenant.")]
PendingIdText = Annotated[str, StringConstraints(pattern=PENDING_ID_PATTERN)]
PendingId = Annotated[
    PendingIdText, Path(description="A pending item's id, as listed in the snapshot's `pending`.")
]
# Blank queries are refused like empty ones (stripped, then at least one character).
QueryText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS)
]
TopK = Annotated[int, Field(ge=1, le=MAX_K, description="How many hits at most.")]
# Same bounds as schemas.memory.MemoryRecord's fields.
Subject = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Predicate = Annotated[str, StringConstraints(min_length=1, max_length=128)]
ObjectText = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
StatementText = Annotated[str, StringConstraints(max_length=4096)]


class MemoryQueries(Protocol):
    """What the API needs of the service layer (``jobs.serve.memory_service.MemoryService``)."""

    def recall(
        self,
        tenant_id: str,
        user_id: str,
        query: str,
        k: int = 10,
        as_of: datetime | None = None,
        tiers: Sequence[Tier] | None = None,
        filters: RecallFilters | None = None,
        include_history: bool = False,
    ) -> list[RecallHit]:
        """The best-matching facts current at ``as_of``."""
        ...

    def snapshot(self, tenant_id: str, user_id: str) -> MemorySnapshot:
        """Rules, facts, status and pending items of a user."""
        ...

    def history(
        self, tenant_id: str, user_id: str, subject: str, predicate: str
    ) -> list[RecallHit]:
        """The version chain of one (subject, predicate)."""
        ...

    def confirm(self, tenant_id: str, user_id: str, pending_id: str) -> ActionReceipt:
        """Publish a confirm_memory action; UnknownPendingError if not this user's."""
        ...

    def reject(self, tenant_id: str, user_id: str, pending_id: str) -> ActionReceipt:
        """Publish a reject_memory action; UnknownPendingError if not this user's."""
        ...

    def store(
        self,
        tenant_id: str,
        user_id: str,
        predicate: str,
        object: str,  # noqa: A002 - the service's parameter name
        subject: str = "user",
        polarity: Polarity = Polarity.AFFIRMED,
        kind: MemoryKind = MemoryKind.FACT,
        text: str = "",
        confidence: float | None = None,
    ) -> ActionReceipt:
        """Publish a store_memory action."""
        ...

    def forget(self, tenant_id: str, user_id: str) -> ActionReceipt:
        """Publish a forget_user action."""
        ...

    def context(self, tenant_id: str, user_id: str, query: str, k: int = 10) -> str:
        """The prompt-ready memory block for ``query``."""
        ...

    def hints(
        self, tenant_id: str, user_id: str | None = None, *, from_beginning: bool = False
    ) -> Generator[MemoryHint | None]:
        """Hints pushed for the tenant's user (or all its users); None on quiet polls."""
        ...


# FastAPI validates a JSON body as Python objects, where pydantic's lax mode would
# read 0 as false, true as 1.0 and a number as a time: the body's scalars are
# strict, so a body means exactly what its JSON Schema says. The Kafka input is
# validated the same way, with the same strict types (schemas/bounds.py).
JsonTime = Annotated[AwareDatetime, BeforeValidator(time_text)]


class RecallFiltersBody(RecallFilters):
    """RecallFilters read from JSON: ``since``/``until`` must be ISO 8601 strings."""

    @model_validator(mode="before")
    @classmethod
    def _times_are_text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for bound in ("since", "until"):
                time_text(data.get(bound))
        return data


class RecallRequest(Frozen):
    """A recall: the query, how many hits, at which time, over which tiers."""

    query: QueryText
    k: Annotated[TopK, Strict()] = 10
    as_of: JsonTime | None = Field(default=None, description="Default: now.")
    tiers: list[Tier] | None = Field(default=None, max_length=len(Tier))
    filters: RecallFiltersBody | None = None
    include_history: StrictBool = Field(default=False, description="Also closed versions.")


class StoreRequest(Frozen):
    """A memory an agent asks to add; the pipeline reviews it like any other fact."""

    predicate: Predicate
    object: ObjectText
    subject: Subject = "user"
    polarity: Polarity = Polarity.AFFIRMED
    kind: MemoryKind = MemoryKind.FACT
    text: StatementText = ""
    confidence: Annotated[float, Strict()] | None = Field(default=None, ge=0.0, le=1.0)


class ContextBlock(Frozen):
    """The prompt-ready memory block."""

    context: str


class Health(Frozen):
    """Liveness of the API process."""

    status: str = "ok"


class Problem(Frozen):
    """The body of every error answer."""

    detail: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or unknown API key."},
    413: {"model": Problem, "description": "Request body too large."},
    503: {"model": Problem, "description": "The event broker did not acknowledge."},
}
# FastAPI's answer to a body that is not JSON at all (e.g. not UTF-8).
_BAD_BODY: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "The body is not JSON."}
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No such pending item for this user."}
}

_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "Server-sent events: `id: <hint id>`, `event: hint`, `data: <MemoryHint "
        "JSON>` (schemas/json/memory.hints.schema.json); comment lines keep the connection.",
    }
}
FromStart = Annotated[
    bool,
    Query(description="Also the hints already on the topic (oldest first), not only new ones."),
]

_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <API key>`")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key.")


def _tenant(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header_key: Annotated[str | None, Security(_api_key_header)],
) -> str:
    """The tenant of the presented API key; 401 when missing, unknown or ambiguous."""
    key = presented_key(bearer, header_key, "API key")
    keyring: ApiKeyring = request.app.state.keyring
    tenant = keyring.tenant_for(key)
    if tenant is None:
        raise unauthorized("missing or unknown API key")
    return tenant


def _service(request: Request) -> MemoryQueries:
    service: MemoryQueries = request.app.state.service
    return service


Tenant = Annotated[str, Depends(_tenant)]
Service = Annotated[MemoryQueries, Depends(_service)]


class BodyLimit:
    """ASGI middleware: 413 for a body over ``max_bytes``, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse early on Content-Length; count streamed chunks otherwise."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _too_large(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, "request body too large")
            return message

        await self.app(scope, counted, send)


async def _too_large(scope: Scope, receive: Receive, send: Send) -> None:
    response = JSONResponse({"detail": "request body too large"}, status_code=413)
    await response(scope, receive, send)


def _add_routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["ops"])
    def healthz() -> Health:
        """Liveness: the process answers (no key needed, no store touched)."""
        return Health()

    # Plain (not async) handlers: FastAPI runs them on its worker threads, so a
    # recall waiting for MiniLM (its query batch) or a store never blocks the
    # event loop, and concurrent recalls reach the query batcher together.
    @app.post("/v1/users/{user_id}/recall", tags=["read"], responses=_ERRORS | _BAD_BODY)
    def recall(
        user_id: UserId, body: RecallRequest, tenant: Tenant, svc: Service
    ) -> list[RecallHit]:
        """The facts that best match the query, with score breakdown and sources."""
        return svc.recall(
            tenant,
            user_id,
            body.query,
            k=body.k,
            as_of=body.as_of,
            tiers=body.tiers,
            filters=body.filters,
            include_history=body.include_history,
        )

    @app.get("/v1/users/{user_id}/snapshot", tags=["read"], responses=_ERRORS)
    def snapshot(user_id: UserId, tenant: Tenant, svc: Service) -> MemorySnapshot:
        """Everything current about the user: rules, facts, status, pending items."""
        return svc.snapshot(tenant, user_id)

    @app.get("/v1/users/{user_id}/history", tags=["read"], responses=_ERRORS)
    def history(
        user_id: UserId,
        subject: Annotated[Subject, Query()],
        predicate: Annotated[Predicate, Query()],
        tenant: Tenant,
        svc: Service,
    ) -> list[RecallHit]:
        """Every version of one (subject, predicate), oldest first, with validity."""
        return svc.history(tenant, user_id, subject, predicate)

    @app.get("/v1/users/{user_id}/context", tags=["read"], responses=_ERRORS)
    def context(
        user_id: UserId,
        query: Annotated[QueryText, Query()],
        tenant: Tenant,
        svc: Service,
        k: Annotated[TopK, Query()] = 10,
    ) -> ContextBlock:
        """The prompt-ready memory block for the query (key / background / reference)."""
        return ContextBlock(context=svc.context(tenant, user_id, query, k))

    @app.get(
        "/v1/users/{user_id}/hints",
        tags=["read"],
        responses=_ERRORS | _STREAM,
        response_class=StreamingResponse,
    )
    def user_hints(
        user_id: UserId,
        tenant: Tenant,
        svc: Service,
        request: Request,
        from_beginning: FromStart = False,
    ) -> StreamingResponse:
        """Hints pushed for the user, as server-sent events (one `hint` event each)."""
        hints = svc.hints(tenant, user_id, from_beginning=from_beginning)
        return StreamingResponse(sse(hints, request.app.state.keepalive_s), media_type=MEDIA_TYPE)

    @app.get(
        "/v1/hints", tags=["read"], responses=_ERRORS | _STREAM, response_class=StreamingResponse
    )
    def tenant_hints(
        tenant: Tenant, svc: Service, request: Request, from_beginning: FromStart = False
    ) -> StreamingResponse:
        """Hints pushed for every user of the key's tenant, as server-sent events."""
        hints = svc.hints(tenant, None, from_beginning=from_beginning)
        return StreamingResponse(sse(hints, request.app.state.keepalive_s), media_type=MEDIA_TYPE)

    @app.post(
        "/v1/users/{user_id}/pending/{pending_id}/confirm",
        tags=["write"],
        status_code=202,
        responses=_ERRORS | _NOT_FOUND,
    )
    def confirm(
        user_id: UserId, pending_id: PendingId, tenant: Tenant, svc: Service
    ) -> ActionReceipt:
        """Confirm a pending item: a confirm_memory action the pipeline applies."""
        return svc.confirm(tenant, user_id, pending_id)

    @app.post(
        "/v1/users/{user_id}/pending/{pending_id}/reject",
        tags=["write"],
        status_code=202,
        responses=_ERRORS | _NOT_FOUND,
    )
    def reject(
        user_id: UserId, pending_id: PendingId, tenant: Tenant, svc: Service
    ) -> ActionReceipt:
        """Reject a pending item: a reject_memory action the pipeline applies."""
        return svc.reject(tenant, user_id, pending_id)

    @app.post(
        "/v1/users/{user_id}/memories",
        tags=["write"],
        status_code=202,
        responses=_ERRORS | _BAD_BODY,
    )
    def store(user_id: UserId, body: StoreRequest, tenant: Tenant, svc: Service) -> ActionReceipt:
        """Ask the pipeline to add a memory (reviewed like any fact; usually pending)."""
        return svc.store(tenant, user_id, **body.model_dump())

    @app.delete("/v1/users/{user_id}", tags=["write"], status_code=202, responses=_ERRORS)
    def forget(user_id: UserId, tenant: Tenant, svc: Service) -> ActionReceipt:
        """Erase the user from every tier (a forget_user action; an audit record stays)."""
        return svc.forget(tenant, user_id)


def _app() -> FastAPI:
    """The app's routes, error handlers and middleware, not yet bound to a service."""
    app = FastAPI(
        title="memstream",
        summary="Long-term memory for AI agents: recall, snapshot, history and memory actions.",
        version=API_VERSION,
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url=None,
    )
    app.add_middleware(BodyLimit)
    app.add_middleware(RequestMetrics)  # outermost: a 413 is counted too

    @app.exception_handler(UnknownPendingError)
    def _unknown_pending(_: Request, __: UnknownPendingError) -> JSONResponse:
        # One answer for unknown, resolved, lapsed and other tenants' ids alike.
        return JSONResponse({"detail": "no such pending item"}, status_code=404)

    @app.exception_handler(ValueError)
    def _bad_value(_: Request, exc: ValueError) -> JSONResponse:
        # The service layer's own argument checks (the request models catch most first).
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(DeliveryFailed)
    def _broker_down(_: Request, __: DeliveryFailed) -> JSONResponse:
        return JSONResponse({"detail": "event broker unavailable, retry"}, status_code=503)

    _add_routes(app)
    return app


def create_app(
    service: MemoryQueries,
    keys: ApiKeyring,
    sampler: LagSampler | None = None,
    readiness: Readiness | None = None,
    keepalive_s: float = 15.0,
) -> FastAPI:
    """The API over ``service``, every call scoped to the tenant of its key in ``keys``.

    With ``sampler`` (started by the caller) it also serves the dashboard and
    the lag gauges on ``/metrics``. ``/readyz`` probes ``readiness``, by default
    the stores and broker a ``MemoryService`` was opened on (none for others).
    ``keepalive_s``: the hint streams' comment line after that long without a hint
    (``settings.hints.keepalive_s``).
    """
    app = _app()
    app.state.service = service
    app.state.keyring = keys
    app.state.keepalive_s = keepalive_s
    if readiness is None:
        stores = service.stores if isinstance(service, MemoryService) else None
        readiness = Readiness(stores.probes if stores is not None else {})
    add_readiness(app, readiness)
    lag_gauges = None
    if sampler is not None:
        add_dashboard(app, sampler)
        # A registry of this app's own: two apps in one process (tests) must
        # not register the same gauges on the default registry twice.
        lag_gauges = CollectorRegistry()
        lag_gauges.register(LagCollector(sampler))
    add_metrics_route(app, lag_gauges)
    return app


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI document, built without a service or stores (for export, clients)."""
    return _app().openapi()
