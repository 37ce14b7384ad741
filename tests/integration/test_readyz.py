"""``/readyz`` against the real stores and broker: 200 when all answer, else 503 naming who not.

- Every dependency up (the session's services): 200, four checks passed.
- A store stopped: a PRIVATE Redis (started through ``infra`` with its own
  state dir and port, so the shared one other tests use is never touched) serves
  the API, then is stopped: 503 naming ``redis`` only; ``/healthz`` stays 200.
- Unreachable addresses: Neo4j and the broker on ports nobody listens on: 503
  naming both, with their errors.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import infra
from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MemoryService, MemoryStores
from memstream.settings import ChromaSettings, KafkaSettings, Neo4jSettings, RedisSettings, Settings

DEPENDENCIES = {"redis", "chroma", "neo4j", "kafka"}
KEYS = ApiKeyring({"r" * 32: "readyz-tenant"})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def readyz(settings: Settings) -> tuple[int, dict[str, Any], TestClient]:
    """The API over the stores and broker ``settings`` name, and its /readyz answer."""
    client = TestClient(create_app(MemoryService(stores=MemoryStores.open(settings)), KEYS))
    answer = client.get("/readyz")
    return answer.status_code, answer.json(), client


def test_ready_when_the_stores_and_the_broker_answer(settings: Settings) -> None:
    status, body, _ = readyz(settings)
    assert status == 200, body
    assert body["ready"] is True and body["not_ready"] == []
    assert set(body["checks"]) == DEPENDENCIES
    assert all(check == {"ready": True, "error": None} for check in body["checks"].values())


@pytest.fixture
def private_redis(settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """The session's settings with a Redis of this test's own; stopped at the end."""
    private = settings.model_copy(
        update={
            "state_dir": tmp_path / "redis-state",
            "redis": RedisSettings(port=free_port()),
            "chroma": ChromaSettings(path=tmp_path / "chroma"),
        }
    )
    infra.up(private, ["redis"])
    try:
        yield private
    finally:
        infra.down(private, ["redis"])


def test_a_stopped_store_is_named_and_liveness_stays(private_redis: Settings) -> None:
    status, body, client = readyz(private_redis)
    assert status == 200, body

    infra.down(private_redis, ["redis"])
    answer = client.get("/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["ready"] is False and body["not_ready"] == ["redis"]
    assert body["checks"]["redis"]["ready"] is False
    assert "Connection" in body["checks"]["redis"]["error"]
    assert all(body["checks"][name]["ready"] for name in DEPENDENCIES - {"redis"})
    assert client.get("/healthz").status_code == 200

    infra.up(private_redis, ["redis"])  # back: ready again, same app, same clients
    assert client.get("/readyz").status_code == 200


def test_unreachable_addresses_are_named(settings: Settings, tmp_path: Path) -> None:
    nowhere = settings.model_copy(
        update={
            "neo4j": Neo4jSettings(uri_override=f"bolt://127.0.0.1:{free_port()}"),
            "kafka": KafkaSettings(bootstrap_servers=f"127.0.0.1:{free_port()}"),
            "chroma": ChromaSettings(path=tmp_path / "chroma"),
        }
    )
    status, body, _ = readyz(nowhere)
    assert status == 503
    assert body["not_ready"] == ["kafka", "neo4j"]
    assert body["checks"]["kafka"]["error"].startswith("BrokerUnavailable: no broker answered")
    assert body["checks"]["neo4j"]["error"]
    assert body["checks"]["redis"]["ready"] and body["checks"]["chroma"]["ready"]
