"""Ingest latency through to the stores: both engines beside a pass-through job, in one run.

    python benchmarks/bench_ingest.py [--engines faust,flink] [--rate 23]
        [--repeat 3] [--latency-events 300] [--flink-checkpoint-interval 30]

Needs the local services (`memstream infra up`). Every job runs as a
subprocess on private topics (removed afterwards) over the same events: the
sample stream repeated ``--repeat`` times with fresh users and event ids.

- pass-through: a Faust app with the worker's batching (take_events, then
  send and await every record) that copies each input record to one output
  topic: the ceiling of the engine and broker on this machine, no stages.
- ingest (faust): ``memstream worker`` (jobs/ingest/faust_worker.py), all stages,
  then ``memstream sink`` (jobs/cli/sink.py) writing Redis, Chroma and Neo4j.
- ingest (flink): ``memstream flink`` (jobs/ingest/flink_job.py, local
  mini-cluster), all stages, then the same sink. Its outputs are written in
  one Kafka transaction per checkpoint, so a read_committed reader (the sink
  too) sees them only when the checkpoint completes: its latency is bounded
  below by the checkpoint interval (the row says which), not by the stages.

Each job first consumes the whole backlog alone (sustained events/s = events /
(last output - first output) by the broker's append times, so model loading
does not count; for the Flink job, whose outputs reach Kafka in bursts at
checkpoints, the rate of its ``memstream_ingest_events_in_total`` counter
while it works through the backlog). Then, for the ingest jobs, the sink
starts (its own consumer group, store namespace and embedded Chroma
directory, all removed afterwards) and applies the backlog's operations, and a
paced stream is offered at ``--rate`` events/s (the Flink job's rate is capped
so that its paced phase spans at least three checkpoints) with ingest job and
sink running together, as deployed. Two latencies per paced event, both from
the producer's create time of the event:

- → memory.ops: the moment a read_committed consumer, polling the output
  topics all along, first receives one of the event's outputs (op or dead
  letter); over every paced event.
- → stores: the first poll (every 50 ms) of Redis working memory showing the
  dialogue turn, or a later turn of its session (a session keeps its last 5
  turns, and the sink applies a user's operations in order), in the sorted set
  of the session's turns (benchmarks/ingest_stores.py): the sink has then
  applied the turn's ``append_turn`` operation. It writes each batch to
  working memory first, then Chroma, then Neo4j (jobs/sink_job.open_lanes),
  so the turn's facts reach those two right after, in the same batch or the
  next (or go to the spool if slower than the latency budget). Over the paced
  dialogue turns: every turn yields one ``append_turn``; actions and webhooks
  leave no such engine-independent trace.

Peak memory is the sum of VmHWM over a job's process tree (Flink's mini-cluster
is a child JVM), for the ingest job and the sink separately.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingest_jobs import CATCH_UP_TIMEOUT_S, Job
from ingest_passthrough import PASSTHROUGH_GROUP, PASSTHROUGH_TOPIC
from ingest_readers import Stamped, Watcher, free_port, processing_rate, read_stamped
from ingest_report import Result, report
from ingest_stores import TurnKey, TurnWatcher, drop_store_namespace, turn_key

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer
from memstream.data import sample_dir
from memstream.settings import get_settings
from schemas.deadletter import DeadLetter
from schemas.ops import MemoryOperation
from schemas.topics import (
    DIALOGUE_EVENTS,
    INPUT_TOPICS,
    MEMORY_OPS,
    OUTPUT_TOPICS,
    Topics,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = sample_dir()
INGEST_GROUP = "memstream-ingest"  # the worker's default group id
FLINK_GROUP = "memstream-ingest-flink"  # the Flink job's default group id
# Checkpoint intervals the Flink job's paced phase lasts at least.
FLINK_PACED_CHECKPOINTS = 3
# Offered rate of the paced phase: half the lowest sustained rate the Faust
# worker has measured here (46 ev/s on a loaded machine; 199 ev/s idle,
# README), so it is a rate the worker sustains without growing lag.
DEFAULT_RATE = 23.0
# How long the paced turns may take to show in the stores once the ingest job
# has committed every input: the sink's poll (0.5 s) and one batch's writes,
# with ample room on 2 busy cores. A wait, not a measurement: it ends as soon
# as every turn is seen; a turn still missing then is counted as not seen.
STORE_SETTLE_S = 60.0
PASSTHROUGH = "pass-through"
FAUST = "ingest (faust)"
FLINK = "ingest (flink)"

Event = tuple[str, str, bytes]  # (topic, key, value)


# -- events ------------------------------------------------------------------
def sample_events(repeat: int, tag: str, *, topic_users: bool = False) -> list[Event]:
    """The sample stream ``repeat`` times; copy ``i`` has users and event ids suffixed ``tag+i``.

    With ``topic_users`` the events of each input topic go to users of their
    own (user ids suffixed with the topic's index too): a user's whole history
    is then one partition of one topic, which every run (a worker restarted
    mid-stream, a replay) processes in the same order.
    """
    lines = {t: (SAMPLE_DIR / f"{t}.jsonl").read_bytes().splitlines() for t in INPUT_TOPICS}
    events: list[Event] = []
    for copy in range(repeat):
        suffix = f"-{tag}{copy}"
        for index, (topic, topic_lines) in enumerate(lines.items()):
            for line in topic_lines:
                event: dict[str, Any] = json.loads(line)
                event["user_id"] += f"{suffix}t{index}" if topic_users else suffix
                event["event_id"] += suffix
                key = f"{event['tenant_id']}:{event['user_id']}"
                events.append((topic, key, json.dumps(event).encode()))
    return events


def dialogue_turns(events: Sequence[Event]) -> list[TurnKey]:
    """The dialogue turns among ``events``."""
    return [turn_key(value) for topic, _, value in events if topic == DIALOGUE_EVENTS]


def publish(bootstrap: str, namespace: str, events: Sequence[Event], rate: float | None) -> None:
    """Send ``events`` (at ``rate`` per second when given) and wait for every ack."""
    producer = KeyedProducer(bootstrap, client_id="bench-ingest")
    started = time.monotonic()
    for i, (topic, key, value) in enumerate(events):
        if rate is not None:
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
        producer.send(Topics(namespace).name(topic), value, key=key)
    producer.flush()


# -- jobs ----------------------------------------------------------------------
def _start(job: str, namespace: str, checkpoint_interval_s: float) -> Job:
    if job == PASSTHROUGH:
        command = [sys.executable, str(ROOT / "benchmarks" / "ingest_passthrough.py"), namespace]
        return Job(job, command, namespace + PASSTHROUGH_GROUP)
    if job == FAUST:
        command = [sys.executable, "-m", "jobs.cli.worker", "--namespace", namespace]
        return Job(job, [*command, "--loglevel", "warning"], namespace + INGEST_GROUP)
    command = [sys.executable, "-m", "jobs.cli.flink", "--namespace", namespace]
    command += ["--checkpoint-interval", str(checkpoint_interval_s)]
    port = free_port()
    env = {"MEMSTREAM_METRICS__FLINK_PORT": str(port)}
    flink = Job(job, command, namespace + FLINK_GROUP, env)
    flink.metrics_port = port
    return flink


def _start_sink(job: str, namespace: str, store_namespace: str, chroma_dir: Path) -> Job:
    """``memstream sink`` on the run's topics, into its own store namespace and Chroma directory."""
    command = [sys.executable, "-m", "jobs.cli.sink", "--namespace", namespace]
    command += ["--store-namespace", store_namespace, "--loglevel", "warning"]
    # An embedded Chroma of its own: nothing else writes that directory.
    env = {"MEMSTREAM_CHROMA__MODE": "embedded", "MEMSTREAM_CHROMA__PATH": str(chroma_dir)}
    name = f"sink {job.removeprefix('ingest ')}"  # "sink (faust)": its own log file
    return Job(name, command, namespace + get_settings().sink.group_id, env)


def _create_topics(bootstrap: str, namespace: str) -> None:
    partitions = get_settings().kafka.partitions
    # Outputs are stamped by the broker on append: the "visible in Kafka" time.
    append_time = {"message.timestamp.type": "LogAppendTime"}
    specs = [kafka_admin.TopicSpec(Topics(namespace).name(t), partitions) for t in INPUT_TOPICS]
    specs += [
        kafka_admin.TopicSpec(Topics(namespace).name(t), partitions, append_time)
        for t in (*OUTPUT_TOPICS, PASSTHROUGH_TOPIC)
    ]
    kafka_admin.ensure_topics(bootstrap, specs)


# -- measuring -----------------------------------------------------------------
def _output_source(namespace: str, job: str, topic: str, value: bytes) -> Any:
    """The source record an output came from: its value (pass-through) or its position."""
    if job == PASSTHROUGH:
        return value  # the pass-through copies values, which are unique per event
    if topic == Topics(namespace).dlq:
        letter = DeadLetter.model_validate_json(value)
        return (Topics(namespace).name(letter.topic), letter.partition, letter.offset)
    lineage = MemoryOperation.model_validate_json(value).lineage
    return (Topics(namespace).name(lineage.topic), lineage.partition, lineage.offset)


def _input_source(job: str, record: Stamped) -> Any:
    return record.value if job == PASSTHROUGH else (record.topic, record.partition, record.offset)


def _first_outputs(namespace: str, outputs: list[Stamped], job: str) -> dict[Any, int]:
    """Per source record, the broker append time (ms) of its first output."""
    first: dict[Any, int] = {}
    for record in outputs:
        source = _output_source(namespace, job, record.topic, record.value)
        first[source] = min(first.get(source, record.ts_ms), record.ts_ms)
    return first


def _backlog_rate(
    bootstrap: str, namespace: str, job: str, process: Job, backlog: int, settle_s: float
) -> float:
    """Events/s while ``process`` works through the backlog alone; returns once it has."""
    rate = 0.0
    if process.metrics_port:
        rate = processing_rate(process.metrics_port, backlog, CATCH_UP_TIMEOUT_S)
    process.wait_caught_up(bootstrap, Topics(namespace).inputs)
    time.sleep(settle_s)
    if process.metrics_port:
        return rate
    outputs = [Topics(namespace).name(PASSTHROUGH_TOPIC if job == PASSTHROUGH else MEMORY_OPS)]
    if job != PASSTHROUGH:
        outputs.append(Topics(namespace).dlq)
    times = sorted(_first_outputs(namespace, read_stamped(bootstrap, outputs), job).values())
    return backlog / max((times[-1] - times[0]) / 1000, 1e-3)


def measure(
    bootstrap: str,
    job: str,
    backlog: list[Event],
    paced: list[Event],
    *,
    rate: float,
    checkpoint_interval_s: float = 0.0,
) -> Result:
    """Run ``job`` over the backlog alone, then (with the sink) ``paced`` at ``rate``."""
    settings = get_settings()
    run_id = uuid.uuid4().hex[:8]
    namespace = f"bench.ingest.{run_id}."
    _create_topics(bootstrap, namespace)
    inputs = Topics(namespace).inputs
    outputs = (
        [Topics(namespace).name(PASSTHROUGH_TOPIC)]
        if job == PASSTHROUGH
        else [Topics(namespace).memory_ops, Topics(namespace).dlq]
    )
    # Flink's transactions commit with the checkpoint that also commits the
    # source offsets, in no fixed order: one more interval makes them visible.
    settle_s = checkpoint_interval_s + 2.0 if job == FLINK else 0.0
    offered = rate
    if job == FLINK:
        # Spread the paced events over several checkpoints: a burst shorter
        # than one interval would all wait for the same commit, and the
        # percentiles would measure one moment.
        offered = min(rate, len(paced) / (FLINK_PACED_CHECKPOINTS * checkpoint_interval_s))
    watcher = Watcher(
        bootstrap, outputs, lambda topic, value: _output_source(namespace, job, topic, value)
    )
    store_namespace = f"bench{run_id}"
    turns = (
        None
        if job == PASSTHROUGH
        else TurnWatcher(settings.redis.url, store_namespace, dialogue_turns([*backlog, *paced]))
    )
    chroma_dir = Path(tempfile.mkdtemp(prefix="bench-ingest-chroma-"))
    sink: Job | None = None
    try:
        publish(bootstrap, namespace, backlog, rate=None)
        process = _start(job, namespace, checkpoint_interval_s)
        try:
            events_per_s = _backlog_rate(bootstrap, namespace, job, process, len(backlog), settle_s)
            backlog_sources = {_input_source(job, r) for r in read_stamped(bootstrap, inputs)}
            if turns is not None:
                sink = _start_sink(job, namespace, store_namespace, chroma_dir)
                if not turns.wait_seen(
                    dialogue_turns(backlog), CATCH_UP_TIMEOUT_S, sink.check_alive
                ):
                    raise RuntimeError(f"the sink did not apply the backlog; see {sink.log}")
            publish(bootstrap, namespace, paced, rate=offered)
            process.wait_caught_up(bootstrap, inputs)
            time.sleep(settle_s + 1.0)  # the watcher polls every 50 ms
            if turns is not None and sink is not None:
                turns.wait_seen(dialogue_turns(paced), STORE_SETTLE_S, sink.check_alive)
            paced_records = [
                r
                for r in read_stamped(bootstrap, inputs)
                if _input_source(job, r) not in backlog_sources
            ]
            seen = dict(watcher.first_seen_ms)
            result = Result(
                job,
                len(backlog),
                events_per_s,
                offered,
                paced_events=len(paced_records),
                ops_latencies_ms=[
                    float(seen[source] - r.ts_ms)
                    for r in paced_records
                    if (source := _input_source(job, r)) in seen
                ],
                peak_rss_mib=process.peak_rss_mib(),
            )
            if turns is not None and sink is not None:
                paced_turns = [
                    r for r in paced_records if r.topic == Topics(namespace).dialogue_events
                ]
                visible = turns.first_seen_ms()
                result.paced_turns = len(paced_turns)
                result.store_latencies_ms = [
                    float(visible[key] - r.ts_ms)
                    for r in paced_turns
                    if (key := turn_key(r.value)) in visible
                ]
                result.sink_peak_rss_mib = sink.peak_rss_mib()
            return result
        finally:
            process.stop()
            if sink is not None:
                sink.stop()
    finally:
        watcher.close()
        if turns is not None:
            turns.close()
            drop_store_namespace(settings, store_namespace)
        shutil.rmtree(chroma_dir, ignore_errors=True)
        mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
        kafka_admin.delete_topics(bootstrap, mine)
        # The jobs' groups (worker or Flink, sink) share the namespace: left on the
        # broker they would fill `memstream lag` and the dashboard.
        kafka_admin.delete_groups_with_prefix(bootstrap, namespace)
        if job == FLINK:  # its checkpoints, by job name (jobs/ingest/flink_job.py)
            checkpoints = settings.state_dir / "flink" / "checkpoints"
            shutil.rmtree(checkpoints / (namespace + FLINK_GROUP), ignore_errors=True)


def main() -> None:
    """Measure the pass-through ceiling and the chosen engines; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--engines", default="faust,flink", help="comma-separated ingest engines: faust, flink"
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=DEFAULT_RATE,
        help="events/s offered in the paced phase, to every job (the Flink job's is capped "
        f"so that the phase spans {FLINK_PACED_CHECKPOINTS} checkpoints) [default: %(default)s]",
    )
    parser.add_argument("--repeat", type=int, default=3, help="copies of the sample as backlog")
    parser.add_argument("--latency-events", type=int, default=300, help="paced events per job")
    parser.add_argument(
        "--flink-checkpoint-interval",
        type=float,
        default=None,
        help="seconds between the Flink job's checkpoints [default: settings, 30]",
    )
    args = parser.parse_args()
    if args.rate <= 0:
        parser.error("--rate must be positive")
    settings = get_settings()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - {"faust", "flink"}
    if unknown:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    interval = args.flink_checkpoint_interval or settings.flink.checkpoint_interval_s
    bootstrap = settings.kafka.bootstrap
    backlog = sample_events(args.repeat, "b")
    paced = sample_events(args.repeat, "p")[: args.latency_events]
    results = [measure(bootstrap, PASSTHROUGH, backlog, paced, rate=args.rate)]
    if "faust" in engines:
        results.append(measure(bootstrap, FAUST, backlog, paced, rate=args.rate))
    if "flink" in engines:
        flink = measure(
            bootstrap, FLINK, backlog, paced, rate=args.rate, checkpoint_interval_s=interval
        )
        flink.job = f"{FLINK}, checkpoint every {interval:g} s"
        results.append(flink)
    print(report(results))  # noqa: T201 - the benchmark's output


if __name__ == "__main__":
    main()
