"""``/readyz`` over probes that are plain callables (no services): 200, or 503 naming the rest.

The real stores and broker are probed in tests/integration/test_readyz.py.
"""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MemoryService, MemoryStores
from jobs.serve.readiness import Readiness
from memstream.testing import HashingEmbedder, InMemoryStores, RecordingPublisher


def _service() -> MemoryService:
    tiers = InMemoryStores.create()
    stores = MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=RecordingPublisher(),
    )
    return MemoryService(stores=stores)


def _refused() -> None:
    raise ConnectionRefusedError("Connection refused")


def test_ready_when_every_probe_passes() -> None:
    readiness = Readiness({"redis": lambda: True, "kafka": lambda: None})
    client = TestClient(create_app(_service(), ApiKeyring({"k" * 32: "t"}), readiness=readiness))
    answer = client.get("/readyz")
    assert answer.status_code == 200
    assert answer.json() == {
        "ready": True,
        "checks": {
            "redis": {"ready": True, "error": None},
            "kafka": {"ready": True, "error": None},
        },
        "not_ready": [],
    }
    assert client.get("/healthz").status_code == 200


def test_not_ready_names_the_failing_dependency_and_its_error() -> None:
    readiness = Readiness({"redis": lambda: None, "neo4j": _refused})
    client = TestClient(create_app(_service(), ApiKeyring({"k" * 32: "t"}), readiness=readiness))
    answer = client.get("/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["not_ready"] == ["neo4j"]
    assert body["checks"]["neo4j"] == {
        "ready": False,
        "error": "ConnectionRefusedError: Connection refused",
    }
    # Liveness is not readiness: the process itself is fine.
    assert client.get("/healthz").status_code == 200


def test_a_hung_probe_is_not_ready_within_the_timeout() -> None:
    release = threading.Event()
    readiness = Readiness({"chroma": release.wait, "redis": lambda: None}, timeout_s=0.2)
    try:
        report = readiness.check()
    finally:
        release.set()
    assert report.not_ready == ["chroma"]
    assert report.checks["chroma"].error == "no answer within 0.2 s"
    assert report.checks["redis"].ready


def test_in_memory_stores_have_nothing_to_probe() -> None:
    client = TestClient(create_app(_service(), ApiKeyring({"k" * 32: "t"})))
    assert client.get("/readyz").json() == {"ready": True, "checks": {}, "not_ready": []}
