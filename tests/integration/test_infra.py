"""The local services really work: each store answers, topics are as configured,
transactions commit on the single node, and infra's lifecycle behaves (idempotent
up, stopped service reported down, start failures name the log).

Tests that start extra services use a temporary state dir and free ports, so
the shared services other sessions use are never stopped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import chromadb
import neo4j
import numpy as np
import pytest
import redis
from chromadb.config import Settings as ChromaClientSettings
from confluent_kafka import Consumer, Producer
from pydantic import SecretStr

import infra
from connectors import kafka_admin
from infra.neo4j_server import launcher_key
from infra.toolchain import ToolchainError, find_java, java_major_version
from memstream.settings import Settings
from schemas import topics


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def status_of(settings: Settings, name: str) -> infra.ServiceStatus:
    return next(s for s in infra.status(settings) if s.name == name)


def test_neo4j_answers_a_bolt_query(neo4j_uri: str, unique: str) -> None:
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=None) as driver:
        driver.execute_query("CREATE (:InfraTest {tag: $tag, n: 41})", tag=unique)
        records, _, _ = driver.execute_query(
            "MATCH (t:InfraTest {tag: $tag}) RETURN t.n + 1 AS answer", tag=unique
        )
        driver.execute_query("MATCH (t:InfraTest {tag: $tag}) DELETE t", tag=unique)
    assert [r["answer"] for r in records] == [42]


def test_redis_round_trip(redis_url: str, unique: str) -> None:
    client = redis.Redis.from_url(redis_url)
    key = f"infra-test:{unique}"
    try:
        client.set(key, "héllo".encode(), ex=60)
        assert client.get(key) == "héllo".encode()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
    finally:
        client.delete(key)
        client.close()


def test_chroma_embedded_round_trip(chroma_path: Path, unique: str) -> None:
    client = chromadb.PersistentClient(
        path=str(chroma_path), settings=ChromaClientSettings(anonymized_telemetry=False)
    )
    name = f"infra-test-{unique}"
    collection = client.create_collection(name)
    try:
        # Explicit embeddings: the default embedding function downloads a model.
        collection.add(
            ids=["near", "far"],
            embeddings=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32),
            documents=["close to the query", "far from it"],
            metadatas=[{"tenant": unique}, {"tenant": unique}],
        )
        hits = collection.query(
            query_embeddings=np.array([[0.9, 0.1, 0.0]], dtype=np.float32), n_results=1
        )
        assert hits["ids"] == [["near"]]
        assert hits["documents"] == [["close to the query"]]
    finally:
        client.delete_collection(name)


def test_topics_exist_with_configured_partitions(settings: Settings, kafka_bootstrap: str) -> None:
    counts = kafka_admin.partition_counts(kafka_bootstrap, topics.ALL_TOPICS)
    assert counts == {name: settings.kafka.partitions for name in topics.ALL_TOPICS}
    config = kafka_admin.topic_config(kafka_bootstrap, topics.MEMORY_DLQ)
    assert config["max.message.bytes"] == str(settings.kafka.max_message_bytes)


def test_topic_helpers_create_once_and_delete(kafka_bootstrap: str, unique: str) -> None:
    spec = kafka_admin.TopicSpec(f"infra-test.{unique}", partitions=3)
    assert kafka_admin.ensure_topics(kafka_bootstrap, [spec]) == [spec.name]
    assert kafka_admin.ensure_topics(kafka_bootstrap, [spec]) == []
    assert kafka_admin.partition_counts(kafka_bootstrap, [spec.name]) == {spec.name: 3}
    kafka_admin.delete_topics(kafka_bootstrap, [spec.name])
    kafka_admin.delete_topics(kafka_bootstrap, [spec.name])  # already gone: no error
    assert spec.name not in kafka_admin.list_topics(kafka_bootstrap)


def test_transactional_produce_commits_on_the_single_node(
    kafka_bootstrap: str, unique: str
) -> None:
    topic = f"infra-test.tx.{unique}"
    kafka_admin.ensure_topics(kafka_bootstrap, [kafka_admin.TopicSpec(topic, partitions=1)])
    try:
        producer = Producer(
            {"bootstrap.servers": kafka_bootstrap, "transactional.id": f"infra-test-{unique}"}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, key=b"t1:u1", value=b"committed")
        producer.commit_transaction(30)

        consumer = Consumer(
            {
                "bootstrap.servers": kafka_bootstrap,
                "group.id": f"infra-test-{unique}",
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe([topic])
        received: list[bytes] = []
        # Bounded: 30 polls of 1 s, enough for the group join on a fresh topic.
        for _ in range(30):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                received.append(value)
                break
        consumer.close()
        assert received == [b"committed"]
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [topic])
        kafka_admin.delete_groups(kafka_bootstrap, [f"infra-test-{unique}"])


def test_up_twice_reuses_the_running_services(settings: Settings) -> None:
    before = {s.name: s.pid for s in infra.status(settings)}
    reports = infra.up(settings)
    assert [r.started for r in reports] == [False] * len(infra.SERVICE_NAMES)
    assert {s.name: s.pid for s in infra.status(settings)} == before


# Each process imports, says it is ready, then waits for "go", so both call
# up() within milliseconds of each other: without the lock both would spawn.
_RACE_SCRIPT = """
import sys, time, pathlib
import infra
from memstream.settings import get_settings
settings = get_settings()
here = pathlib.Path(sys.argv[1])
(here / f"ready-{sys.argv[2]}").touch()
while not (here / "go").exists():
    time.sleep(0.001)
print(infra.up(settings, ["redis"])[0].started)
"""


def test_parallel_up_calls_start_a_service_once(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    own = settings.model_copy(
        update={"state_dir": tmp_path, "redis": settings.redis.model_copy(update={"port": port})}
    )
    env = {**os.environ, "MEMSTREAM_STATE_DIR": str(tmp_path), "MEMSTREAM_REDIS__PORT": str(port)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE_SCRIPT, str(tmp_path), str(n)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    try:
        # Bounded: 60 s for two interpreters to import infra on a busy machine.
        for _ in range(600):
            if len(list(tmp_path.glob("ready-*"))) == 2:
                break
            time.sleep(0.1)
        (tmp_path / "go").touch()
        outputs = sorted(run.communicate(timeout=120)[0].strip() for run in runs)
        assert [run.returncode for run in runs] == [0, 0]
        assert outputs == ["False", "True"]  # one started it, the other reused it
    finally:
        infra.down(own, ["redis"])


def test_status_reports_a_stopped_service_as_down(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    own = settings.model_copy(
        update={"state_dir": tmp_path, "redis": settings.redis.model_copy(update={"port": port})}
    )
    assert [r.started for r in infra.up(own, ["redis"])] == [True]
    running = status_of(own, "redis")
    assert running.up and running.pid is not None and running.port == port

    assert infra.down(own, ["redis"]) == ["redis"]
    stopped = status_of(own, "redis")
    assert not stopped.up and stopped.pid is None

    # The CLI says so too, with exit code 3.
    env = {**os.environ, "MEMSTREAM_STATE_DIR": str(tmp_path), "MEMSTREAM_REDIS__PORT": str(port)}
    cli = Path(sys.executable).parent / "memstream"
    done = subprocess.run(
        [str(cli), "infra", "status"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "down" in done.stdout


def test_redis_password_is_required_and_kept_out_of_argv(
    settings: Settings, tmp_path: Path
) -> None:
    secret = f"pw-{uuid.uuid4().hex}"
    redis_settings = settings.redis.model_copy(
        update={"port": free_port(), "password": SecretStr(secret)}
    )
    own = settings.model_copy(update={"state_dir": tmp_path, "redis": redis_settings})
    try:
        infra.up(own, ["redis"])
        no_auth = redis.Redis(port=redis_settings.port)
        with pytest.raises(redis.AuthenticationError):
            no_auth.ping()
        no_auth.close()
        status = status_of(own, "redis")
        assert status.up and status.pid is not None
        assert secret not in Path(f"/proc/{status.pid}/cmdline").read_text()
        assert status.log is not None and secret not in status.log.read_text()
    finally:
        infra.down(own, ["redis"])


def test_chroma_server_mode_starts_and_stops(settings: Settings, tmp_path: Path) -> None:
    chroma = settings.chroma.model_copy(update={"mode": "server", "port": free_port()})
    own = settings.model_copy(update={"state_dir": tmp_path, "chroma": chroma})
    try:
        assert [r.started for r in infra.up(own, ["chroma"])] == [True]
        assert status_of(own, "chroma").up
    finally:
        infra.down(own, ["chroma"])
    assert not status_of(own, "chroma").up


def test_a_service_that_cannot_start_names_its_log(settings: Settings, tmp_path: Path) -> None:
    # Redis configured on the Kafka broker's port, which is taken.
    clash = settings.model_copy(
        update={
            "state_dir": tmp_path,
            "redis": settings.redis.model_copy(update={"port": settings.kafka.port}),
        }
    )
    log = tmp_path / "logs" / "redis.log"
    with pytest.raises(infra.ServiceStartError, match=str(log)) as failure:
        infra.up(clash, ["redis"])
    assert "Address already in use" in str(failure.value)
    assert not status_of(clash, "redis").up


def test_java_home_without_java_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match=str(tmp_path / "bin" / "java")):
        find_java(tmp_path)


def test_a_java_older_than_17_is_refused_by_name(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    # What a Java 11 runtime prints for `java -version` (on stderr).
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    fake.chmod(0o755)
    with pytest.raises(ToolchainError, match="is Java 11; Kafka 4 and Neo4j 5.26 need Java 17"):
        find_java(tmp_path)


def test_the_configured_java_is_17_or_newer(settings: Settings) -> None:
    assert java_major_version(find_java(settings.java_home)) >= 17


def test_launcher_is_rebuilt_when_the_neo4j_version_changes() -> None:
    assert launcher_key("5.26.30") == launcher_key("5.26.30")
    assert launcher_key("5.26.30") != launcher_key("5.26.29")
