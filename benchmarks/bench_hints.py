"""Hint latency: from a user turn's event to its hint on ``memory.hints``, at offered rates.

    python benchmarks/bench_hints.py [--rates 23,46] [--seconds 120]

Needs the local services (`memstream infra up`). The real path, as deployed:
producer -> dialogue.events (and the other inputs) -> ``memstream worker``
(Faust, every stage, the retrieval trigger) -> memory.ops -> ``memstream
sink`` (writes, then the hint composer's recall, one Kafka transaction) ->
memory.hints. Both jobs run as subprocesses on private topics, in their own
consumer groups, store namespace and embedded Chroma directory, all removed
afterwards (benchmarks/bench_ingest.py's machinery).

Per rate: one copy of the sample stream (fresh users) as a backlog first, so
the worker has loaded its models and the sink MiniLM (its first hint loads
it); then the sample stream, repeated with fresh users, offered at the rate
for ``--seconds``. Latency = the moment a read_committed consumer polling
``memory.hints`` every 50 ms first receives the turn's hint, minus the
producer's create time of the turn's event; over every paced turn whose
operations end with a ``request_hint``. Beside it, the same for the request
itself becoming readable on ``memory.ops`` (the worker's share; the rest is
the sink's: its poll, the batch's writes, recall, the transaction). The
cost column is the share of paced user turns that requested one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from bench_ingest import FAUST, Event, _create_topics, _start, _start_sink, publish, sample_events
from ingest_jobs import Job
from ingest_readers import Watcher, read_stamped
from ingest_report import percentile
from ingest_stores import drop_store_namespace
from rich.console import Console
from rich.table import Table

from connectors import kafka_admin
from memstream.settings import get_settings
from schemas.hints import MemoryHint
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS, Topics

DEFAULT_RATES = (23.0, 46.0)  # issue 16: the rates bench_ingest offers
# After the last paced event, how long the jobs may take to drain: a wait,
# not a measurement (a hint still missing then is counted as missing).
DRAIN_TIMEOUT_S = 300.0


def user_turn_ids(events: Sequence[Event]) -> set[str]:
    """The event ids of the user turns among ``events``."""
    ids = set()
    for topic, _, value in events:
        if topic == DIALOGUE_EVENTS:
            event = json.loads(value)
            if event.get("role") == "user":
                ids.add(str(event["event_id"]))
    return ids


def paced_stream(rate: float, seconds: float, tag: str) -> list[Event]:
    """The sample stream repeated (fresh users per copy), ``rate`` x ``seconds`` events."""
    wanted = int(rate * seconds)
    one = len(sample_events(1, tag))
    return sample_events(-(-wanted // one), tag)[:wanted]


class Run:
    """One rate's numbers."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.events = 0
        self.user_turns = 0
        self.requested = 0  # paced turns whose ops end with request_hint
        self.latencies_ms: list[float] = []
        self.request_ms: list[float] = []  # event -> its request_hint readable on memory.ops
        self.offered_s = 0.0
        self.load = ""


def _requested_hints(bootstrap: str, namespace: str) -> set[str]:
    """Event ids of the turns whose operations requested a hint."""
    wanted = set()
    for record in read_stamped(bootstrap, [Topics(namespace).memory_ops]):
        op = MemoryOperation.model_validate_json(record.value)
        if op.op_type is OpType.REQUEST_HINT and op.hint is not None:
            wanted.add(op.hint.event_id)
    return wanted


def _wait_for_partitions(bootstrap: str, names: Sequence[str], timeout_s: float = 60.0) -> None:
    """Until the broker's metadata lists every partition of ``names``.

    A watcher assigns the partitions the metadata lists when it starts: right
    after the topics are created it can list none, and the watcher then sees
    nothing (a first run at 23 ev/s saw 0 of 56 hints).
    """
    wanted = get_settings().kafka.partitions
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counts = kafka_admin.partition_counts(bootstrap, names)
        if all(counts.get(name, 0) >= wanted for name in names):
            return
        time.sleep(0.5)
    raise RuntimeError(f"topics {list(names)} not listed with {wanted} partitions")


def _request_of(_topic: str, value: bytes) -> str | None:
    """The turn a ``memory.ops`` record requests a hint for (None: another operation)."""
    op = MemoryOperation.model_validate_json(value)
    return op.hint.event_id if op.op_type is OpType.REQUEST_HINT and op.hint else None


def measure(bootstrap: str, rate: float, seconds: float) -> Run:
    """Backlog (warm-up), then the paced stream at ``rate``; hint latency per triggering turn."""
    settings = get_settings()
    run_id = uuid.uuid4().hex[:8]
    namespace = f"bench.hints.{run_id}."
    topics = Topics(namespace)
    backlog = sample_events(1, f"hb{run_id}")
    paced = paced_stream(rate, seconds, f"hp{run_id}")
    store_namespace = f"benchhints{run_id}"
    chroma_dir = Path(tempfile.mkdtemp(prefix="bench-hints-chroma-"))
    jobs: list[Job] = []
    watcher: Watcher | None = None
    requests: Watcher | None = None
    run = Run(rate)
    try:
        _create_topics(bootstrap, namespace)
        kafka_admin.ensure_topics(
            bootstrap, [kafka_admin.TopicSpec(topics.hints, settings.kafka.partitions)]
        )
        _wait_for_partitions(bootstrap, [topics.hints, topics.memory_ops])
        watcher = Watcher(
            bootstrap,
            [topics.hints],
            lambda _topic, value: MemoryHint.model_validate_json(value).event_id,
        )
        requests = Watcher(bootstrap, [topics.memory_ops], _request_of)
        publish(bootstrap, namespace, backlog, rate=None)
        worker = _start(FAUST, namespace, 0.0)
        jobs.append(worker)
        sink = _start_sink(FAUST, namespace, store_namespace, chroma_dir)
        jobs.append(sink)
        worker.wait_caught_up(bootstrap, topics.inputs)
        sink.wait_caught_up(bootstrap, [topics.memory_ops])
        run.load = Path("/proc/loadavg").read_text().split()[0]
        started = time.monotonic()
        publish(bootstrap, namespace, paced, rate=rate)
        run.offered_s = time.monotonic() - started
        worker.wait_caught_up(bootstrap, topics.inputs)
        sink.wait_caught_up(bootstrap, [topics.memory_ops])
        run.load += " -> " + Path("/proc/loadavg").read_text().split()[0]
        paced_turns = user_turn_ids(paced)
        requested = _requested_hints(bootstrap, namespace) & paced_turns
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() < deadline and not requested <= set(watcher.first_seen_ms):
            time.sleep(0.5)
        sent = {
            str(json.loads(r.value)["event_id"]): r.ts_ms
            for r in read_stamped(bootstrap, [topics.dialogue_events])
        }
        seen = dict(watcher.first_seen_ms)
        run.events = len(paced)
        run.user_turns = len(paced_turns)
        run.requested = len(requested)
        run.latencies_ms = [float(seen[e] - sent[e]) for e in sorted(requested) if e in seen]
        asked = dict(requests.first_seen_ms)
        run.request_ms = [float(asked[e] - sent[e]) for e in sorted(requested) if e in asked]
        return run
    finally:
        for job in jobs:
            job.stop()
        for reader in (watcher, requests):
            if reader is not None:
                reader.close()
        drop_store_namespace(settings, store_namespace)
        shutil.rmtree(chroma_dir, ignore_errors=True)
        mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(namespace)]
        kafka_admin.delete_topics(bootstrap, mine)
        kafka_admin.delete_groups_with_prefix(bootstrap, namespace)


def table(runs: Sequence[Run]) -> Table:
    """The runs as a rich table."""
    out = Table(title="event -> hint on memory.hints (Faust worker + sink, read_committed)")
    for column in (
        "offered ev/s",
        "paced events",
        "user turns",
        "fired (cost)",
        "hints seen",
        "p50 ms",
        "p95 ms",
        "max ms",
        "-> request on memory.ops p50 / p95 ms",
        "load 1-min (start -> end)",
    ):
        out.add_column(column, justify="right")
    for run in runs:
        lat = run.latencies_ms
        share = run.requested / run.user_turns if run.user_turns else float("nan")
        out.add_row(
            f"{run.rate:g} ({run.events / max(run.offered_s, 1e-3):.1f} sent)",
            str(run.events),
            str(run.user_turns),
            f"{run.requested} ({share:.3f})",
            f"{len(lat)}/{run.requested}",
            f"{percentile(lat, 0.5):,.0f}",
            f"{percentile(lat, 0.95):,.0f}",
            f"{max(lat, default=float('nan')):,.0f}",
            f"{percentile(run.request_ms, 0.5):,.0f} / {percentile(run.request_ms, 0.95):,.0f}",
            run.load,
        )
    return out


def main() -> None:
    """Measure each rate in turn; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="23,46", help="comma-separated offered events/s")
    parser.add_argument("--seconds", type=float, default=120.0, help="paced phase per rate")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    if not rates or min(rates) <= 0 or args.seconds <= 0:
        parser.error("rates and --seconds must be positive")
    bootstrap = get_settings().kafka.bootstrap
    runs = [measure(bootstrap, rate, args.seconds) for rate in rates]
    Console(width=160).print(table(runs))


if __name__ == "__main__":
    main()
