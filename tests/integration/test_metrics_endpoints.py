"""``/metrics`` of the HTTP API and of a running ``memstream sink``, after real traffic.

- The API (real service, stores and broker) counts requests per route template
  and status, never a user id or tenant, and exports the lag sampler's gauges
  for a private consumer group with the lag the test produced.
- The sink job runs as the CLI starts it, with its endpoint on a free port and
  a 1 ms latency budget, so Chroma and Neo4j writes exceed it and fall back to
  their spools: the scrape then shows every sink metric with real values —
  records in, operations written and spooled, spool depth, fallback
  activations, a dead letter, end-to-end latency per operation.
- End to end is measured from the broker: the stream's events are dated
  2026-03-02 09:00 (``sink_helpers.T0``) but were published during the test, so
  every operation is within the end-to-end histogram's one-hour bucket while the
  event-time lag histogram has none there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from api_helpers import new_key, seed_user
from fastapi.testclient import TestClient
from metrics_helpers import Traffic, free_port, parse, private_topic, scrape, value, wait_until
from sink_helpers import T0, caught_up, create_topics, delete_topics, make_stream, publish_ops

from connectors.kafka_io import KeyedProducer
from connectors.kafka_offsets import OffsetReader
from jobs.ops.lag import LagMonitor
from jobs.serve.api import create_app
from jobs.serve.dashboard import LagSampler
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MemoryService, MemoryStores
from memstream.settings import Settings
from pipelines.lag import Rules, Status
from schemas.topics import MEMORY_OPS, Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_ROUTE = "/v1/users/{user_id}/snapshot"
STORES = ("redis", "chroma", "neo4j")


@pytest.fixture
def traffic(kafka_bootstrap: str, unique: str) -> Iterator[Traffic]:
    """A private group 3 + 5 records behind on a two-partition topic."""
    with private_topic(kafka_bootstrap, f"metrics-{unique}", 2) as topic:
        lagging = Traffic(kafka_bootstrap, topic, f"metrics-{unique}-group", 2)
        lagging.produce(8)
        lagging.committed = {0: 5, 1: 3}
        lagging.consume(0)
        yield lagging
        lagging.close()


def test_api_metrics_count_routes_not_users_and_export_lag(
    settings: Settings, traffic: Traffic
) -> None:
    stores = MemoryStores.open(settings)
    tenant, user, key = f"metrics-{uuid.uuid4().hex[:10]}", f"u{uuid.uuid4().hex[:8]}", new_key()
    seed_user(stores, tenant, user, label="metrics")
    monitor = LagMonitor(OffsetReader(settings.kafka.bootstrap), Rules())
    sampler = LagSampler(monitor, [traffic.group], interval_s=60, keep=10)
    sampler.sample()  # by hand: the test decides when the figures are taken
    client = TestClient(
        create_app(MemoryService(stores=stores), ApiKeyring({key: tenant}), sampler)
    )
    before = parse(client.get("/metrics").text)

    assert client.get(f"/v1/users/{user}/snapshot", headers={"X-API-Key": key}).status_code == 200
    assert client.get(f"/v1/users/{user}/snapshot").status_code == 401
    assert client.get("/no/such/route").status_code == 404
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    after = parse(answer.text)

    def delta(status: str, route: str = SNAPSHOT_ROUTE) -> float:
        labels = {"method": "GET", "route": route, "status": status}
        name = "memstream_api_requests_total"
        return (value(after, name, **labels) or 0) - (value(before, name, **labels) or 0)

    assert (delta("200"), delta("401"), delta("404", "unmatched")) == (1, 1, 1)
    timed = value(after, "memstream_api_request_seconds_count", route=SNAPSHOT_ROUTE)
    assert timed is not None and timed >= 2
    assert user not in answer.text and tenant not in answer.text and key not in answer.text

    for partition, lag in ((0, 3), (1, 5)):
        where = {"group": traffic.group, "topic": traffic.topic, "partition": str(partition)}
        assert value(after, "memstream_consumer_lag_messages", **where) == lag
        seconds = value(after, "memstream_consumer_lag_seconds", **where)
        assert seconds is not None and seconds >= 0
    name = "memstream_consumer_group_status"
    statuses = [value(after, name, group=traffic.group, status=s.value) for s in Status]
    assert statuses.count(1.0) == 1 and statuses.count(0.0) == len(Status) - 1


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    """Private ``memory.ops`` / ``memory.dlq`` topics."""
    prefix = f"metricstest-{unique}."
    create_topics(kafka_bootstrap, prefix)
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def test_sink_job_serves_its_metrics(
    settings: Settings, namespace: str, unique: str, tmp_path: Path
) -> None:
    bootstrap = settings.kafka.bootstrap
    stream = make_stream(f"t{unique}", ("ana", "bo"), turns=20)
    topic = Topics(namespace).memory_ops
    total = publish_ops(bootstrap, topic, stream.ops)
    bad = KeyedProducer(bootstrap, client_id="memstream-metrics-test")
    bad.send(topic, b"{not an operation", key=f"t{unique}:ana")
    bad.flush()

    port = free_port()
    env = {
        **os.environ,
        "MEMSTREAM_CHROMA__PATH": str(tmp_path / "chroma"),
        "MEMSTREAM_CHROMA__MODE": "embedded",
        "MEMSTREAM_METRICS__SINK_PORT": str(port),
    }
    command = [
        sys.executable, "-m", "jobs.cli.sink",
        "--namespace", namespace, "--store-namespace", f"m{unique}",
        # Every Chroma and Neo4j write is slower than 1 ms, and small batches make
        # two slow writes in a row (the policy's trip): both fall back to the spool.
        "--latency-budget-ms", "1", "--batch-size", "16",
    ]  # fmt: skip
    log = tmp_path / "sink.log"
    with log.open("wb") as out:
        sink = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=out, stderr=out)  # noqa: S603
    try:
        group = namespace + settings.sink.group_id
        wait_until(
            lambda: sink.poll() is not None or caught_up(bootstrap, group, topic),
            "the sink to commit the whole topic",
        )
        assert sink.poll() is None, log.read_text(errors="replace")[-3000:]
        samples = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        sink.terminate()
        sink.wait(timeout=60)

    def get(name: str, **labels: str) -> float:
        found = value(samples, name, **labels)
        assert found is not None, (name, labels)
        return found

    assert get("memstream_sink_events_in_total", topic=MEMORY_OPS) == total + 1
    assert get("memstream_sink_dead_letters_total", reason="schema_violation") == 1
    assert get("memstream_sink_end_to_end_seconds_count") == total
    assert get("memstream_sink_event_time_lag_seconds_count") == total
    # Which clock each histogram reads, not how fast the sink is: the records
    # reached the broker minutes ago at most, the events happened long before.
    assert get("memstream_sink_end_to_end_seconds_bucket", le="3600.0") == total
    if datetime.now(UTC) - T0 > timedelta(days=1):
        assert get("memstream_sink_event_time_lag_seconds_bucket", le="3600.0") == 0
    assert get("memstream_sink_batches_committed_total") >= 1
    assert get("memstream_sink_ops_written_total", store="redis", path="direct") > 0
    activations = sum(
        found
        for (name, labels), found in samples.items()
        if name == "memstream_sink_fallback_activations_total"
        and dict(labels)["store"] in ("chroma", "neo4j")
    )
    assert activations >= 1
    for store in ("chroma", "neo4j"):
        spooled = get("memstream_sink_ops_spooled_total", store=store)
        depth = get("memstream_sink_spool_depth", store=store)
        assert spooled > 0
        # No equality with spooled - drained: a crash or a redelivered batch can
        # spool the same operation twice (jobs/sink/lane.py).
        assert 0 <= depth <= spooled
