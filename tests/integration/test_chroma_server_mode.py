"""``chroma.mode=server``: the query service reads the Chroma server the sink writes.

Both open their stores with ``jobs.stores.open_stores``. The Chroma server is
the one infra starts (``infra.up(settings, ["chroma"])``) on a free port with
its data in a temporary directory; the clients' ``chroma.path`` then points at
another, empty, directory, so a job that ignored the mode and opened embedded
Chroma (what ``memstream serve`` did before) would read nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from metrics_helpers import free_port
from sink_helpers import create_topics, delete_topics, make_stream, publish_ops, run_to_end

import infra
from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MAX_K, MemoryService
from jobs.sink.job import SinkConfig, open_lanes
from memstream.settings import Settings
from schemas.topics import MEMORY_OPS

USERS = ("ana", "bo")
KEY = "k-chroma-server-test-0001"


@pytest.fixture
def server_settings(settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """Settings naming a running Chroma server (its data in tmp_path/server)."""
    chroma = settings.chroma.model_copy(
        update={"mode": "server", "port": free_port(), "path": tmp_path / "server"}
    )
    own = settings.model_copy(update={"state_dir": tmp_path, "chroma": chroma})
    infra.up(own, ["chroma"])
    try:
        elsewhere = chroma.model_copy(update={"path": tmp_path / "not-the-server"})
        yield own.model_copy(update={"chroma": elsewhere})
    finally:
        infra.down(own, ["chroma"])


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    prefix = f"chromasrv-{unique}."
    create_topics(kafka_bootstrap, prefix)
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def test_the_api_reads_what_the_sink_wrote_to_the_chroma_server(
    server_settings: Settings, namespace: str, unique: str, tmp_path: Path
) -> None:
    stream = make_stream(f"t{unique}", USERS, turns=12)
    publish_ops(server_settings.kafka.bootstrap, namespace + MEMORY_OPS, stream.ops)
    store_ns = f"cs{unique}"
    config = SinkConfig.from_settings(
        server_settings, topic_namespace=namespace, store_namespace=store_ns
    )
    run_to_end(config, open_lanes(config))
    with config.open_stores() as written:
        on_server = {h.fact_id for u in USERS for h in written.episodic.get(stream.tenant, u)}
    assert on_server == stream.fact_versions()

    service = MemoryService.from_settings(server_settings, namespace=store_ns)
    app = create_app(service, ApiKeyring({KEY: stream.tenant}))
    with TestClient(app) as client:
        read: set[str] = set()
        for user in USERS:
            response = client.post(
                f"/v1/users/{user}/recall",
                headers={"X-API-Key": KEY},
                json={
                    "query": "what does the customer prefer",
                    "k": MAX_K,
                    "tiers": ["episodic"],
                    "include_history": True,
                },
            )
            assert response.status_code == 200, response.text
            read |= {hit["fact_id"] for hit in response.json()}
    assert read, "the API read nothing from the Chroma server"
    assert read <= on_server
    # Nothing was opened as embedded Chroma at the clients' path.
    assert not (tmp_path / "not-the-server").exists()
