"""MCP tools over the memory service: read, search, store, history, confirm.

Built with the official ``mcp`` SDK 1.x (``FastMCP``; 2.x renamed it, hence the
``mcp<2`` pin). One server serves one tenant: the tenant is resolved once, from
the API key the server is configured with, and no tool takes a tenant argument,
so an agent holding this server can only ever reach that tenant's users.
Arguments are validated by the same constrained types as the HTTP API
(``jobs.serve.api``), so a malformed id is a tool error before any store is read.

Tools run the (synchronous, I/O-bound) service in a worker thread so that one
slow recall does not stall the other sessions of an HTTP transport.

The streamable HTTP transport of mcp 1.x parses a body with ``json.loads`` and
answers a ``RecursionError`` (JSON nested a thousand deep) with a 500; such a
body is refused here with the 400 parse error every other unparseable body gets.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import PARSE_ERROR, ToolAnnotations
from pydantic import AwareDatetime, Field
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobs.serve.api import (
    MemoryQueries,
    ObjectText,
    PendingIdText,
    Predicate,
    QueryText,
    StatementText,
    Subject,
    TopK,
)
from jobs.serve.keys import ApiKeyError, ApiKeyring
from jobs.serve.memory_service import UnknownPendingError
from schemas._base import Identifier
from schemas.memory import MemoryKind, Polarity
from schemas.query import ActionReceipt, MemorySnapshot, RecallHit

SERVER_NAME = "memstream"
_INSTRUCTIONS = (
    "Long-term memory of this deployment's users. `search` recalls the facts that match "
    "a query (negations stay negations, each with its source); `read` lists everything "
    "current about a user, including items pending the user's confirmation; `history` "
    "shows how one fact changed over time; `store` asks the pipeline to remember something "
    "(it is reviewed, and usually waits for the user's confirmation); `confirm` confirms or "
    "rejects a pending item by its pending_id."
)
_READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

UserArg = Annotated[Identifier, Field(description="The user, within this server's tenant.")]


class _RefuseTooDeepJson:
    """ASGI middleware: a POST body nested past the JSON parser's recursion limit is a 400."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away mid-body
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            json.loads(body)
        except RecursionError:
            error = {"code": PARSE_ERROR, "message": "Parse error: nested too deeply"}
            refusal = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
            await refusal(scope, receive, send)
            return
        except ValueError:
            pass  # the transport answers every other unparseable body itself
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class _MemstreamMCP(FastMCP):
    def streamable_http_app(self) -> Starlette:
        app = super().streamable_http_app()
        app.add_middleware(_RefuseTooDeepJson)
        return app


def build_mcp_server(service: MemoryQueries, tenant_id: str, *, host: str, port: int) -> FastMCP:
    """A FastMCP server whose tools all act on ``tenant_id``.

    ``host``/``port`` are where the HTTP transports listen (stdio ignores them).
    """
    server = _MemstreamMCP(SERVER_NAME, instructions=_INSTRUCTIONS, host=host, port=port)

    @server.tool(annotations=_READ_ONLY)
    async def search(
        user_id: UserArg,
        query: QueryText,
        k: TopK = 10,
        as_of: Annotated[
            AwareDatetime | None, Field(description="ISO 8601; facts as they were then.")
        ] = None,
    ) -> list[RecallHit]:
        """Recall the user's facts that best match `query`, best first, with sources."""
        call = partial(service.recall, tenant_id, user_id, query, k=k, as_of=as_of)
        return await anyio.to_thread.run_sync(call)

    @server.tool(annotations=_READ_ONLY)
    async def read(user_id: UserArg) -> MemorySnapshot:
        """Everything current about the user: rules, facts, status and pending items."""
        return await anyio.to_thread.run_sync(service.snapshot, tenant_id, user_id)

    @server.tool(annotations=_READ_ONLY)
    async def history(user_id: UserArg, subject: Subject, predicate: Predicate) -> list[RecallHit]:
        """Every version of one fact (subject, predicate), oldest first, with validity."""
        return await anyio.to_thread.run_sync(
            service.history, tenant_id, user_id, subject, predicate
        )

    @server.tool(annotations=_WRITE)
    async def store(
        user_id: UserArg,
        predicate: Predicate,
        object: ObjectText,  # noqa: A002 - the triple's field name everywhere in memstream
        subject: Subject = "user",
        polarity: Polarity = Polarity.AFFIRMED,
        kind: MemoryKind = MemoryKind.FACT,
        text: StatementText = "",
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    ) -> ActionReceipt:
        """Ask the pipeline to remember a fact about the user (reviewed; usually pending)."""
        call = partial(
            service.store,
            tenant_id,
            user_id,
            predicate,
            object,
            subject=subject,
            polarity=polarity,
            kind=kind,
            text=text,
            confidence=confidence,
        )
        return await anyio.to_thread.run_sync(call)

    @server.tool(annotations=_WRITE)
    async def confirm(
        user_id: UserArg,
        pending_id: Annotated[PendingIdText, Field(description="From `read`'s pending list.")],
        decision: Literal["confirm", "reject"] = "confirm",
    ) -> ActionReceipt:
        """Confirm (or reject) an item pending the user's confirmation."""
        resolve = service.confirm if decision == "confirm" else service.reject
        try:
            return await anyio.to_thread.run_sync(resolve, tenant_id, user_id, pending_id)
        except UnknownPendingError:
            # The same answer for unknown, resolved and other tenants' ids.
            raise ToolError("no such pending item") from None

    return server


def mcp_server_for_key(
    service: MemoryQueries,
    keys: ApiKeyring,
    api_key: str,
    *,
    host: str,
    port: int,
) -> FastMCP:
    """The server for the tenant of ``api_key``; ApiKeyError if the key is unknown."""
    tenant = keys.tenant_for(api_key)
    if tenant is None:
        raise ApiKeyError("the MCP server's API key is not a configured key")
    return build_mcp_server(service, tenant, host=host, port=port)
