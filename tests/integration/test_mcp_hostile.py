"""Every MCP tool argument under the hostile inputs of the HTTP suite, over the real transport.

``memstream mcp`` runs as its own process on streamable HTTP, keyed to tenant
A; tenants A and B are seeded in the real stores (B has A's user id ``shared``
and one of its own). Each tool is called with every argument its input schema
lists replaced, one at a time, by each value of ``hostile_inputs`` (injection
strings, odd ids, B's tenant, user, pending and fact ids, oversized and wrongly
typed values), and with arguments it does not take. After every call the
server must still be running and answer a ping; every answer must be a result
or a clean tool error (the argument refused, or the tool's own "no such
pending item"), never an internal error passed through; nothing of B may appear
in any answer and nothing may be published for B. Raw HTTP bodies the SDK
client cannot produce (nesting past any parser, lone surrogates, non-JSON)
are sent to the same endpoint. The probes are checked to be able to fail: the
base calls with A's own ids return A's memory.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from api_helpers import SeededUser, leaked, new_key, seed_user
from hostile_inputs import (
    B_ONLY,
    GUESSED_PENDING,
    INJECTIONS,
    ODD_VALID_USERS,
    SHARED,
    WRONG_TYPES,
    oversized,
)
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.types import CallToolResult, TextContent

from connectors.kafka_io import end_offsets, read_topic
from jobs.serve.memory_service import MAX_K, MemoryService, MemoryStores
from memstream.settings import Settings
from schemas.events import UserAction
from schemas.topics import USER_ACTIONS

# A CLI server loads MiniLM and connects to every store before answering.
SERVER_START_TIMEOUT_S = 120
# One tool call over real stores; far beyond any normal answer, it only turns a hang into a failure.
CALL_TIMEOUT_S = 60
# Valid arguments of each tool, for A's own user: the call every hostile one is a variation of.
BASE_CALLS: dict[str, dict[str, Any]] = {
    "search": {"user_id": SHARED, "query": "tea phone vegan weekend", "k": MAX_K},
    "read": {"user_id": SHARED},
    "history": {"user_id": SHARED, "subject": "user", "predicate": "phone_number"},
    "store": {"user_id": SHARED, "predicate": "likes", "object": "jazz"},
    "confirm": {"user_id": SHARED, "pending_id": GUESSED_PENDING},
}
# The answers a refused call may carry: argument validation (the SDK's schema check or
# pydantic's), or the tool's own refusal. Anything else is an exception passed through.
CLEAN_ERRORS = ("Input validation error:", "validation error for", "no such pending item")


@dataclass(frozen=True)
class McpServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@pytest.fixture(scope="module")
def stores(settings: Settings) -> MemoryStores:
    return MemoryStores.open(settings)


@pytest.fixture(scope="module")
def tenants(stores: MemoryStores) -> dict[str, list[SeededUser]]:
    run = uuid.uuid4().hex[:8]
    a, b = f"mcph-a-{run}", f"mcph-b-{run}"
    return {
        "a": [seed_user(stores, a, SHARED, f"alpha{run}")],
        "b": [
            seed_user(stores, b, SHARED, f"bravo{run}"),
            seed_user(stores, b, B_ONLY, f"b2{run}"),
        ],
    }


@pytest.fixture(scope="module")
def server(
    tenants: dict[str, list[SeededUser]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    """``memstream mcp`` over streamable HTTP with A's key, B's key also configured."""
    folder = tmp_path_factory.mktemp("mcp-hostile")
    keys = {new_key(): users[0].tenant for users in tenants.values()}
    (folder / "keys.json").write_text(json.dumps(keys))
    a_key = next(k for k, t in keys.items() if t == tenants["a"][0].tenant)
    (folder / "key").write_text(a_key + "\n")
    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port for the server
        port = probe.getsockname()[1]
    args = [
        "-c",
        "import typer; from jobs.cli.serve import mcp; typer.run(mcp)",
        "--key-file",
        str(folder / "key"),
        "--keys-file",
        str(folder / "keys.json"),
        "--transport",
        "streamable-http",
        "--port",
        str(port),
    ]
    log = folder / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, *args], stdout=sink, stderr=sink)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "no MCP server"
            try:
                httpx.get(url)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        yield McpServer(url, process, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


def b_markers(tenants: dict[str, list[SeededUser]]) -> list[str]:
    return [marker for user in tenants["b"] for marker in user.markers]


def hostile_values(tenants: dict[str, list[SeededUser]]) -> list[Any]:
    """Every hostile value, B's own ids and labels among them."""
    b_ids = [tenants["b"][0].tenant, B_ONLY] + b_markers(tenants)
    return [*INJECTIONS, *ODD_VALID_USERS, *b_ids, *oversized(), *WRONG_TYPES]


def unclean(result: CallToolResult) -> str | None:
    """Why ``result`` is neither a result nor a clean tool error (None when it is one)."""
    if not result.isError:
        return None if result.structuredContent is not None else "a result without content"
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    if len(texts) != len(result.content) or not texts:
        return f"an error without text: {result.content!r}"[:300]
    if not any(marker in text for text in texts for marker in CLEAN_ERRORS):
        return f"an internal error: {texts}"[:300]
    return None


def run_calls(
    server: McpServer, calls: list[tuple[str, dict[str, Any]]], forbidden: list[str]
) -> tuple[list[CallToolResult], list[str]]:
    """Each call in one session, the server checked alive after each; the answers and failures."""
    failures: list[str] = []
    results: list[CallToolResult] = []

    async def session_run() -> None:
        async with (
            streamablehttp_client(server.url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for name, arguments in calls:
                label = f"{name}({_short(arguments)})"
                try:
                    with anyio.fail_after(CALL_TIMEOUT_S):
                        result = await session.call_tool(name, arguments)
                except Exception as exc:  # a protocol error instead of a tool result
                    failures.append(f"{label}: raised {exc!r}"[:300])
                    results.append(CallToolResult(content=[], isError=True))
                else:
                    results.append(result)
                    if (why := unclean(result)) is not None:
                        failures.append(f"{label}: {why}")
                    body, sent = result.model_dump_json(), json.dumps(arguments)
                    # A value echoed back (a snapshot names its user) is not a leak; B's
                    # other markers, which a leak of B's memory would carry, still count.
                    if leak := [m for m in forbidden if m in body and m not in sent]:
                        failures.append(f"{label}: leaked {leak}")
                if server.process.poll() is not None:
                    failures.append(f"{label}: the server exited")
                    return
                with anyio.fail_after(CALL_TIMEOUT_S):
                    await session.send_ping()

    anyio.run(session_run)
    return results, failures


def _short(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={str(v)[:40]!r}" for k, v in arguments.items())


def tool_arguments(server: McpServer) -> dict[str, list[str]]:
    """Each tool's argument names, as its input schema lists them to a client."""

    async def listed() -> dict[str, list[str]]:
        async with (
            streamablehttp_client(server.url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            return {t.name: list(t.inputSchema["properties"]) for t in tools}

    return anyio.run(listed)


def assert_b_intact(stores: MemoryStores, tenants: dict[str, list[SeededUser]]) -> None:
    """B's facts and pending items are all still there, untouched by A's calls."""
    service = MemoryService(stores=stores)
    for user in tenants["b"]:
        snapshot = service.snapshot(user.tenant, user.user)
        assert [p.pending_id for p in snapshot.pending] == [user.pending_id]
        assert {user.fact_ids[0], user.fact_ids[1], user.fact_ids[3]} <= {
            h.fact_id for h in snapshot.rules + snapshot.facts
        }
        assert leaked(snapshot.model_dump_json(), tenants["a"][0]) == []


def test_every_tool_argument_takes_every_hostile_value(
    server: McpServer,
    tenants: dict[str, list[SeededUser]],
    stores: MemoryStores,
    kafka_bootstrap: str,
) -> None:
    arguments = tool_arguments(server)
    assert set(arguments) == set(BASE_CALLS)
    b_tenant = tenants["b"][0].tenant
    calls: list[tuple[str, dict[str, Any]]] = [(n, base) for n, base in BASE_CALLS.items()]
    for name, base in BASE_CALLS.items():
        for argument in arguments[name]:
            calls += [(name, {**base, argument: v}) for v in hostile_values(tenants)]
        # Arguments no tool takes: a tenant beside the server's, and an unknown one.
        calls += [(name, {**base, "tenant_id": b_tenant}), (name, {**base, "x" * 1000: 1})]
    before = end_offsets(kafka_bootstrap, USER_ACTIONS)
    results, failures = run_calls(server, calls, b_markers(tenants))
    assert failures == [], "\n".join(failures[:50]) + f"\n({len(failures)} in all)\n"
    # The probe can fail: A's own base calls do show A's memory.
    own = tenants["a"][0].label
    base = dict(zip(BASE_CALLS, results, strict=False))
    for name in ("search", "read"):
        assert own in json.dumps(base[name].structuredContent), name
    published = read_topic(kafka_bootstrap, USER_ACTIONS, start=before, idle_s=0.5)
    tenants_written = {UserAction.model_validate_json(r.value).tenant_id for r in published}
    assert b_tenant not in tenants_written
    assert_b_intact(stores, tenants)


def test_b_ids_reach_nothing_of_b(server: McpServer, tenants: dict[str, list[SeededUser]]) -> None:
    # The id arguments with B's ids only, each asked as broadly as the tool allows.
    calls: list[tuple[str, dict[str, Any]]] = []
    for user in (SHARED, B_ONLY, tenants["b"][0].tenant, *ODD_VALID_USERS):
        calls += [
            ("search", {"user_id": user, "query": "tea phone vegan weekend", "k": MAX_K}),
            ("read", {"user_id": user}),
            *[
                ("history", {"user_id": user, "subject": "user", "predicate": p})
                for p in ("phone_number", "likes", "diet")
            ],
            *[
                ("confirm", {"user_id": user, "pending_id": u.pending_id, "decision": d})
                for u in tenants["b"]
                for d in ("confirm", "reject")
            ],
        ]
    # B's labels as queries: the closest match of B's memory is still not A's to see.
    calls += [("search", {"user_id": SHARED, "query": u.label, "k": MAX_K}) for u in tenants["b"]]
    results, failures = run_calls(server, calls, b_markers(tenants))
    assert failures == [], "\n".join(failures[:50])
    for (name, _), result in zip(calls, results, strict=True):
        if name == "confirm":  # B's pending ids are unknown to A, exactly like guessed ones
            assert result.isError and "no such pending item" in str(result.content)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "application/json"),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' * 5_000, "application/json"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud800"}}', "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (b"not json at all", "text/plain"),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}).encode(), ""),
        (b"x" * 5_000_000, "application/json"),
    ],
    ids=["deep-arrays", "deep-objects", "lone-surrogate", "bad-utf8", "text", "no-type", "5mb"],
)
def test_raw_bodies_no_client_would_send(
    server: McpServer, tenants: dict[str, list[SeededUser]], body: bytes, content_type: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if content_type:
        headers["Content-Type"] = content_type
    response = httpx.post(server.url, content=body, headers=headers, timeout=CALL_TIMEOUT_S)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert [m for m in b_markers(tenants) if m in response.text] == []
    # Alive, and still serving a real session.
    assert server.process.poll() is None
    results, failures = run_calls(server, [("read", BASE_CALLS["read"])], b_markers(tenants))
    assert failures == [] and tenants["a"][0].label in json.dumps(results[0].structuredContent)
