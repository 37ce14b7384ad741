"""The HTTP API against the real stores and broker: every endpoint, auth and validation."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import SeededUser, new_key, published_action, seed_user
from fastapi.testclient import TestClient
from tier_ops import T0, T1

from jobs.serve.api import MAX_BODY_BYTES, MAX_QUERY_CHARS, create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MAX_K, MemoryService, MemoryStores
from memstream.settings import Settings
from schemas.events import ActionType
from schemas.query import ActionReceipt, MemorySnapshot, RecallHit

USER = "u1"
# The server loads MiniLM and connects to every store before it listens.
SERVE_START_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def stores(settings: Settings) -> MemoryStores:
    return MemoryStores.open(settings)


@pytest.fixture(scope="module")
def seeded(stores: MemoryStores) -> SeededUser:
    tenant = f"api-{uuid.uuid4().hex[:10]}"
    return seed_user(stores, tenant, USER, label=f"s{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="module")
def key(seeded: SeededUser) -> str:
    return new_key()


@pytest.fixture(scope="module")
def client(stores: MemoryStores, seeded: SeededUser, key: str) -> Iterator[TestClient]:
    app = create_app(MemoryService(stores=stores), ApiKeyring({key: seeded.tenant}))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as test_client:
        yield test_client


def recall(client: TestClient, **body: object) -> list[RecallHit]:
    response = client.post(f"/v1/users/{USER}/recall", json={"query": "tea", **body})
    assert response.status_code == 200, response.text
    return [RecallHit.model_validate(hit) for hit in response.json()]


ENDPOINTS = [
    ("POST", f"/v1/users/{USER}/recall", {"query": "tea"}),
    ("GET", f"/v1/users/{USER}/snapshot", None),
    ("GET", f"/v1/users/{USER}/history?subject=user&predicate=phone_number", None),
    ("GET", f"/v1/users/{USER}/context?query=tea", None),
    ("POST", f"/v1/users/{USER}/pending/f_{'0' * 24}/confirm", None),
    ("POST", f"/v1/users/{USER}/pending/f_{'0' * 24}/reject", None),
    ("POST", f"/v1/users/{USER}/memories", {"predicate": "likes", "object": "jazz"}),
    ("DELETE", f"/v1/users/{USER}", None),
    # Server-sent events: refused before any stream starts (test_hint_subscribers.py streams).
    ("GET", f"/v1/users/{USER}/hints", None),
    ("GET", "/v1/hints", None),
]


def test_health_and_openapi_need_no_key(client: TestClient) -> None:
    bare = TestClient(client.app)
    assert bare.get("/healthz").json() == {"status": "ok"}
    spec = bare.get("/openapi.json").json()
    assert {path for path in spec["paths"] if path.startswith("/v1/")} == {
        path.split("?")[0].replace(USER, "{user_id}").replace(f"f_{'0' * 24}", "{pending_id}")
        for _, path, _ in ENDPOINTS
    }
    assert set(spec["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader"}
    docs = bare.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer " + "x" * 32},
        {"X-API-Key": "x" * 32},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
    ids=["none", "unknown-bearer", "unknown-header", "basic"],
)
def test_every_v1_endpoint_needs_a_known_key(
    client: TestClient, method: str, path: str, body: object, headers: dict[str, str]
) -> None:
    bare = TestClient(client.app)
    response = bare.request(method, path, json=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_two_different_keys_in_one_request_are_refused(client: TestClient, key: str) -> None:
    headers = {"X-API-Key": new_key()}
    assert client.get(f"/v1/users/{USER}/snapshot", headers=headers).status_code == 401
    same = client.get(f"/v1/users/{USER}/snapshot", headers={"X-API-Key": key})
    assert same.status_code == 200


def test_x_api_key_header_works_like_bearer(client: TestClient, key: str) -> None:
    bare = TestClient(client.app)
    response = bare.get(f"/v1/users/{USER}/snapshot", headers={"X-API-Key": key})
    assert response.status_code == 200
    assert response.json()["user_id"] == USER


def test_recall_returns_scored_sourced_hits_with_negation_kept(
    client: TestClient, seeded: SeededUser
) -> None:
    hits = recall(client, k=MAX_K)
    by_id = {hit.fact_id: hit for hit in hits}
    likes, weekend, closed_phone, phone = seeded.fact_ids
    assert {likes, weekend, phone} <= set(by_id)
    assert closed_phone not in by_id  # closed at T1: not current now
    assert by_id[likes].object == f"{seeded.label} tea"
    assert by_id[likes].score is not None and by_id[likes].lineage is not None
    assert by_id[likes].lineage.event_id == f"{USER}-{seeded.label}-1"
    rule = by_id[weekend]
    assert rule.polarity == "negated"
    assert "not" in rule.statement.lower().split()


def test_recall_as_of_travels_the_version_chain(client: TestClient) -> None:
    before = recall(client, query="phone number", k=MAX_K, as_of=(T0 + (T1 - T0) / 2).isoformat())
    now = recall(client, query="phone number", k=MAX_K)
    phones = [{h.object for h in hits if h.predicate == "phone_number"} for hits in (before, now)]
    assert phones == [{"555-0100"}, {"555-0199"}]


def test_recall_history_and_filters(client: TestClient) -> None:
    everything = recall(client, query="phone number", k=MAX_K, include_history=True)
    assert {h.object for h in everything if h.predicate == "phone_number"} == {
        "555-0100",
        "555-0199",
    }
    only_rules = recall(client, k=MAX_K, filters={"kinds": ["rule"]})
    assert only_rules and {h.kind for h in only_rules} == {"rule"}
    tagged = recall(client, k=MAX_K, filters={"tags": {"predicate": "likes"}})
    assert tagged and {h.predicate for h in tagged} == {"likes"}


def test_snapshot_lists_rules_facts_status_pending(client: TestClient, seeded: SeededUser) -> None:
    response = client.get(f"/v1/users/{USER}/snapshot")
    assert response.status_code == 200
    snap = MemorySnapshot.model_validate(response.json())
    assert snap.tenant_id == seeded.tenant
    assert [h.fact_id for h in snap.rules] == [seeded.fact_ids[1]]
    assert {seeded.fact_ids[0], seeded.fact_ids[3]} <= {h.fact_id for h in snap.facts}
    assert snap.status == {"current_project": seeded.label}
    assert [p.pending_id for p in snap.pending] == [seeded.pending_id]


def test_history_is_the_chain_oldest_first(client: TestClient, seeded: SeededUser) -> None:
    response = client.get(
        f"/v1/users/{USER}/history", params={"subject": "user", "predicate": "phone_number"}
    )
    assert response.status_code == 200
    chain = [RecallHit.model_validate(hit) for hit in response.json()]
    assert [h.fact_id for h in chain] == [seeded.fact_ids[2], seeded.fact_ids[3]]
    assert chain[0].valid_until == T1 and chain[1].valid_until is None


def test_context_is_a_prompt_block_with_the_facts(client: TestClient, seeded: SeededUser) -> None:
    response = client.get(f"/v1/users/{USER}/context", params={"query": "tea", "k": 5})
    assert response.status_code == 200
    assert f"{seeded.label} tea" in response.json()["context"]


@pytest.mark.parametrize(
    ("verb", "action"),
    [("confirm", ActionType.CONFIRM_MEMORY), ("reject", ActionType.REJECT_MEMORY)],
)
def test_confirm_and_reject_publish_the_action(
    client: TestClient, seeded: SeededUser, kafka_bootstrap: str, verb: str, action: ActionType
) -> None:
    response = client.post(f"/v1/users/{USER}/pending/{seeded.pending_id}/{verb}")
    assert response.status_code == 202, response.text
    receipt = ActionReceipt.model_validate(response.json())
    key, event = published_action(kafka_bootstrap, receipt)
    assert key == f"{seeded.tenant}:{USER}"
    assert (event.action_type, event.target_id, event.tenant_id) == (
        action,
        seeded.pending_id,
        seeded.tenant,
    )


def test_confirm_of_an_unknown_pending_id_is_404(client: TestClient) -> None:
    response = client.post(f"/v1/users/{USER}/pending/f_{'ab' * 12}/confirm")
    assert response.status_code == 404
    assert response.json() == {"detail": "no such pending item"}


def test_store_publishes_a_store_memory_event(
    client: TestClient, seeded: SeededUser, kafka_bootstrap: str
) -> None:
    body = {"predicate": "likes", "object": "jazz", "polarity": "negated", "confidence": 0.6}
    response = client.post(f"/v1/users/{USER}/memories", json=body)
    assert response.status_code == 202, response.text
    key, event = published_action(kafka_bootstrap, ActionReceipt.model_validate(response.json()))
    assert key == f"{seeded.tenant}:{USER}"
    assert event.action_type is ActionType.STORE_MEMORY
    assert {k: event.properties[k] for k in body} == body


def test_forget_publishes_a_forget_user_event(
    client: TestClient, seeded: SeededUser, kafka_bootstrap: str
) -> None:
    response = client.delete(f"/v1/users/{USER}")
    assert response.status_code == 202, response.text
    key, event = published_action(kafka_bootstrap, ActionReceipt.model_validate(response.json()))
    assert key == f"{seeded.tenant}:{USER}"
    assert event.action_type is ActionType.FORGET_USER


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x" * (MAX_QUERY_CHARS + 1)},
        {"query": "tea", "k": 0},
        {"query": "tea", "k": MAX_K + 1},
        {"query": "tea", "tiers": ["cold"]},
        {"query": "tea", "as_of": "2026-01-01T00:00:00"},  # naive time
        {"query": "tea", "filters": {"tags": {"fact_id": "x"}}},
        {"query": "tea", "filters": {"session_id": "s1:*"}},
        {
            "query": "tea",
            "filters": {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        },
        {"query": "tea", "tenant_id": "other"},  # unknown fields are errors, not ignored
    ],
)
def test_invalid_recall_is_422(client: TestClient, body: dict[str, object]) -> None:
    assert client.post(f"/v1/users/{USER}/recall", json=body).status_code == 422


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/users/u1:x/snapshot"),
        ("GET", f"/v1/users/{'u' * 65}/snapshot"),
        ("GET", "/v1/users/u1/history?subject=&predicate=x"),
        ("GET", f"/v1/users/u1/history?subject=user&predicate={'p' * 129}"),
        ("GET", "/v1/users/u1/context?query=tea&k=0"),
        ("POST", "/v1/users/u1/pending/f_xyz/confirm"),
        ("POST", f"/v1/users/u1/pending/c_{'0' * 24}/reject"),
    ],
)
def test_invalid_path_and_query_parameters_are_422(
    client: TestClient, method: str, path: str
) -> None:
    assert client.request(method, path).status_code == 422


def test_oversized_body_is_413(client: TestClient) -> None:
    body = {"query": "tea", "padding": "x" * MAX_BODY_BYTES}
    assert client.post(f"/v1/users/{USER}/recall", json=body).status_code == 413


def test_serve_cli_runs_the_api_under_uvicorn(seeded: SeededUser, key: str, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({key: seeded.tenant}))
    with socket.create_server(("127.0.0.1", 0)) as probe:  # a free port for the server
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-c",
        "import typer; from jobs.cli.serve import serve; typer.run(serve)",
        "--keys-file",
        str(keys_file),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + SERVE_START_TIMEOUT_S
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "memstream serve did not answer"
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        response = httpx.get(f"{base}/v1/users/{USER}/snapshot", headers={"X-API-Key": key})
        assert response.status_code == 200
        assert response.json()["status"] == {"current_project": seeded.label}
        assert httpx.get(f"{base}/v1/users/{USER}/snapshot").status_code == 401
    finally:
        server.terminate()
        server.wait(timeout=30)
