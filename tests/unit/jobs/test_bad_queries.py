"""Bad queries get a clear 4xx or an empty result, never a 500: SDK, HTTP and MCP alike."""

from __future__ import annotations

import anyio
import pytest
from fastapi.testclient import TestClient
from memory_ops import T0, record, upsert

from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.mcp_server import build_mcp_server
from jobs.serve.memory_service import MAX_QUERY_CHARS, MemoryService, MemoryStores
from memstream.sdk import MemoryClient
from memstream.testing import HashingEmbedder, InMemoryStores, RecordingPublisher

KEY = "unit-test-api-key-0123456789"
# (query, what the service does): "empty" -> no hits, "refused" -> ValueError / 422.
BAD = [
    ("", "refused"),
    ("   \n\t ", "refused"),
    ("x" * 100_000, "refused"),
    ("what is the and of it?", "empty"),  # stop words only
    ("🙂🙂🎉", "empty"),
    ("我的电话号码是多少", "empty"),
]


@pytest.fixture
def service() -> MemoryService:
    tiers = InMemoryStores.create(clock=lambda: T0)
    for store in tiers:
        store.write([upsert(record("f1", "monday"))])
        store.flush()
    stores = MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=RecordingPublisher(),
    )
    return MemoryService(stores=stores, clock=lambda: T0)


def test_a_good_query_finds_the_fact(service: MemoryService) -> None:
    assert [h.fact_id for h in service.recall("acme", "u1", "which day? monday")] == ["f1"]


@pytest.mark.parametrize(("query", "outcome"), BAD)
def test_the_sdk(service: MemoryService, query: str, outcome: str) -> None:
    client = MemoryClient.in_process(service, tenant_id="acme")
    if outcome == "refused":
        with pytest.raises(ValueError, match="query"):
            client.recall("u1", query)
    else:
        assert client.recall("u1", query) == []
    assert len(query) <= MAX_QUERY_CHARS or outcome == "refused"


@pytest.mark.parametrize(("query", "outcome"), BAD)
def test_http(service: MemoryService, query: str, outcome: str) -> None:
    app = create_app(service, ApiKeyring({KEY: "acme"}))
    with TestClient(app, raise_server_exceptions=False) as http:
        response = http.post(
            "/v1/users/u1/recall", json={"query": query}, headers={"X-API-Key": KEY}
        )
        # A 100 KB query does not fit a URL (the client refuses it): the body route only.
        context = (
            http.get("/v1/users/u1/context", params={"query": query}, headers={"X-API-Key": KEY})
            if len(query) < 8_000
            else None
        )
    for answer in (response, context):
        if answer is not None and outcome == "refused":  # 422, or 413 for a 100 KB body
            assert 400 <= answer.status_code < 500 and "detail" in answer.json()
        elif answer is not None:
            assert answer.status_code == 200
    if outcome == "empty":
        assert response.json() == []


@pytest.mark.parametrize(("query", "outcome"), BAD)
def test_mcp(service: MemoryService, query: str, outcome: str) -> None:
    server = build_mcp_server(service, "acme", host="127.0.0.1", port=0)

    async def call() -> object:
        return await server.call_tool("search", {"user_id": "u1", "query": query})

    if outcome == "refused":
        with pytest.raises(Exception, match="(?i)query|string|validation"):
            anyio.run(call)
    else:
        result = anyio.run(call)
        assert "f1" not in str(result)
