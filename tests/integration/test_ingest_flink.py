"""The PyFlink ingest job against the real broker: outputs, bad input, parity, exactly once.

The job runs as a subprocess (``python -m jobs.cli_flink``) on private topics,
with 2 s checkpoints so its transactions commit quickly. Input goes in phases
(turns, then actions, then CRM webhooks), each published once the job has
committed the previous one: a user's events on different topics have no
defined order in any engine, and the review depends on it (a confirm_memory
action must come after the turn that made the pending item).

Parity: the job's ops equal, field for field (fact ids, versions, validity,
lineage, encodings), the ops of ``IngestPipeline`` run in this process over the
records the job consumed — the reference the Faust worker's test holds its
engine to — and equal the Faust worker's own ops on an identical input.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from ingest_helpers import (
    GROUP_ID,
    REPO_ROOT,
    Message,
    Outputs,
    Worker,
    create_topics,
    delete_topics,
    parse_op,
    publish,
    read_outputs,
    sample_messages,
    wait_caught_up,
)

from connectors.kafka_io import Record, read_topic
from jobs.ingest_flink import latest_checkpoint
from jobs.stages import load_pipeline, run_batch
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.deadletter import DeadLetterReason
from schemas.ops import OpType
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, INPUT_TOPICS, USER_ACTIONS

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
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class FlinkJob:
    """One ``memstream flink`` subprocess on a namespace, its output in a log file."""

    def __init__(self, settings: Settings, namespace: str, log_path: Path, *args: str) -> None:
        self.settings = settings
        self.namespace = namespace
        self.log_path = log_path
        command = [sys.executable, "-m", "jobs.cli_flink", "--namespace", namespace]
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

    def checkpoint(self) -> int:
        """The number of the newest completed checkpoint (0: none yet)."""
        root = self.settings.state_dir / "flink" / "checkpoints" / (self.namespace + GROUP_ID)
        latest = latest_checkpoint(root)
        return int(latest.name.removeprefix("chk-")) if latest is not None else 0

    def settle(self, topics: Sequence[str]) -> None:
        """Wait until the job committed the end of ``topics`` and one more checkpoint.

        Source offsets and the outputs' transaction are committed as the same
        checkpoint completes, in no fixed order: the next checkpoint is past both.
        """
        bootstrap = self.settings.kafka.bootstrap
        wait_caught_up(bootstrap, self.namespace, [self.namespace + t for t in topics], self)
        seen = self.checkpoint()
        deadline = time.monotonic() + CHECKPOINT_TIMEOUT_S
        while self.checkpoint() <= seen:
            assert self.alive(), f"job exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"no checkpoint after #{seen}:\n{self.log_tail()}"
            time.sleep(0.2)


def phase_messages(topic: str) -> list[Message]:
    """A slice of the sample stream of ``topic``, then its bad messages."""
    return sample_messages(topic, SAMPLE_LIMIT[topic]) + [m for m, _ in BAD_MESSAGES]


@dataclass
class Run:
    """One job over the phased input."""

    namespace: str
    outputs: Outputs
    inputs: dict[str, list[Record]]
    alive_after_input: bool


def _namespace() -> str:
    return f"test.flink.{uuid.uuid4().hex[:10]}."


@pytest.fixture(scope="module")
def flink_run(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The job over the whole phased input, fault-free."""
    bootstrap, namespace = settings.kafka.bootstrap, _namespace()
    create_topics(bootstrap, namespace, PARTITIONS)
    job = FlinkJob(settings, namespace, tmp_path_factory.mktemp("flink") / "job.log")
    try:
        for done, topic in enumerate(PHASES, start=1):
            publish(bootstrap, namespace + topic, phase_messages(topic))
            job.settle(PHASES[:done])
        yield Run(
            namespace,
            read_outputs(bootstrap, namespace),
            {t: read_topic(bootstrap, namespace + t) for t in PHASES},
            alive_after_input=job.alive(),
        )
    finally:
        job.kill()
        delete_topics(bootstrap, namespace)


def reference_ops(
    pipeline: IngestPipeline, inputs: dict[str, list[Record]], phases: Sequence[str]
) -> dict[str, str]:
    """op_id → op JSON from the pure pipeline over ``inputs``, one batch per phase."""
    states: dict[str, UserMemoryState] = {}
    ops: dict[str, str] = {}
    for topic in phases:
        records = sorted(inputs[topic], key=lambda r: (r.partition, r.offset))
        source = [
            SourceRecord(topic, r.partition, r.offset, r.key.encode() if r.key else None, r.value)
            for r in records
        ]
        batch = run_batch(pipeline, source, states.get)
        states |= batch.states
        ops |= {op.op_id: op.model_dump_json() for r in batch.results for op in r.ops}
    return ops


def written_ops(outputs: Outputs) -> dict[str, str]:
    """op_id → op JSON of every op on memory.ops; fails on an op written twice."""
    counts = Counter(parse_op(r).op_id for r in outputs.ops)
    assert not [op_id for op_id, n in counts.items() if n > 1], "an op was written twice"
    return {op.op_id: op.model_dump_json() for op in map(parse_op, outputs.ops)}


@pytest.fixture(scope="module")
def pipeline(settings: Settings) -> IngestPipeline:
    return load_pipeline(settings)


def test_job_emits_exactly_the_pipelines_ops(flink_run: Run, pipeline: IngestPipeline) -> None:
    expected = reference_ops(pipeline, flink_run.inputs, PHASES)
    assert expected, "the sample slice must yield operations"
    assert written_ops(flink_run.outputs) == expected


def test_ops_are_keyed_by_user_and_pending_ops_are_copied(flink_run: Run) -> None:
    ops = [parse_op(r) for r in flink_run.outputs.ops]
    assert all(
        r.key == f"{op.tenant_id}:{op.user_id}"
        for r, op in zip(flink_run.outputs.ops, ops, strict=True)
    )
    pending = sorted(r.value for r in flink_run.outputs.pending)
    assert pending, "the sample slice must yield pending items"
    assert pending == sorted(
        r.value
        for r, op in zip(flink_run.outputs.ops, ops, strict=True)
        if op.op_type in PENDING_OPS
    )


def test_bad_input_is_dead_lettered_and_the_job_keeps_running(flink_run: Run) -> None:
    assert flink_run.alive_after_input
    expected = Counter((key, reason) for (key, _), reason in BAD_MESSAGES)
    for topic in INPUT_TOPICS:
        letters = [d for d in flink_run.outputs.dead_letters if d.topic == topic]
        assert Counter((d.key, d.reason) for d in letters) == expected, topic
        # Each names the record it came from, at the end of its partition.
        positions = {(d.partition, d.offset) for d in letters}
        assert len(positions) == len(BAD_MESSAGES)
        assert all(d.stage == "validate" for d in letters)


def test_same_ops_as_the_faust_worker(
    settings: Settings, flink_run: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    bootstrap, namespace = settings.kafka.bootstrap, _namespace()
    create_topics(bootstrap, namespace, PARTITIONS)
    worker = Worker(namespace, tmp_path_factory.mktemp("faust") / "worker.log")
    try:
        for done, topic in enumerate(PHASES, start=1):
            publish(bootstrap, namespace + topic, phase_messages(topic))
            wait_caught_up(bootstrap, namespace, [namespace + t for t in PHASES[:done]], worker)
        faust = read_outputs(bootstrap, namespace)
    finally:
        worker.kill()
        delete_topics(bootstrap, namespace)
    # Same input, same partitions and offsets: the very same ops, lineage included.
    assert written_ops(faust) == written_ops(flink_run.outputs)


def test_resume_after_sigkill_writes_every_op_exactly_once(
    settings: Settings, pipeline: IngestPipeline, tmp_path: Path
) -> None:
    bootstrap, namespace = settings.kafka.bootstrap, _namespace()
    create_topics(bootstrap, namespace, PARTITIONS)
    log = tmp_path / "job.log"
    try:
        first = FlinkJob(settings, namespace, log)
        try:
            publish(bootstrap, namespace + DIALOGUE_EVENTS, phase_messages(DIALOGUE_EVENTS))
            first.settle(PHASES[:1])
            # Killed while the actions are in flight: a transaction is open.
            publish(bootstrap, namespace + USER_ACTIONS, phase_messages(USER_ACTIONS))
            time.sleep(CHECKPOINT_INTERVAL_S)
        finally:
            first.kill()
        resumed = FlinkJob(settings, namespace, log, "--resume")
        try:
            resumed.settle(PHASES[:2])
            outputs = read_outputs(bootstrap, namespace)
            inputs = {t: read_topic(bootstrap, namespace + t) for t in PHASES[:2]}
        finally:
            resumed.kill()
    finally:
        delete_topics(bootstrap, namespace)
    # A resume from scratch would write the turns' ops again; a lost
    # transaction would miss some: exactly the reference, each op once.
    assert written_ops(outputs) == reference_ops(pipeline, inputs, PHASES[:2])
