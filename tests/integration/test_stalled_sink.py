"""A real sink that stops writing while operations keep arriving reads STALL, not OK (issue 15).

The sink runs as the CLI starts it, on private topics and stores. Once it has
applied the first half of a stream it is frozen (SIGSTOP: still a group member
until its 10 s session times out, commits nothing) while the rest is published
a few operations at a time. ``memstream lag``'s monitor, with the rules the
settings give (the sink's stall time, 10 s, for its namespaced group), samples
the real broker every second: the group caught up a few seconds ago, so the
window rules alone would say OK; the stall rule says STALL once the offsets
have stood still for 10 s while the lag grew, and the dashboard's sampler and
gauges say the same. Resumed (SIGCONT), the sink catches up and the status is
OK again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sink_helpers import (
    caught_up,
    create_topics,
    delete_topics,
    make_stream,
    publish_ops,
    wait_until,
)

from connectors.kafka_offsets import OffsetReader
from jobs.ops.lag import GroupLag, LagMonitor, rules_from_settings
from jobs.serve.dashboard import LagCollector, LagSampler
from memstream.settings import Settings
from pipelines.lag import Status
from schemas.topics import Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
# Bounds only: they turn a hang into a failure on a loaded 2-core machine.
STALL_WAIT_S = 90.0


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    """Private ``memory.ops`` / ``memory.dlq`` topics; deleted with the sink's group."""
    prefix = f"stalltest-{unique}."
    create_topics(kafka_bootstrap, prefix)
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def test_a_frozen_sink_reads_stall_while_its_lag_grows(
    settings: Settings, namespace: str, unique: str, tmp_path: Path
) -> None:
    bootstrap = settings.kafka.bootstrap
    topic = Topics(namespace).memory_ops
    group = namespace + settings.sink.group_id
    # One user, so one partition: the group has committed on the partition that
    # grows (a partition it never committed on has no lag to show).
    ops = make_stream(f"t{unique}", ("ana",), turns=60).ops
    half = len(ops) // 2
    publish_ops(bootstrap, topic, ops[:half])

    env = {
        **os.environ,
        "MEMSTREAM_CHROMA__PATH": str(tmp_path / "chroma"),
        "MEMSTREAM_CHROMA__MODE": "embedded",
        "MEMSTREAM_METRICS__SINK_PORT": "0",
    }
    command = [
        sys.executable, "-m", "jobs.cli.sink",
        "--namespace", namespace, "--store-namespace", f"stall{unique}",
    ]  # fmt: skip
    log = tmp_path / "sink.log"
    with log.open("wb") as out:
        sink = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=out, stderr=out)  # noqa: S603

    rules = rules_from_settings(settings)
    assert rules.for_group(group).stall_after_s == settings.sink.stall_after_s == 10.0
    sampler = LagSampler(
        LagMonitor(OffsetReader(bootstrap), rules), [group], interval_s=1.0, keep=200
    )
    registry = CollectorRegistry()
    registry.register(LagCollector(sampler))

    def report() -> GroupLag:
        sampler.sample()
        (latest,) = sampler.latest()
        return latest

    try:
        wait_until(
            lambda: sink.poll() is not None or caught_up(bootstrap, group, topic),
            "the sink to apply the first half",
        )
        assert sink.poll() is None, log.read_text(errors="replace")[-3000:]
        assert report().status is Status.OK

        sink.send_signal(signal.SIGSTOP)
        rest = iter(ops[half:])
        seen: list[Status] = []

        def stalled() -> bool:
            # A few more operations per sample: the lag grows, the offsets stand still.
            publish_ops(bootstrap, topic, list(islice(rest, 3)))
            latest = report()
            seen.append(latest.status)
            return latest.status is Status.STALL

        wait_until(stalled, "the frozen sink to read STALL", timeout_s=STALL_WAIT_S)
        latest = sampler.latest()[0]
        assert latest.stalled_seconds > latest.stall_after_s == 10.0
        assert latest.lag > 0
        # Before the stall time passed it read OK (it had caught up within the window).
        assert Status.OK in seen
        where = {"group": group, "status": "STALL"}
        assert registry.get_sample_value("memstream_consumer_group_status", where) == 1.0
        stalled_s = max(
            registry.get_sample_value(
                "memstream_consumer_stalled_seconds",
                {"group": group, "topic": topic, "partition": str(row.partition)},
            )
            or 0.0
            for row in latest.partitions
        )
        assert stalled_s == latest.stalled_seconds
        assert sampler.data()["series"][group][-1]["status"] == "STALL"

        sink.send_signal(signal.SIGCONT)
        publish_ops(bootstrap, topic, list(rest))
        wait_until(lambda: caught_up(bootstrap, group, topic), "the resumed sink to catch up")
        assert report().status is Status.OK
    finally:
        sink.send_signal(signal.SIGCONT)
        sink.terminate()
        sink.wait(timeout=60)
