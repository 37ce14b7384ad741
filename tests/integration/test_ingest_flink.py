"""The PyFlink ingest job against the real broker: outputs, bad input, parity, exactly once.

The job runs as a subprocess (``python -m jobs.cli.flink``) on private topics,
with 2 s checkpoints so its transactions commit quickly. Input goes in phases
(turns, then actions, then CRM webhooks), each published once the job has
committed the previous one: a user's events on different topics have no
defined order in any engine, and the review depends on it (a confirm_memory
action must come after the turn that made the pending item).

Parity: the job's ops equal, field for field (op and fact ids, versions,
validity, lineage, encodings), the ops of ``IngestPipeline`` run in this process
over the records the job consumed — the reference the Faust worker's test holds
its engine to — and the Faust worker's own ops, the worker running beside the
job on an identical input. Vectors are equal up to float32 noise: MiniLM's
output moves in the 7th decimal with the batch it is computed in (the job runs
one record at a time, the worker and the reference in batches).

Exactly once: the job is SIGKILLed once mid-stream, with ops in an open
transaction, and resumed from its last checkpoint; every op must still be
written exactly once (a resume from scratch would repeat ops, a lost
transaction would miss some).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from flink_helpers import assert_same_ops, reference_ops, written_ops
from ingest_helpers import (
    BEHAVIOUR_KEY,
    BEHAVIOUR_VIEWS,
    GROUP_ID,
    REPO_ROOT,
    Message,
    Outputs,
    Worker,
    behaviour_messages,
    create_topics,
    delete_topics,
    out_of_bounds,
    parse_op,
    publish,
    read_outputs,
    sample_messages,
    wait_caught_up,
)

from connectors.kafka_io import Record, end_offsets, read_topic
from connectors.kafka_offsets import OffsetReader
from jobs.ingest.flink_job import latest_checkpoint
from jobs.ingest.stages import load_pipeline
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline
from schemas.deadletter import DeadLetterReason
from schemas.ops import OpType
from schemas.topics import (
    CRM_WEBHOOKS,
    DIALOGUE_EVENTS,
    INPUT_TOPICS,
    USER_ACTIONS,
    Topics,
)

# Each checkpoint commits the outputs' transaction: short ones keep the test quick.
CHECKPOINT_INTERVAL_S = 2.0
PARTITIONS = 3
PHASES = (DIALOGUE_EVENTS, USER_ACTIONS, CRM_WEBHOOKS)
# Events per topic from the sample stream: several users of two tenants, with
# facts, changed values, pending items and their confirmations.
SAMPLE_LIMIT = {DIALOGUE_EVENTS: 40, USER_ACTIONS: 20, CRM_WEBHOOKS: 10}
# Bad input on every topic, published after the phase's events so that the
# keyless one (spread randomly) cannot shift the offsets of valid events.
BAD_MESSAGES: list[tuple[Message, DeadLetterReason]] = [
    (("acme:mallory", b"{not json"), DeadLetterReason.MALFORMED_JSON),
    (("acme:mallory", b"\xff\xfe not utf-8"), DeadLetterReason.NOT_UTF8),
    (
        ("acme:mallory", b'{"schema_version": 1, "event_id": "e-1"}'),
        DeadLetterReason.SCHEMA_VIOLATION,
    ),
    ((None, b"[1, 2, 3]"), DeadLetterReason.SCHEMA_VIOLATION),
]
PENDING_OPS = {OpType.ADD_PENDING, OpType.RESOLVE_PENDING}
# After the source offsets are committed, the next checkpoint follows within
# one interval; this bounds a stuck job, not the speed of a healthy one.
CHECKPOINT_TIMEOUT_S = 60.0
# The job is SIGKILLed once, mid-way through this phase, and resumed.
KILLED_PHASE = USER_ACTIONS
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class FlinkJob:
    """One ``memstream flink`` subprocess on a namespace, its output in a log file."""

    def __init__(self, settings: Settings, namespace: str, log_path: Path, *args: str) -> None:
        self.settings = settings
        self.namespace = namespace
        self.log_path = log_path
        self.args = args
        command = [sys.executable, "-m", "jobs.cli.flink", "--namespace", namespace]
        # The helpers watch the group named GROUP_ID; the namespace keeps the
        # job apart from any Faust worker.
        command += ["--group-id", GROUP_ID, "--checkpoint-interval", str(CHECKPOINT_INTERVAL_S)]
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, *args],
                cwd=REPO_ROOT,
                env={**os.environ, **_OFFLINE_ENV},
                stdout=log,
                stderr=log,
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs (the gateway JVM exits with its parent)."""
        self.process.kill()
        self.process.wait(timeout=30)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def resume(self) -> FlinkJob:
        """A new job on the same namespace and log, restoring the newest checkpoint."""
        return FlinkJob(self.settings, self.namespace, self.log_path, *self.args, "--resume")

    @property
    def checkpoint_dir(self) -> Path:
        return self.settings.state_dir / "flink" / "checkpoints" / (self.namespace + GROUP_ID)

    def checkpoint(self) -> int:
        """The number of the newest completed checkpoint (0: none yet)."""
        latest = latest_checkpoint(self.checkpoint_dir)
        return int(latest.name.removeprefix("chk-")) if latest is not None else 0

    def settle(self, topics: Sequence[str]) -> None:
        """Wait until the job committed the end of ``topics`` and one more checkpoint.

        Source offsets and the outputs' transaction are committed as the same
        checkpoint completes, in no fixed order: the next checkpoint is past both.
        """
        bootstrap = self.settings.kafka.bootstrap
        wait_caught_up(bootstrap, self.namespace, Topics(self.namespace).names(topics), self)
        seen = self.checkpoint()
        deadline = time.monotonic() + CHECKPOINT_TIMEOUT_S
        while self.checkpoint() <= seen:
            assert self.alive(), f"job exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"no checkpoint after #{seen}:\n{self.log_tail()}"
            time.sleep(0.2)


def phase_messages(topic: str) -> list[Message]:
    """A slice of the sample stream of ``topic``, then its bad messages and out-of-bounds events.

    The user actions also hold a shopper's behaviour, half of it before the
    slice and half after, so the kill in that phase lands inside the window.
    """
    bad = [m for m, _ in BAD_MESSAGES] + out_of_bounds(topic)
    sample = sample_messages(topic, SAMPLE_LIMIT[topic])
    if topic == USER_ACTIONS:
        shopper = behaviour_messages()
        half = len(shopper) // 2
        sample = shopper[:half] + sample + shopper[half:]
    return sample + bad


@dataclass
class Run:
    """The Flink job and the Faust worker over the same phased input."""

    flink: Outputs
    faust: Outputs
    inputs: dict[str, list[Record]]
    alive_after_input: bool
    # The killed phase's topic: the job's committed offsets at the kill, and
    # the topic's end (all of it was published before the kill).
    committed_at_kill: dict[tuple[str, int], int]
    ends_at_kill: dict[tuple[str, int], int]


def _namespace(engine: str) -> str:
    return f"test.{engine}.{uuid.uuid4().hex[:10]}."


def kill_mid_phase(job: FlinkJob, topic: str) -> tuple[FlinkJob, dict[tuple[str, int], int]]:
    """SIGKILL once the phase's first ops sit in an open transaction; resume a new job.

    Returns the new job and the group's committed offsets of ``topic`` at the kill.
    """
    bootstrap, source = job.settings.kafka.bootstrap, Topics(job.namespace).name(topic)
    written = sum(end_offsets(bootstrap, Topics(job.namespace).memory_ops).values())
    deadline = time.monotonic() + CHECKPOINT_TIMEOUT_S
    # The end offset counts uncommitted records: new ops, not yet visible.
    while sum(end_offsets(bootstrap, Topics(job.namespace).memory_ops).values()) == written:
        assert job.alive(), job.log_tail()
        assert time.monotonic() < deadline, f"no new ops:\n{job.log_tail()}"
        time.sleep(0.1)
    job.kill()
    positions = OffsetReader(bootstrap).committed(job.namespace + GROUP_ID)
    return job.resume(), {p: n for p, n in positions.items() if p[0] == source}


@pytest.fixture(scope="module")
def run(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Both engines side by side (their start-ups overlap), the job killed once mid-stream."""
    bootstrap, logs = settings.kafka.bootstrap, tmp_path_factory.mktemp("engines")
    flink_ns, faust_ns = _namespace("flink"), _namespace("faust")
    for namespace in (flink_ns, faust_ns):
        create_topics(bootstrap, namespace, PARTITIONS)
    job = FlinkJob(settings, flink_ns, logs / "flink.log")
    worker = Worker(faust_ns, logs / "faust.log")
    committed_at_kill: dict[tuple[str, int], int] = {}
    try:
        for done, topic in enumerate(PHASES, start=1):
            for namespace in (flink_ns, faust_ns):
                publish(bootstrap, Topics(namespace).name(topic), phase_messages(topic))
            if topic == KILLED_PHASE:
                job, committed_at_kill = kill_mid_phase(job, topic)
            job.settle(PHASES[:done])
            wait_caught_up(bootstrap, faust_ns, Topics(faust_ns).names(PHASES[:done]), worker)
        yield Run(
            flink=read_outputs(bootstrap, flink_ns),
            faust=read_outputs(bootstrap, faust_ns),
            inputs={t: read_topic(bootstrap, Topics(flink_ns).name(t)) for t in PHASES},
            alive_after_input=job.alive(),
            committed_at_kill=committed_at_kill,
            ends_at_kill={
                (Topics(flink_ns).name(KILLED_PHASE), p): end
                for p, end in end_offsets(bootstrap, Topics(flink_ns).name(KILLED_PHASE)).items()
            },
        )
    finally:
        job.kill()
        worker.kill()
        shutil.rmtree(job.checkpoint_dir, ignore_errors=True)
        for namespace in (flink_ns, faust_ns):
            delete_topics(bootstrap, namespace)


@pytest.fixture(scope="module")
def pipeline(settings: Settings) -> IngestPipeline:
    return load_pipeline(settings)


def test_job_emits_exactly_the_pipelines_ops_across_a_sigkill(
    run: Run, pipeline: IngestPipeline
) -> None:
    # Killed mid-phase: the phase's offsets were not all committed.
    assert any(run.committed_at_kill.get(p, 0) < end for p, end in run.ends_at_kill.items())
    # Each op once (written_ops fails on a repeat: a resume from scratch would
    # repeat the turns' ops), none lost with the aborted transaction.
    assert_same_ops(written_ops(run.flink), reference_ops(pipeline, run.inputs, PHASES))


def test_job_emits_the_same_ops_as_the_faust_worker(run: Run) -> None:
    # Same input, so the same partitions and offsets: lineage is equal too.
    assert_same_ops(written_ops(run.flink), written_ops(run.faust))


def test_ops_are_keyed_by_user_and_pending_ops_are_copied(run: Run) -> None:
    ops = [parse_op(r) for r in run.flink.ops]
    assert [r.key for r in run.flink.ops] == [f"{op.tenant_id}:{op.user_id}" for op in ops]
    pending = [
        r.value for r, op in zip(run.flink.ops, ops, strict=True) if op.op_type in PENDING_OPS
    ]
    assert pending, "the sample slice must yield pending items"
    assert sorted(r.value for r in run.flink.pending) == sorted(pending)


def test_bad_input_is_dead_lettered_and_the_job_keeps_running(run: Run) -> None:
    assert run.alive_after_input
    expected = Counter((key, reason) for (key, _), reason in BAD_MESSAGES)
    for topic in INPUT_TOPICS:
        letters = [d for d in run.flink.dead_letters if d.topic == topic]
        # Each event over a bound (issue 15's poison among them) is a schema violation too.
        bounds = out_of_bounds(topic)
        expected_here = expected + Counter(
            (key, DeadLetterReason.SCHEMA_VIOLATION) for key, _ in bounds
        )
        assert Counter((d.key, d.reason) for d in letters) == expected_here, topic
        assert {v for _, v in bounds} <= {d.original() for d in letters}
        # Each names the record it came from.
        assert len({(d.partition, d.offset) for d in letters}) == len(BAD_MESSAGES) + len(bounds)
        assert all(d.stage == "validate" for d in letters)


def test_behaviour_windows_count_each_action_once_across_the_kill(run: Run) -> None:
    """The shopper's window was checkpointed with the review state: nothing counted twice."""
    ops = [parse_op(r) for r in run.flink.ops if r.key == BEHAVIOUR_KEY]
    interest = [
        op.record
        for op in ops
        if op.op_type is OpType.UPSERT_FACT and op.record and op.record.predicate == "browsing"
    ]
    # An interest from the third view on, one version per view after it.
    assert [r.version for r in interest] == list(range(1, BEHAVIOUR_VIEWS - 1))
    assert interest[-1].text.startswith(
        f"viewed Noise-cancelling earphones {BEHAVIOUR_VIEWS} times"
    )
    searches = [op.episode.text for op in ops if op.op_type is OpType.UPSERT_EPISODE and op.episode]
    assert searches == [
        "searched: wireless earphones",
        "searched: noise-cancelling earphone reviews",
    ]
    assert any(op.record and op.record.predicate == "search_drift" for op in ops)
