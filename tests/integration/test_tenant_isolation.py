"""Adversarial tenant isolation over every HTTP endpoint and every MCP tool.

Two tenants, A and B, both have a user called ``shared`` (same user id, different
memories); B also has ``b-only``. Everything is attacked with A's key (or A's
MCP server): B's user ids, B's pending and fact ids, guessed ids, injection
strings (Cypher, Redis key patterns, path tricks) in ids, filters and queries,
and oversized inputs. Nothing of B may appear in any answer, no answer may be a
server error, and B's memory must be intact afterwards. The probes are checked
to be able to fail: the same calls with A's own ids do return A's memory.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from api_helpers import (
    SeededUser,
    call_tools,
    leaked,
    list_tools,
    new_key,
    published_action,
    seed_user,
)
from fastapi.testclient import TestClient
from hostile_inputs import B_ONLY, GUESSED_PENDING, INJECTIONS, ODD_VALID_USERS, SHARED
from mcp.server.fastmcp import FastMCP
from tier_ops import op

from connectors.kafka_io import end_offsets, read_topic
from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.mcp_server import build_mcp_server
from jobs.serve.memory_service import MAX_K, MemoryService, MemoryStores
from memstream.settings import Settings
from schemas.events import ActionType, UserAction
from schemas.memory import Tier
from schemas.ops import OpType
from schemas.query import ActionReceipt, MemorySnapshot
from schemas.topics import USER_ACTIONS


@pytest.fixture(scope="module")
def stores(settings: Settings) -> MemoryStores:
    return MemoryStores.open(settings)


@pytest.fixture(scope="module")
def tenants(stores: MemoryStores) -> dict[str, list[SeededUser]]:
    run = uuid.uuid4().hex[:8]
    a, b = f"iso-a-{run}", f"iso-b-{run}"
    return {
        "a": [seed_user(stores, a, SHARED, f"alpha{run}")],
        "b": [
            seed_user(stores, b, SHARED, f"bravo{run}"),
            seed_user(stores, b, B_ONLY, f"b2{run}"),
        ],
    }


@pytest.fixture(scope="module")
def keys(tenants: dict[str, list[SeededUser]]) -> dict[str, str]:
    return {name: new_key() for name in tenants}


@pytest.fixture(scope="module")
def service(stores: MemoryStores) -> MemoryService:
    return MemoryService(stores=stores)


@pytest.fixture(scope="module")
def app_client(
    service: MemoryService, tenants: dict[str, list[SeededUser]], keys: dict[str, str]
) -> Iterator[TestClient]:
    keyring = ApiKeyring({keys[name]: users[0].tenant for name, users in tenants.items()})
    with TestClient(create_app(service, keyring)) as client:
        yield client


@pytest.fixture(scope="module")
def mcp_a(service: MemoryService, tenants: dict[str, list[SeededUser]]) -> FastMCP:
    return build_mcp_server(service, tenants["a"][0].tenant, host="127.0.0.1", port=0)


def as_(keys: dict[str, str], name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {keys[name]}"}


def b_markers_in(body: str, tenants: dict[str, list[SeededUser]]) -> list[str]:
    return [marker for user in tenants["b"] for marker in leaked(body, user)]


def read_requests(user: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every read endpoint, asked as broadly as it allows, for ``user``."""
    everything = {"query": "tea phone vegan weekend", "k": MAX_K, "include_history": True}
    return [
        ("POST", f"/v1/users/{user}/recall", {"json": everything}),
        ("POST", f"/v1/users/{user}/recall", {"json": {**everything, "tiers": list(Tier)}}),
        ("GET", f"/v1/users/{user}/snapshot", {}),
        ("GET", f"/v1/users/{user}/context", {"params": {"query": "tea", "k": MAX_K}}),
        *[
            ("GET", f"/v1/users/{user}/history", {"params": {"subject": s, "predicate": p}})
            for s, p in [("user", "phone_number"), ("user", "likes"), ("user", "diet")]
        ],
    ]


def b_snapshot(client: TestClient, keys: dict[str, str], user: str) -> MemorySnapshot:
    response = client.get(f"/v1/users/{user}/snapshot", headers=as_(keys, "b"))
    assert response.status_code == 200
    return MemorySnapshot.model_validate(response.json())


def test_reads_with_a_key_never_show_b(
    app_client: TestClient, tenants: dict[str, list[SeededUser]], keys: dict[str, str]
) -> None:
    own = tenants["a"][0]
    b_tenant = tenants["b"][0].tenant
    # Attempts to name the tenant beside the key: headers and a query parameter.
    overrides = {"X-Tenant-Id": b_tenant, "X-Tenant": b_tenant, "X-Forwarded-User": b_tenant}
    for user in (SHARED, B_ONLY):
        for method, path, kwargs in read_requests(user):
            params = {**kwargs.pop("params", {}), "tenant_id": b_tenant, "tenant": b_tenant}
            headers = as_(keys, "a") | overrides
            response = app_client.request(method, path, headers=headers, params=params, **kwargs)
            assert response.status_code == 200, (path, response.text)
            assert b_markers_in(response.text, tenants) == [], path
            if user == SHARED and "history" not in path:  # the probe can see A's memory
                assert own.label in response.text, path


def test_b_reads_its_own_memory_with_its_key(
    app_client: TestClient, tenants: dict[str, list[SeededUser]], keys: dict[str, str]
) -> None:
    for user in tenants["b"]:
        snapshot = b_snapshot(app_client, keys, user.user)
        assert [p.pending_id for p in snapshot.pending] == [user.pending_id]
        assert tenants["a"][0].label not in snapshot.model_dump_json()


def test_b_pending_and_fact_ids_are_404_for_a(
    app_client: TestClient,
    tenants: dict[str, list[SeededUser]],
    keys: dict[str, str],
    kafka_bootstrap: str,
) -> None:
    before = end_offsets(kafka_bootstrap, USER_ACTIONS)
    b_ids = [i for u in tenants["b"] for i in (u.pending_id, *u.fact_ids) if i.startswith("f_")] + [
        GUESSED_PENDING
    ]
    answers = set()
    for verb in ("confirm", "reject"):
        for user in (SHARED, B_ONLY):
            for pending in b_ids:
                path = f"/v1/users/{user}/pending/{pending}/{verb}"
                response = app_client.post(path, headers=as_(keys, "a"))
                assert response.status_code == 404, path
                answers.add(response.text)
    assert len(answers) == 1  # a foreign id is answered exactly like a guessed one
    # Nothing was published for B, and B's items still wait for B's decision.
    after = read_topic(kafka_bootstrap, USER_ACTIONS, start=before, idle_s=0.5)
    b_tenant = tenants["b"][0].tenant
    assert [r for r in after if (r.key or "").startswith(f"{b_tenant}:")] == []
    for user in tenants["b"]:
        assert [p.pending_id for p in b_snapshot(app_client, keys, user.user).pending] == [
            user.pending_id
        ]


def test_a_confirming_its_own_pending_id_works(
    app_client: TestClient, tenants: dict[str, list[SeededUser]], keys: dict[str, str]
) -> None:
    own = tenants["a"][0]
    path = f"/v1/users/{SHARED}/pending/{own.pending_id}/confirm"
    assert app_client.post(path, headers=as_(keys, "a")).status_code == 202


@pytest.mark.parametrize("user", [SHARED, B_ONLY])
def test_writes_with_a_key_are_scoped_to_a(
    app_client: TestClient,
    tenants: dict[str, list[SeededUser]],
    keys: dict[str, str],
    kafka_bootstrap: str,
    user: str,
) -> None:
    a_tenant = tenants["a"][0].tenant
    writes = [
        ("POST", f"/v1/users/{user}/memories", {"predicate": "likes", "object": "coffee"}),
        ("DELETE", f"/v1/users/{user}", None),
    ]
    for method, path, body in writes:
        response = app_client.request(method, path, json=body, headers=as_(keys, "a"))
        assert response.status_code == 202
        key, event = published_action(
            kafka_bootstrap, ActionReceipt.model_validate(response.json())
        )
        assert (key, event.tenant_id, event.user_id) == (f"{a_tenant}:{user}", a_tenant, user)


def test_a_forget_erases_nothing_of_b(
    stores: MemoryStores,
    app_client: TestClient,
    tenants: dict[str, list[SeededUser]],
    keys: dict[str, str],
    kafka_bootstrap: str,
) -> None:
    # Run the erase the pipeline would run for A's forget of `shared`, then look at B.
    run = uuid.uuid4().hex[:8]
    a_user = seed_user(stores, tenants["a"][0].tenant, f"gone-{run}", f"gone{run}")
    response = app_client.delete(f"/v1/users/{a_user.user}", headers=as_(keys, "a"))
    _, event = published_action(kafka_bootstrap, ActionReceipt.model_validate(response.json()))
    assert event.action_type is ActionType.FORGET_USER
    erase = op(
        OpType.ERASE_USER,
        event.tenant_id,
        event.user_id,
        event_id=event.event_id,
        tiers=list(Tier),
    )
    for sink in (stores.redis, stores.chroma, stores.neo4j):
        sink.write([erase])
        sink.flush()
    gone = app_client.get(f"/v1/users/{a_user.user}/snapshot", headers=as_(keys, "a")).json()
    assert gone["facts"] == gone["rules"] == gone["pending"] == [] and gone["status"] == {}
    for user in tenants["b"]:
        snapshot = b_snapshot(app_client, keys, user.user)
        assert [p.pending_id for p in snapshot.pending] == [user.pending_id]
        assert set(user.fact_ids) - {user.fact_ids[2]} <= {
            h.fact_id for h in snapshot.rules + snapshot.facts
        }


@pytest.mark.parametrize("user", ODD_VALID_USERS)
def test_pattern_like_user_ids_reach_only_their_own_empty_user(
    app_client: TestClient, tenants: dict[str, list[SeededUser]], keys: dict[str, str], user: str
) -> None:
    # Encoded, or the HTTP client would resolve "." and ".." segments itself.
    for method, path, kwargs in read_requests(user.replace(".", "%2E")):
        response = app_client.request(method, path, headers=as_(keys, "a"), **kwargs)
        assert response.status_code == 200, (path, response.text)
        assert b_markers_in(response.text, tenants) == [], path
        assert tenants["a"][0].label not in response.text, path


@pytest.mark.parametrize("value", INJECTIONS)
def test_injection_strings_are_refused_or_inert(
    app_client: TestClient, tenants: dict[str, list[SeededUser]], keys: dict[str, str], value: str
) -> None:
    headers = as_(keys, "a")
    segment = quote(value, safe="")  # the HTTP client refuses raw control characters
    probes = [
        ("POST", f"/v1/users/{SHARED}/recall", {"json": {"query": value, "k": MAX_K}}),
        *[
            (
                "POST",
                f"/v1/users/{SHARED}/recall",
                {"json": {"query": "tea", "k": MAX_K, "filters": {"tags": {tag: value}}}},
            )
            for tag in ("subject", "predicate", "object", "kind", "polarity")
        ],
        (
            "POST",
            f"/v1/users/{SHARED}/recall",
            {"json": {"query": "tea", "filters": {"session_id": value}}},
        ),
        (
            "GET",
            f"/v1/users/{SHARED}/history",
            {"params": {"subject": value, "predicate": "phone_number"}},
        ),
        ("GET", f"/v1/users/{SHARED}/history", {"params": {"subject": "user", "predicate": value}}),
        ("GET", f"/v1/users/{SHARED}/context", {"params": {"query": value}}),
        ("GET", f"/v1/users/{segment}/snapshot", {}),
        ("POST", f"/v1/users/{segment}/recall", {"json": {"query": "tea"}}),
        ("POST", f"/v1/users/{SHARED}/pending/{segment}/confirm", {}),
        ("POST", f"/v1/users/{SHARED}/memories", {"json": {"predicate": value, "object": value}}),
    ]
    for method, path, kwargs in probes:
        response = app_client.request(method, path, headers=headers, **kwargs)
        assert response.status_code < 500, (path, kwargs, response.text)
        assert b_markers_in(response.text, tenants) == [], (path, kwargs)
    for user in tenants["b"]:  # nothing of B was deleted or changed by the probes
        snapshot = b_snapshot(app_client, keys, user.user)
        assert {user.fact_ids[0], user.fact_ids[1], user.fact_ids[3]} <= {
            h.fact_id for h in snapshot.rules + snapshot.facts
        }


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", f"/v1/users/{'u' * 10_000}/snapshot", {}, 422),
        ("GET", f"/v1/users/{SHARED}/context", {"params": {"query": "q" * 60_000}}, 422),
        ("POST", f"/v1/users/{SHARED}/recall", {"json": {"query": "q" * 60_000}}, 422),
        ("POST", f"/v1/users/{SHARED}/recall", {"content": b"[" * 200_000}, 413),
        ("POST", f"/v1/users/{SHARED}/recall", {"json": {"query": "tea", "k": 10**12}}, 422),
        (
            "POST",
            f"/v1/users/{SHARED}/recall",
            {"json": {"query": "tea", "tiers": ["working"] * 1000}},
            422,
        ),
        (
            "POST",
            f"/v1/users/{SHARED}/memories",
            {"json": {"predicate": "p", "object": "o", "text": "t" * 5000}},
            422,
        ),
    ],
)
def test_oversized_inputs_are_refused(
    app_client: TestClient,
    keys: dict[str, str],
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
) -> None:
    response = app_client.request(method, path, headers=as_(keys, "a"), **kwargs)
    assert response.status_code == status


@pytest.mark.parametrize(
    "presented",
    ["b-truncated", "b-upper", "b-padded", "huge", "a+b"],
)
def test_near_miss_keys_are_401(
    app_client: TestClient, keys: dict[str, str], presented: str
) -> None:
    variants = {
        "b-truncated": keys["b"][:-1],
        "b-upper": keys["b"].upper(),
        "b-padded": keys["b"] + "x",
        "huge": "k" * 100_000,
        "a+b": keys["a"] + keys["b"],
    }
    response = app_client.get(
        f"/v1/users/{SHARED}/snapshot", headers={"X-API-Key": variants[presented]}
    )
    assert response.status_code == 401


# -- MCP tools -------------------------------------------------------------------


def test_mcp_tools_take_no_tenant(mcp_a: FastMCP) -> None:
    tools = list_tools(mcp_a)
    assert {t.name for t in tools} == {"read", "search", "store", "history", "confirm"}
    for tool in tools:
        assert not any("tenant" in name for name in tool.inputSchema["properties"]), tool.name


def test_mcp_tools_of_a_never_show_b(
    mcp_a: FastMCP, tenants: dict[str, list[SeededUser]], kafka_bootstrap: str
) -> None:
    own = tenants["a"][0]
    b_pending = [u.pending_id for u in tenants["b"]]
    calls: list[tuple[str, dict[str, Any]]] = []
    for user in (SHARED, B_ONLY, *ODD_VALID_USERS):
        calls += [
            ("search", {"user_id": user, "query": "tea phone vegan weekend", "k": MAX_K}),
            ("read", {"user_id": user}),
            ("history", {"user_id": user, "subject": "user", "predicate": "phone_number"}),
            ("history", {"user_id": user, "subject": "user", "predicate": "diet"}),
            *[("confirm", {"user_id": user, "pending_id": p}) for p in b_pending],
            *[
                ("confirm", {"user_id": user, "pending_id": p, "decision": "reject"})
                for p in b_pending
            ],
        ]
    for value in INJECTIONS:
        calls += [
            ("search", {"user_id": SHARED, "query": value}),
            ("read", {"user_id": value}),
            ("history", {"user_id": SHARED, "subject": value, "predicate": value}),
            ("confirm", {"user_id": SHARED, "pending_id": value}),
            ("store", {"user_id": value, "predicate": "likes", "object": value}),
        ]
    calls += [
        ("search", {"user_id": SHARED, "query": "q" * 100_000}),
        ("search", {"user_id": SHARED, "query": "tea", "k": 10**9}),
        ("read", {"user_id": SHARED, "tenant_id": tenants["b"][0].tenant}),
    ]
    before = end_offsets(kafka_bootstrap, USER_ACTIONS)
    results = call_tools(mcp_a, calls)
    for (name, arguments), result in zip(calls, results, strict=True):
        body = result.model_dump_json()
        assert b_markers_in(body, tenants) == [], (name, arguments)
        if name == "confirm":
            assert result.isError, arguments
    own_read = results[1]
    assert not own_read.isError and own.label in json.dumps(own_read.structuredContent)
    b_tenant = tenants["b"][0].tenant
    published = read_topic(kafka_bootstrap, USER_ACTIONS, start=before, idle_s=0.5)
    events = [UserAction.model_validate_json(r.value) for r in published]
    assert [e for e in events if e.tenant_id == b_tenant] == []
