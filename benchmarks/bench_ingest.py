"""Ingest throughput and latency: the Faust worker beside a pass-through job, in one run.

    python benchmarks/bench_ingest.py [--repeat 3] [--latency-events 300] [--rate-share 0.5]

Needs the local services (`memstream infra up`). Both jobs run as subprocesses
on private topics (removed afterwards) over the same events: the sample stream
repeated ``--repeat`` times with fresh users and event ids.

- pass-through: a Faust app with the worker's batching (take_events, then
  send and await every record) that copies each input record to one output
  topic: the ceiling of the engine and broker on this machine, no stages.
- ingest: ``memstream worker`` (jobs/ingest_faust.py), all stages.

Each job first consumes the whole backlog (sustained events/s = events /
(last output - first output) by broker timestamps, so model loading does not
count), then a paced stream at ``--rate-share`` of the ingest worker's
sustained rate (the same offered rate for both jobs), whose latency per event
is the broker's append time of its first output (op or dead letter) minus the
producer's create time of the event: event → visible in Kafka. The sink job's
store writes come after this (benchmarks of issue 5's sink). Peak memory is
the job process's VmHWM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer, consumer, end_offsets
from connectors.kafka_offsets import OffsetReader
from memstream.settings import get_settings
from schemas.deadletter import DeadLetter
from schemas.ops import MemoryOperation
from schemas.topics import INPUT_TOPICS, MEMORY_DLQ, MEMORY_OPS, OUTPUT_TOPICS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = ROOT / "data" / "sample"
PASSTHROUGH_TOPIC = "bench.passthrough"
INGEST_GROUP = "memstream-ingest"  # the worker's default group id
PASSTHROUGH_GROUP = "bench-passthrough"
# Same batching as the worker's defaults (jobs/cli_worker.py), so the ceiling
# differs from the worker by the stages only.
BATCH_SIZE = 64
BATCH_WITHIN_S = 0.2
# Model loading plus a 1,200-event backlog on 2 busy cores stays well inside this.
CATCH_UP_TIMEOUT_S = 600.0

Event = tuple[str, str, bytes]  # (topic, key, value)


# -- events ------------------------------------------------------------------
def sample_events(repeat: int, tag: str) -> list[Event]:
    """The sample stream ``repeat`` times; copy ``i`` has users and event ids suffixed ``tag+i``."""
    lines = {t: (SAMPLE_DIR / f"{t}.jsonl").read_bytes().splitlines() for t in INPUT_TOPICS}
    events: list[Event] = []
    for copy in range(repeat):
        suffix = f"-{tag}{copy}"
        for topic, topic_lines in lines.items():
            for line in topic_lines:
                event: dict[str, Any] = json.loads(line)
                event["user_id"] += suffix
                event["event_id"] += suffix
                key = f"{event['tenant_id']}:{event['user_id']}"
                events.append((topic, key, json.dumps(event).encode()))
    return events


def publish(bootstrap: str, namespace: str, events: Sequence[Event], rate: float | None) -> None:
    """Send ``events`` (at ``rate`` per second when given) and wait for every ack."""
    producer = KeyedProducer(bootstrap, client_id="bench-ingest")
    started = time.monotonic()
    for i, (topic, key, value) in enumerate(events):
        if rate is not None:
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
        producer.send(namespace + topic, value, key=key)
    producer.flush()


# -- reading back with timestamps ----------------------------------------------
@dataclass(frozen=True)
class Stamped:
    """A record with its position and broker/producer timestamp (ms)."""

    topic: str
    partition: int
    offset: int
    ts_ms: int
    value: bytes


def read_stamped(bootstrap: str, topics: Sequence[str]) -> list[Stamped]:
    """Every record of ``topics`` from the beginning to the current end."""
    counts = kafka_admin.partition_counts(bootstrap, topics)
    reader = consumer(bootstrap, "bench-reader", **{"enable.partition.eof": True})
    reader.assign(
        [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in counts.items() for p in range(n)]
    )
    pending = {(t, p) for t, n in counts.items() for p in range(n)}
    records: list[Stamped] = []
    try:
        while pending:
            msg = reader.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                pending.discard((str(msg.topic()), int(msg.partition() or 0)))
                continue
            if error is not None:
                raise RuntimeError(error.str())
            records.append(
                Stamped(
                    str(msg.topic()),
                    int(msg.partition() or 0),
                    int(msg.offset() or 0),
                    msg.timestamp()[1],
                    msg.value() or b"",
                )
            )
    finally:
        reader.close()
    return records


# -- jobs ----------------------------------------------------------------------
class Job:
    """A job subprocess and the consumer group it commits under."""

    def __init__(self, name: str, command: list[str], group: str) -> None:
        """Start ``command`` with the offline NLP environment."""
        self.name = name
        self.group = group
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        slug = name.split()[0]
        self.log = Path(f"/tmp/bench-ingest-{slug}-{os.getpid()}.log")  # noqa: S108
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our interpreter and modules
                command, cwd=ROOT, env=env, stdout=out, stderr=out
            )

    def peak_rss_mib(self) -> float:
        """VmHWM of the process (Linux)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def wait_caught_up(self, bootstrap: str, topics: Sequence[str]) -> float:
        """Wait until the group has committed every input's end; returns when (monotonic)."""
        ends = {(t, p): e for t in topics for p, e in end_offsets(bootstrap, t).items()}
        reader = OffsetReader(bootstrap)
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log}")
            done = reader.committed(self.group)
            if all(done.get(position, 0) >= end for position, end in ends.items()):
                return time.monotonic()
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not catch up; see {self.log}")

    def stop(self) -> None:
        """SIGTERM and wait."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)


def run_passthrough(namespace: str) -> None:
    """The pass-through job (run in its own process by ``--passthrough NAMESPACE``)."""
    import faust

    settings = get_settings()
    app = faust.App(
        namespace + PASSTHROUGH_GROUP,
        broker=f"kafka://{settings.kafka.bootstrap}",
        store="memory://",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        datadir=f"/tmp/bench-ingest-faust-{os.getpid()}",  # noqa: S108
    )
    raw: dict[str, Any] = {"key_serializer": "raw", "value_serializer": "raw"}
    source = app.topic(*(namespace + t for t in INPUT_TOPICS), **raw)
    sink = app.topic(namespace + PASSTHROUGH_TOPIC, **raw)

    async def copy(stream: Any) -> None:
        async for events in stream.take_events(BATCH_SIZE, within=BATCH_WITHIN_S):
            sent = [await sink.send(key=e.message.key, value=e.message.value) for e in events]
            await asyncio.gather(*sent)

    app.agent(source, name="passthrough")(copy)
    faust.Worker(app, loglevel="warning", quiet=True).execute_from_commandline()


# -- measuring -----------------------------------------------------------------
@dataclass
class Result:
    """One job's numbers."""

    job: str
    events: int
    events_per_s: float
    offered_rate: float
    latencies_ms: list[float]
    peak_rss_mib: float

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (nearest rank) of the paced phase's latencies."""
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _first_outputs(namespace: str, outputs: list[Stamped], job: str) -> dict[Any, int]:
    """Per source record, the broker time (ms) of its first output."""
    first: dict[Any, int] = {}
    for record in outputs:
        if job == "pass-through":
            source: Any = record.value
        elif record.topic == namespace + MEMORY_DLQ:
            letter = DeadLetter.model_validate_json(record.value)
            source = (namespace + letter.topic, letter.partition, letter.offset)
        else:
            lineage = MemoryOperation.model_validate_json(record.value).lineage
            source = (namespace + lineage.topic, lineage.partition, lineage.offset)
        first[source] = min(first.get(source, record.ts_ms), record.ts_ms)
    return first


def _source(job: str, record: Stamped) -> Any:
    # The pass-through copies values, which are unique per event; the ingest
    # worker's outputs name their source record's position.
    return (
        record.value if job == "pass-through" else (record.topic, record.partition, record.offset)
    )


def _start(job: str, namespace: str) -> Job:
    if job == "pass-through":
        command = [sys.executable, __file__, "--passthrough", namespace]
        return Job(job, command, namespace + PASSTHROUGH_GROUP)
    command = [sys.executable, "-m", "jobs.cli_worker", "--namespace", namespace]
    return Job(job, [*command, "--loglevel", "warning"], namespace + INGEST_GROUP)


def _create_topics(bootstrap: str, namespace: str) -> None:
    partitions = get_settings().kafka.partitions
    # Outputs are stamped by the broker on append: the "visible in Kafka" time.
    append_time = {"message.timestamp.type": "LogAppendTime"}
    specs = [kafka_admin.TopicSpec(namespace + t, partitions) for t in INPUT_TOPICS]
    specs += [
        kafka_admin.TopicSpec(namespace + t, partitions, append_time)
        for t in (*OUTPUT_TOPICS, PASSTHROUGH_TOPIC)
    ]
    kafka_admin.ensure_topics(bootstrap, specs)


def measure(
    bootstrap: str,
    job: str,
    backlog: list[Event],
    paced: list[Event],
    *,
    rate: float = 0.0,
    share: float = 0.5,
) -> Result:
    """Run ``job`` over the backlog, then ``paced`` at ``rate`` (0: ``share`` x its own rate)."""
    namespace = f"bench.ingest.{uuid.uuid4().hex[:8]}."
    _create_topics(bootstrap, namespace)
    inputs = [namespace + t for t in INPUT_TOPICS]
    outputs = (
        [namespace + PASSTHROUGH_TOPIC]
        if job == "pass-through"
        else [namespace + MEMORY_OPS, namespace + MEMORY_DLQ]
    )
    try:
        publish(bootstrap, namespace, backlog, rate=None)
        process = _start(job, namespace)
        try:
            process.wait_caught_up(bootstrap, inputs)
            times = sorted(
                _first_outputs(namespace, read_stamped(bootstrap, outputs), job).values()
            )
            events_per_s = len(backlog) / max((times[-1] - times[0]) / 1000, 1e-3)
            backlog_sources = {_source(job, r) for r in read_stamped(bootstrap, inputs)}
            offered = rate if rate > 0 else events_per_s * share
            publish(bootstrap, namespace, paced, rate=offered)
            process.wait_caught_up(bootstrap, inputs)
            first = _first_outputs(namespace, read_stamped(bootstrap, outputs), job)
            latencies = [
                float(first[source] - record.ts_ms)
                for record in read_stamped(bootstrap, inputs)
                if (source := _source(job, record)) not in backlog_sources and source in first
            ]
            peak = process.peak_rss_mib()
            return Result(job, len(backlog), events_per_s, offered, latencies, peak)
        finally:
            process.stop()
    finally:
        mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
        kafka_admin.delete_topics(bootstrap, mine)


def report(results: Sequence[Result]) -> str:
    """The results as a Markdown table."""
    rows = [
        "| job | backlog events | sustained events/s | offered rate (ev/s) | paced events "
        "| p50 ms | p95 ms | p99 ms | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.job} | {r.events} | {r.events_per_s:,.0f} | {r.offered_rate:,.1f} "
            f"| {len(r.latencies_ms)} | {r.percentile(0.5):,.0f} | {r.percentile(0.95):,.0f} "
            f"| {r.percentile(0.99):,.0f} | {r.peak_rss_mib:,.0f} |"
        )
    return "\n".join(rows)


def main() -> None:
    """Measure the pass-through ceiling and the ingest worker; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="copies of the sample as backlog")
    parser.add_argument("--latency-events", type=int, default=300, help="paced events per job")
    parser.add_argument(
        "--rate-share",
        type=float,
        default=0.5,
        help="paced rate as a share of the worker's sustained rate (both jobs get this rate)",
    )
    parser.add_argument("--passthrough", metavar="NAMESPACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.passthrough is not None:
        run_passthrough(args.passthrough)
        return
    bootstrap = get_settings().kafka.bootstrap
    backlog = sample_events(args.repeat, "b")
    paced = sample_events(args.repeat, "p")[: args.latency_events]
    ingest = measure(bootstrap, "ingest (faust)", backlog, paced, share=args.rate_share)
    ceiling = measure(bootstrap, "pass-through", backlog, paced, rate=ingest.offered_rate)
    print(report([ceiling, ingest]))  # noqa: T201 - the benchmark's output


if __name__ == "__main__":
    main()
