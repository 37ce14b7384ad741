"""The sink job against the real Kafka, Redis, Chroma and Neo4j.

- A stream of operations (made by the real reviewer) reaches all three stores,
  and applying the whole stream a second time (a fresh group: offsets reset to
  the beginning) leaves every store exactly as it was.
- Offsets are committed only after the writes: the ``memstream sink`` process
  is SIGKILLed at random points several times and restarted; the final state
  equals the fault-free run and every fact version exists exactly once.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sink_helpers import (
    caught_up,
    committed_count,
    config_for,
    create_topics,
    delete_topics,
    fact_nodes,
    make_stream,
    publish_ops,
    readers,
    reference_state,
    run_to_end,
    snapshot,
    spools_empty,
    wait_until,
)

from jobs.sink.job import open_lanes
from memstream.settings import Settings
from schemas.topics import Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
USERS = ("ana", "bo")


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    """Private ``memory.ops`` / ``memory.dlq`` topics for one test."""
    prefix = f"sinktest-{unique}."
    create_topics(kafka_bootstrap, prefix)
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def test_applies_the_stream_to_every_store_and_a_replay_changes_nothing(
    settings: Settings, namespace: str, unique: str, tmp_path: Path
) -> None:
    stream = make_stream(f"t{unique}", USERS, turns=30)
    publish_ops(settings.kafka.bootstrap, Topics(namespace).memory_ops, stream.ops)
    config = config_for(settings, namespace, f"s{unique}", tmp_path / "chroma", group_id="first")

    run_to_end(config, open_lanes(config))
    redis_memory, chroma, neo4j = readers(config)
    first = snapshot(stream, redis_memory, chroma, neo4j)

    stored = {h.fact_id for user in USERS for h in chroma.get(stream.tenant, user)}
    assert stored == stream.fact_versions()
    assert fact_nodes(neo4j, stream.tenant) == stream.semantic_versions()
    for user in USERS:
        turns = redis_memory.recent_turns(stream.tenant, user, f"{user}-s1")
        assert [t.turn_index for t in turns] == [25, 26, 27, 28, 29]  # the last 5 kept
        assert redis_memory.pending(stream.tenant, user, at=turns[0].ts), "no pending item"
    negated = [h for h in chroma.get(stream.tenant, USERS[0]) if h.polarity == "negated"]
    assert negated and all("NOT" in h.text for h in negated)

    # Offsets reset to the beginning: a new group re-applies every operation.
    replay = replace(config, group_id="replay")
    run_to_end(replay, open_lanes(replay))
    assert snapshot(stream, *readers(config)) == first
    assert fact_nodes(neo4j, stream.tenant) == stream.semantic_versions()


class SinkProcess:
    """``python -m jobs.cli.sink`` on a namespace, its output appended to a log."""

    def __init__(self, namespace: str, store_namespace: str, chroma: Path, log: Path) -> None:
        env = {
            **os.environ,
            "MEMSTREAM_CHROMA__PATH": str(chroma),
            "MEMSTREAM_CHROMA__MODE": "embedded",
        }
        command = [
            sys.executable, "-m", "jobs.cli.sink",
            "--namespace", namespace,
            "--store-namespace", store_namespace,
            # Small batches: many commits, so a kill lands between writes and commits.
            "--batch-size", "16",
        ]  # fmt: skip
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command, cwd=REPO_ROOT, env=env, stdout=out, stderr=out
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def wait_for_progress(
    sink: SinkProcess, bootstrap: str, group: str, topic: str, before: int
) -> None:
    """Wait until the sink has committed past ``before`` records; fail if it died."""
    wait_until(
        lambda: not sink.alive() or committed_count(bootstrap, group, topic) > before,
        "the sink to commit progress",
    )
    assert sink.alive(), sink.tail()


def test_sigkill_at_random_points_leaves_each_version_exactly_once(
    settings: Settings, redis_url: str, namespace: str, unique: str, tmp_path: Path
) -> None:
    bootstrap = settings.kafka.bootstrap
    stream = make_stream(f"t{unique}", USERS, turns=120)
    topic = Topics(namespace).memory_ops
    total = publish_ops(bootstrap, topic, stream.ops)
    expected = reference_state(settings, namespace, stream, tmp_path / "ref-chroma")

    store_ns = f"crash{unique}"
    group = namespace + "memstream-sink"
    chroma_dir, log = tmp_path / "chroma", tmp_path / "sink.log"
    rng = random.Random(unique)  # noqa: S311 - kill points, not cryptography
    for _ in range(3):
        before = committed_count(bootstrap, group, topic)
        sink = SinkProcess(namespace, store_ns, chroma_dir, log)
        try:
            wait_for_progress(sink, bootstrap, group, topic, before)
            assert committed_count(bootstrap, group, topic) < total, "finished before the kill"
            time.sleep(rng.uniform(0.05, 0.6))  # a random point mid-stream
        finally:
            sink.process.kill()
            sink.process.wait(timeout=30)

    sink = SinkProcess(namespace, store_ns, chroma_dir, log)
    try:
        wait_until(
            lambda: (
                not sink.alive()
                or (caught_up(bootstrap, group, topic) and spools_empty(redis_url, store_ns))
            ),
            "the restarted sink to apply everything (committed, spools drained)",
        )
        assert sink.alive(), sink.tail()
    finally:
        sink.process.send_signal(signal.SIGTERM)
        assert sink.process.wait(timeout=60) == 0, sink.tail()

    config = config_for(settings, namespace, store_ns, chroma_dir)
    redis_memory, chroma, neo4j = readers(config)
    assert snapshot(stream, redis_memory, chroma, neo4j) == expected
    assert fact_nodes(neo4j, stream.tenant) == stream.semantic_versions()
    assert "SIGTERM" in sink.tail()
