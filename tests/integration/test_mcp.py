"""The MCP tools driven by the SDK's own client: in memory, and via the CLI over stdio and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from api_helpers import SeededUser, call_tools, list_tools, new_key, published_action, seed_user
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolResult
from tier_ops import T0, T1

from jobs.serve.mcp_server import build_mcp_server
from jobs.serve.memory_service import MAX_K, MemoryService, MemoryStores
from memstream.settings import Settings
from schemas.events import ActionType
from schemas.query import ActionReceipt, MemorySnapshot, RecallHit

USER = "u1"
TOOLS = {"read", "search", "store", "history", "confirm"}
# A CLI server loads MiniLM and connects to every store before answering.
SERVER_START_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def stores(settings: Settings) -> MemoryStores:
    return MemoryStores.open(settings)


@pytest.fixture(scope="module")
def seeded(stores: MemoryStores) -> SeededUser:
    tenant = f"mcp-{uuid.uuid4().hex[:10]}"
    return seed_user(stores, tenant, USER, label=f"s{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="module")
def server(stores: MemoryStores, seeded: SeededUser) -> FastMCP:
    return build_mcp_server(MemoryService(stores=stores), seeded.tenant, host="127.0.0.1", port=0)


def call(server: FastMCP, name: str, **arguments: Any) -> CallToolResult:
    (result,) = call_tools(server, [(name, arguments)])
    return result


def structured(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    assert result.structuredContent is not None
    return result.structuredContent


def test_lists_the_five_tools_with_hints(server: FastMCP) -> None:
    tools = {tool.name: tool for tool in list_tools(server)}
    assert set(tools) == TOOLS
    for name in ("read", "search", "history"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.readOnlyHint is True
    for name in ("store", "confirm"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.readOnlyHint is False
    assert tools["search"].inputSchema["properties"]["k"]["maximum"] == MAX_K
    assert tools["confirm"].outputSchema is not None


def test_search_recalls_the_users_facts(server: FastMCP, seeded: SeededUser) -> None:
    hits = [
        RecallHit.model_validate(h)
        for h in structured(call(server, "search", user_id=USER, query="tea", k=MAX_K))["result"]
    ]
    assert f"{seeded.label} tea" in {h.object for h in hits}
    old = structured(
        call(
            server,
            "search",
            user_id=USER,
            query="phone",
            k=MAX_K,
            as_of=(T0 + (T1 - T0) / 2).isoformat(),
        )
    )["result"]
    assert {h["object"] for h in old if h["predicate"] == "phone_number"} == {"555-0100"}


def test_read_returns_the_snapshot(server: FastMCP, seeded: SeededUser) -> None:
    snapshot = MemorySnapshot.model_validate(structured(call(server, "read", user_id=USER)))
    assert snapshot.tenant_id == seeded.tenant
    assert [p.pending_id for p in snapshot.pending] == [seeded.pending_id]
    assert snapshot.status == {"current_project": seeded.label}


def test_history_returns_the_version_chain(server: FastMCP, seeded: SeededUser) -> None:
    result = call(server, "history", user_id=USER, subject="user", predicate="phone_number")
    chain = [RecallHit.model_validate(h) for h in structured(result)["result"]]
    assert [h.fact_id for h in chain] == [seeded.fact_ids[2], seeded.fact_ids[3]]


def test_store_publishes_a_store_memory_action(
    server: FastMCP, seeded: SeededUser, kafka_bootstrap: str
) -> None:
    result = call(
        server, "store", user_id=USER, predicate="likes", object="jazz", kind="preference"
    )
    key, event = published_action(kafka_bootstrap, ActionReceipt.model_validate(structured(result)))
    assert key == f"{seeded.tenant}:{USER}"
    assert event.action_type is ActionType.STORE_MEMORY
    assert (event.properties["object"], event.properties["kind"]) == ("jazz", "preference")


@pytest.mark.parametrize(
    ("decision", "action"),
    [("confirm", ActionType.CONFIRM_MEMORY), ("reject", ActionType.REJECT_MEMORY)],
)
def test_confirm_publishes_the_decision(
    server: FastMCP, seeded: SeededUser, kafka_bootstrap: str, decision: str, action: ActionType
) -> None:
    result = call(server, "confirm", user_id=USER, pending_id=seeded.pending_id, decision=decision)
    _, event = published_action(kafka_bootstrap, ActionReceipt.model_validate(structured(result)))
    assert (event.action_type, event.target_id) == (action, seeded.pending_id)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("confirm", {"user_id": USER, "pending_id": f"f_{'0' * 24}"}),
        ("confirm", {"user_id": USER, "pending_id": "*"}),
        ("search", {"user_id": USER, "query": "tea", "k": 0}),
        ("search", {"user_id": "u1:*", "query": "tea"}),
        ("history", {"user_id": USER, "subject": "", "predicate": "x"}),
        ("store", {"user_id": USER, "predicate": "likes"}),
    ],
)
def test_bad_arguments_are_tool_errors(
    server: FastMCP, name: str, arguments: dict[str, Any]
) -> None:
    result = call(server, name, **arguments)
    assert result.isError


@pytest.fixture
def cli_args(seeded: SeededUser, tmp_path: Path) -> list[str]:
    """``memstream mcp`` run by this interpreter, with a key of the seeded tenant."""
    key = new_key()
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({key: seeded.tenant}))
    key_file = tmp_path / "key"
    key_file.write_text(key + "\n")
    return [
        "-c",
        "import typer; from jobs.cli.serve import mcp; typer.run(mcp)",
        "--key-file",
        str(key_file),
        "--keys-file",
        str(keys_file),
    ]


async def tools_and_read(session: ClientSession) -> tuple[set[str], CallToolResult]:
    await session.initialize()
    names = {tool.name for tool in (await session.list_tools()).tools}
    return names, await session.call_tool("read", {"user_id": USER})


def assert_served_the_seeded_tenant(
    answer: tuple[set[str], CallToolResult], seeded: SeededUser
) -> None:
    names, result = answer
    assert names == TOOLS
    snapshot = MemorySnapshot.model_validate(structured(result))
    assert (snapshot.tenant_id, snapshot.status) == (
        seeded.tenant,
        {"current_project": seeded.label},
    )


def test_stdio_server_from_the_cli(seeded: SeededUser, cli_args: list[str]) -> None:
    # The whole environment, so the offline flags and MEMSTREAM_* reach the server.
    params = StdioServerParameters(command=sys.executable, args=cli_args, env=dict(os.environ))

    async def session_run() -> tuple[set[str], CallToolResult]:
        with anyio.fail_after(SERVER_START_TIMEOUT_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                return await tools_and_read(s)

    assert_served_the_seeded_tenant(anyio.run(session_run), seeded)


def test_streamable_http_server_from_the_cli(seeded: SeededUser, cli_args: list[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port for the server
        port = probe.getsockname()[1]
    args = [*cli_args, "--transport", "streamable-http", "--port", str(port)]
    server = subprocess.Popen([sys.executable, *args], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            assert server.poll() is None and time.monotonic() < deadline, "no MCP server"
            try:
                httpx.get(url)
                break
            except httpx.TransportError:
                time.sleep(0.2)

        async def session_run() -> tuple[set[str], CallToolResult]:
            async with (
                streamablehttp_client(url) as (read, write, _),
                ClientSession(read, write) as s,
            ):
                return await tools_and_read(s)

        assert_served_the_seeded_tenant(anyio.run(session_run), seeded)
    finally:
        server.terminate()
        server.wait(timeout=30)
