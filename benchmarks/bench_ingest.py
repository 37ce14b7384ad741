"""Ingest throughput and latency: both engines beside a pass-through job, in one run.

    python benchmarks/bench_ingest.py [--engines faust,flink] [--repeat 3]
        [--latency-events 300] [--rate-share 0.5] [--flink-checkpoint-interval 30]

Needs the local services (`memstream infra up`). Every job runs as a
subprocess on private topics (removed afterwards) over the same events: the
sample stream repeated ``--repeat`` times with fresh users and event ids.

- pass-through: a Faust app with the worker's batching (take_events, then
  send and await every record) that copies each input record to one output
  topic: the ceiling of the engine and broker on this machine, no stages.
- ingest (faust): ``memstream worker`` (jobs/ingest_faust.py), all stages.
- ingest (flink): ``memstream flink`` (jobs/ingest_flink.py, local
  mini-cluster), all stages. Its outputs are written in one Kafka transaction
  per checkpoint, so a read_committed reader sees them only when the
  checkpoint completes: its latency is bounded below by the checkpoint
  interval (the row says which), not by the stages.

Each job first consumes the whole backlog (sustained events/s = events /
(last output - first output) by the broker's append times, so model loading
does not count; for the Flink job, whose outputs reach Kafka in bursts at
checkpoints, the rate of its ``memstream_ingest_events_in_total`` counter
while it works through the backlog), then a paced stream at ``--rate-share`` of the job's
sustained rate (the pass-through gets the Faust worker's offered rate, so the
two are compared at the same load; the Flink job's rate is capped so that its
paced phase spans at least three checkpoints). Latency per paced event is the moment a
read_committed consumer, polling the output topics all along, first receives
one of its outputs (op or dead letter) minus the producer's create time of the
event: event → visible to the sink. The sink job's store writes come after
this (benchmarks/bench_sink.py). Peak memory is the sum of VmHWM over the job's
process tree (Flink's mini-cluster is a child JVM).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest_readers import Stamped, Watcher, free_port, processing_rate, read_stamped

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer, end_offsets
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
FLINK_GROUP = "memstream-ingest-flink"  # the Flink job's default group id
# Checkpoint intervals the Flink job's paced phase lasts at least.
FLINK_PACED_CHECKPOINTS = 3
PASSTHROUGH = "pass-through"
FAUST = "ingest (faust)"
FLINK = "ingest (flink)"
# Model loading plus a 1,200-event backlog on 2 busy cores stays well inside
# this, for Flink too (~10 events/s measured, one record per call).
CATCH_UP_TIMEOUT_S = 900.0
# Metrics endpoints off in the benchmark: other jobs on this machine may hold
# the default ports (settings.metrics), and nothing scrapes them here.
_JOB_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MEMSTREAM_METRICS__INGEST_PORT": "0",
    "MEMSTREAM_METRICS__FLINK_PORT": "0",
}

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


# -- jobs ----------------------------------------------------------------------
class Job:
    """A job subprocess and the consumer group it commits under."""

    def __init__(
        self, name: str, command: list[str], group: str, env: dict[str, str] | None = None
    ) -> None:
        """Start ``command`` with the offline NLP environment (plus ``env``)."""
        self.name = name
        self.group = group
        self.metrics_port = 0  # set where the job's throughput comes from its metrics
        env = {**os.environ, **_JOB_ENV, **(env or {})}
        slug = "-".join(name.replace("(", "").replace(")", "").split()[:2])
        self.log = Path(f"/tmp/bench-ingest-{slug}-{os.getpid()}.log")  # noqa: S108
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our interpreter and modules
                command, cwd=ROOT, env=env, stdout=out, stderr=out
            )

    def peak_rss_mib(self) -> float:
        """The sum of VmHWM over the process and its descendants (Linux)."""
        total_kib = 0
        for pid in _process_tree(self.process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except FileNotFoundError:  # exited meanwhile
                continue
            total_kib += next(
                (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")),
                0,
            )
        return total_kib / 1024

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


def _process_tree(pid: int) -> list[int]:
    """``pid`` and every descendant, from /proc's children lists."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except FileNotFoundError:  # the thread or process ended meanwhile
                continue
    return tree


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
        # The worker's batching (settings.ingest), so the ceiling differs
        # from the worker by the stages only.
        batching = settings.ingest
        async for events in stream.take_events(batching.batch_size, within=batching.batch_within_s):
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


def _output_source(namespace: str, job: str, topic: str, value: bytes) -> Any:
    """The source record an output came from: its value (pass-through) or its position."""
    if job == PASSTHROUGH:
        return value  # the pass-through copies values, which are unique per event
    if topic == namespace + MEMORY_DLQ:
        letter = DeadLetter.model_validate_json(value)
        return (namespace + letter.topic, letter.partition, letter.offset)
    lineage = MemoryOperation.model_validate_json(value).lineage
    return (namespace + lineage.topic, lineage.partition, lineage.offset)


def _input_source(job: str, record: Stamped) -> Any:
    return record.value if job == PASSTHROUGH else (record.topic, record.partition, record.offset)


def _first_outputs(namespace: str, outputs: list[Stamped], job: str) -> dict[Any, int]:
    """Per source record, the broker append time (ms) of its first output."""
    first: dict[Any, int] = {}
    for record in outputs:
        source = _output_source(namespace, job, record.topic, record.value)
        first[source] = min(first.get(source, record.ts_ms), record.ts_ms)
    return first


def _start(job: str, namespace: str, checkpoint_interval_s: float) -> Job:
    if job == PASSTHROUGH:
        command = [sys.executable, __file__, "--passthrough", namespace]
        return Job(job, command, namespace + PASSTHROUGH_GROUP)
    if job == FAUST:
        command = [sys.executable, "-m", "jobs.cli_worker", "--namespace", namespace]
        return Job(job, [*command, "--loglevel", "warning"], namespace + INGEST_GROUP)
    command = [sys.executable, "-m", "jobs.cli_flink", "--namespace", namespace]
    command += ["--checkpoint-interval", str(checkpoint_interval_s)]
    port = free_port()
    env = {"MEMSTREAM_METRICS__FLINK_PORT": str(port)}
    flink = Job(job, command, namespace + FLINK_GROUP, env)
    flink.metrics_port = port
    return flink


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
    checkpoint_interval_s: float = 0.0,
) -> Result:
    """Run ``job`` over the backlog, then ``paced`` at ``rate`` (0: ``share`` x its own rate)."""
    namespace = f"bench.ingest.{uuid.uuid4().hex[:8]}."
    _create_topics(bootstrap, namespace)
    inputs = [namespace + t for t in INPUT_TOPICS]
    outputs = (
        [namespace + PASSTHROUGH_TOPIC]
        if job == PASSTHROUGH
        else [namespace + MEMORY_OPS, namespace + MEMORY_DLQ]
    )
    # Flink's transactions commit with the checkpoint that also commits the
    # source offsets, in no fixed order: one more interval makes them visible.
    settle_s = checkpoint_interval_s + 2.0 if job == FLINK else 0.0
    watcher = Watcher(
        bootstrap, outputs, lambda topic, value: _output_source(namespace, job, topic, value)
    )
    try:
        publish(bootstrap, namespace, backlog, rate=None)
        process = _start(job, namespace, checkpoint_interval_s)
        try:
            if process.metrics_port:
                events_per_s = processing_rate(
                    process.metrics_port, len(backlog), CATCH_UP_TIMEOUT_S
                )
            process.wait_caught_up(bootstrap, inputs)
            time.sleep(settle_s)
            if not process.metrics_port:
                times = sorted(
                    _first_outputs(namespace, read_stamped(bootstrap, outputs), job).values()
                )
                events_per_s = len(backlog) / max((times[-1] - times[0]) / 1000, 1e-3)
            backlog_sources = {_input_source(job, r) for r in read_stamped(bootstrap, inputs)}
            offered = rate if rate > 0 else events_per_s * share
            if job == FLINK:
                # Spread the paced events over several checkpoints: a burst
                # shorter than one interval would all wait for the same
                # commit, and the percentiles would measure one moment.
                offered = min(
                    offered, len(paced) / (FLINK_PACED_CHECKPOINTS * checkpoint_interval_s)
                )
            publish(bootstrap, namespace, paced, rate=offered)
            process.wait_caught_up(bootstrap, inputs)
            time.sleep(settle_s + 1.0)  # the watcher polls every 50 ms
            seen = dict(watcher.first_seen_ms)
            latencies = [
                float(seen[source] - record.ts_ms)
                for record in read_stamped(bootstrap, inputs)
                if (source := _input_source(job, record)) not in backlog_sources and source in seen
            ]
            peak = process.peak_rss_mib()
            return Result(job, len(backlog), events_per_s, offered, latencies, peak)
        finally:
            process.stop()
    finally:
        watcher.close()
        mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
        kafka_admin.delete_topics(bootstrap, mine)
        if job == FLINK:  # its checkpoints, by job name (jobs/ingest_flink.py)
            checkpoints = get_settings().state_dir / "flink" / "checkpoints"
            shutil.rmtree(checkpoints / (namespace + FLINK_GROUP), ignore_errors=True)


def report(results: Sequence[Result]) -> str:
    """The results as a Markdown table."""
    rows = [
        "| job | backlog events | sustained events/s | offered rate (ev/s) "
        "| paced events with output | p50 ms | p95 ms | p99 ms | peak RSS MiB |",
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
    """Measure the pass-through ceiling and the chosen engines; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engines", default="faust,flink", help="comma-separated ingest engines: faust, flink"
    )
    parser.add_argument("--repeat", type=int, default=3, help="copies of the sample as backlog")
    parser.add_argument("--latency-events", type=int, default=300, help="paced events per job")
    parser.add_argument(
        "--rate-share",
        type=float,
        default=0.5,
        help="paced rate as a share of each engine's sustained rate "
        "(the pass-through gets the Faust worker's rate)",
    )
    parser.add_argument(
        "--flink-checkpoint-interval",
        type=float,
        default=None,
        help="seconds between the Flink job's checkpoints [default: settings, 30]",
    )
    parser.add_argument("--passthrough", metavar="NAMESPACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.passthrough is not None:
        run_passthrough(args.passthrough)
        return
    settings = get_settings()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - {"faust", "flink"}
    if unknown:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    interval = args.flink_checkpoint_interval or settings.flink.checkpoint_interval_s
    bootstrap = settings.kafka.bootstrap
    backlog = sample_events(args.repeat, "b")
    paced = sample_events(args.repeat, "p")[: args.latency_events]
    results: list[Result] = []
    if "faust" in engines:
        ingest = measure(bootstrap, FAUST, backlog, paced, share=args.rate_share)
        ceiling = measure(bootstrap, PASSTHROUGH, backlog, paced, rate=ingest.offered_rate)
        results += [ceiling, ingest]
    if "flink" in engines:
        flink = measure(
            bootstrap,
            FLINK,
            backlog,
            paced,
            share=args.rate_share,
            checkpoint_interval_s=interval,
        )
        flink.job = f"{FLINK}, checkpoint every {interval:g} s"
        results.append(flink)
    print(report(results))  # noqa: T201 - the benchmark's output


if __name__ == "__main__":
    main()
