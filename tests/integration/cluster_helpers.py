"""What the session-cluster tests share: a cluster of their own, the job on it, faults.

test_flink_cluster.py (exact ops, a SIGKILLed TaskManager, bad input) and
test_flink_cluster_restart.py (a SIGKILLed and restarted cluster, --resume)
each start their own cluster through ``infra.up(..., ["flink"])`` on free
ports in a private state dir, submit with ``memstream flink --cluster
HOST:PORT --detach`` as a user does, and watch the job through the REST API
and Kafka.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from flink_helpers import reference_ops
from ingest_helpers import (
    GROUP_ID,
    REPO_ROOT,
    Message,
    Outputs,
    create_topics,
    delete_topics,
    publish,
    read_outputs,
    sample_messages,
    wait_caught_up,
)

import infra
from connectors.kafka_io import Record, end_offsets, read_topic
from infra import process
from infra.flink_cluster import cluster_services, taskmanager_index
from infra.service import Service
from jobs.ingest.flink_job import latest_checkpoint
from jobs.ingest.stages import load_pipeline
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline
from schemas.ops import MemoryOperation
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS, Topics

# Each checkpoint commits the outputs' transaction: short ones keep the test quick.
CHECKPOINT_INTERVAL_S = 2.0
# Three partitions per topic; parallelism 2 spreads them over both TaskManagers.
PARTITIONS = 3
PARALLELISM = 2
PHASES = (DIALOGUE_EVENTS, USER_ACTIONS, CRM_WEBHOOKS)
# The mini-cluster test's slice: several users of two tenants with facts,
# changed values, pending items and confirmations. Fewer actions yield no op
# at all (12 did not: no user reaches the behaviour thresholds), and the kill
# needs a phase's ops in an open transaction.
SAMPLE_LIMIT = {DIALOGUE_EVENTS: 40, USER_ACTIONS: 20, CRM_WEBHOOKS: 10}
# A checkpoint follows within one interval of the source offsets' commit;
# a restart (deploy, Python worker, models) takes longer on a fresh TaskManager.
CHECKPOINT_TIMEOUT_S = 120.0
# Bounds a stuck submission: the client JVM plus the job file's Python took
# ~35 s on the loaded machine.
SUBMIT_TIMEOUT_S = 240.0
_FINAL_STATES = {"FAILED", "CANCELED", "FINISHED", "SUSPENDED"}
_JOB_ID = re.compile(r"JobID ([0-9a-f]{32})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cluster_settings(settings: Settings, state_dir: Path) -> Settings:
    """The session's settings with the cluster's files in ``state_dir`` and free ports.

    The TransE model stays the session's, so the job and the in-process
    reference load the same stages.
    """
    flink = settings.flink.model_copy(update={"rest_port": free_port(), "rpc_port": free_port()})
    ingest = settings.ingest.model_copy(update={"transe_dir": settings.transe_model_dir})
    return settings.model_copy(update={"state_dir": state_dir, "flink": flink, "ingest": ingest})


def job_environment(settings: Settings) -> dict[str, str]:
    """What a `memstream flink` subprocess needs to read ``settings`` as this module built them."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MEMSTREAM_STATE_DIR": str(settings.state_dir),
        "MEMSTREAM_FLINK__REST_PORT": str(settings.flink.rest_port),
        "MEMSTREAM_FLINK__RPC_PORT": str(settings.flink.rpc_port),
        "MEMSTREAM_INGEST__TRANSE_DIR": str(settings.transe_model_dir),
        # Two Python workers on one machine: no /metrics endpoint to fight over.
        "MEMSTREAM_METRICS__FLINK_PORT": "0",
    }


class ClusterJob:
    """The ingest job on the module's cluster, watched through the REST API and Kafka."""

    def __init__(self, settings: Settings, namespace: str, log_path: Path, started: float) -> None:
        self.settings = settings
        self.namespace = namespace
        self.log_path = log_path
        self.started = started
        self.job_id = ""

    def lap(self, result: Scenario, name: str) -> None:
        """Record the seconds since the module's start at ``name``."""
        result.seconds[name] = round(time.monotonic() - self.started, 1)

    @property
    def rest(self) -> str:
        return f"http://{self.settings.flink.rest_address}"

    def submit(self, *extra: str) -> str:
        """``memstream flink --cluster HOST:PORT --detach``; returns the JobID it printed."""
        command = [sys.executable, "-m", "jobs.cli.flink", "--cluster"]
        command += [self.settings.flink.rest_address, "--detach", "--namespace", self.namespace]
        command += ["--group-id", GROUP_ID, "--checkpoint-interval", str(CHECKPOINT_INTERVAL_S)]
        command += ["--parallelism", str(PARALLELISM), *extra]
        with self.log_path.open("ab") as log:
            log.write(f"\n=== {' '.join(command)}\n".encode())
            log.flush()
            done = subprocess.run(
                command,
                cwd=REPO_ROOT,
                env=job_environment(self.settings),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=SUBMIT_TIMEOUT_S,
                check=False,
            )
        found = _JOB_ID.findall(self.log_path.read_text(errors="replace"))
        assert done.returncode == 0 and found, f"submission failed:\n{self.log_tail()}"
        self.job_id = found[-1]
        return self.job_id

    def get(self, path: str) -> Any:
        response = httpx.get(f"{self.rest}/jobs/{self.job_id}{path}", timeout=5.0)
        response.raise_for_status()
        return response.json()

    def state(self) -> str:
        try:
            return str(self.get("")["state"])
        except httpx.HTTPError as exc:
            return f"unreachable ({exc})"

    def alive(self) -> bool:
        """Not failed, cancelled or finished (RESTARTING counts: it comes back)."""
        return self.state() not in _FINAL_STATES and not self.state().startswith("unreachable")

    def log_tail(self, chars: int = 3000) -> str:
        """The submission log and the end of each cluster process's log."""
        parts = [f"--- {self.log_path}\n{self.log_path.read_text(errors='replace')[-chars:]}"]
        for service in cluster_services(self.settings):
            parts.append(f"--- {service.log_file}\n{process.tail(service.log_file, 15)}")
        return "\n".join(parts)

    def placement(self) -> dict[str, set[int | None]]:
        """Each vertex's TaskManagers (by index) running its subtasks."""
        placed: dict[str, set[int | None]] = {}
        for vertex in self.get("")["vertices"]:
            listing = self.get(f"/vertices/{vertex['id']}/taskmanagers")
            placed[vertex["name"]] = {
                taskmanager_index(tm["taskmanager-id"]) for tm in listing["taskmanagers"]
            }
        return placed

    def wait_running(self, timeout_s: float = CHECKPOINT_TIMEOUT_S) -> None:
        """Until the job and every subtask run."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get("")
            if job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"]):
                return
            assert job["state"] not in _FINAL_STATES, f"job {job['state']}:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"job not running:\n{self.log_tail()}"
            time.sleep(0.5)

    @property
    def checkpoint_dir(self) -> Path:
        return self.settings.state_dir / "flink" / "checkpoints" / (self.namespace + GROUP_ID)

    def checkpoint(self) -> int:
        """The number of the newest completed checkpoint on disk (0: none yet)."""
        latest = latest_checkpoint(self.checkpoint_dir)
        return int(latest.name.removeprefix("chk-")) if latest is not None else 0

    def settle(self, topics: Sequence[str]) -> None:
        """Until the job committed the end of ``topics``, then one more checkpoint."""
        bootstrap = self.settings.kafka.bootstrap
        wait_caught_up(bootstrap, self.namespace, Topics(self.namespace).names(topics), self)
        seen, deadline = self.checkpoint(), time.monotonic() + CHECKPOINT_TIMEOUT_S
        while self.checkpoint() <= seen:
            assert self.alive(), f"job {self.state()}:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"no checkpoint after #{seen}:\n{self.log_tail()}"
            time.sleep(0.2)

    def wait_uncommitted_ops(self) -> None:
        """Until ``memory.ops`` has grown: the phase's first ops in an open transaction."""
        bootstrap, ops = self.settings.kafka.bootstrap, Topics(self.namespace).memory_ops
        written = sum(end_offsets(bootstrap, ops).values())
        deadline = time.monotonic() + CHECKPOINT_TIMEOUT_S
        # The end offset counts uncommitted records: new ops, not yet visible.
        while sum(end_offsets(bootstrap, ops).values()) == written:
            assert self.alive(), f"job {self.state()}:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"no new ops:\n{self.log_tail()}"
            time.sleep(0.1)


def sigkill(service: Service) -> None:
    """SIGKILL the service's process group (a TaskManager's JVM and its Python worker)."""
    pid = service.pid()
    assert pid is not None, f"{service.name} is not running"
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while service.pid() is not None:
        assert time.monotonic() < deadline, f"{service.name} survived SIGKILL"
        time.sleep(0.1)


def phase_messages(topic: str) -> list[Message]:
    return sample_messages(topic, SAMPLE_LIMIT[topic])


def through(reference: dict[str, MemoryOperation], phases: int) -> dict[str, MemoryOperation]:
    """The reference's ops of the first ``phases`` phases: what the job wrote by then."""
    topics = set(PHASES[:phases])
    return {op_id: op for op_id, op in reference.items() if op.lineage.topic in topics}


def run_cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """``memstream flink ARGS`` as a user runs it, with ``settings``' state dir and ports."""
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli.flink", *args],
        cwd=REPO_ROOT,
        env=job_environment(settings),
        capture_output=True,
        text=True,
        timeout=SUBMIT_TIMEOUT_S,
        check=False,
    )


@dataclass
class Scenario:
    """What a module's phases left: outputs after each, facts about the job, the first failure."""

    inputs: dict[str, list[Record]] = field(default_factory=dict)
    outputs: dict[str, Outputs] = field(default_factory=dict)
    placement: dict[str, set[int | None]] = field(default_factory=dict)
    job_ids: dict[str, str] = field(default_factory=dict)
    restored_after_kill: int = 0
    resumed_from: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    failure: str | None = None
    pipeline: Future[IngestPipeline] | None = None

    def outputs_after(self, phase: str) -> Outputs:
        """The outputs once ``phase`` was settled; fails naming what went wrong before."""
        if phase not in self.outputs:
            pytest.fail(f"phase {phase} did not complete: {self.failure}")
        return self.outputs[phase]

    def reference(self) -> dict[str, MemoryOperation]:
        """The reference's ops over every phase's input (an op's lineage names its topic)."""
        assert self.pipeline is not None
        return reference_ops(self.pipeline.result(), self.inputs, PHASES)


@contextmanager
def own_cluster(
    settings: Settings, state_dir: Path, result: Scenario
) -> Iterator[tuple[Settings, ClusterJob]]:
    """A cluster and private topics for one module; both gone at the end, even on failure.

    The reference pipeline loads in a thread meanwhile; an exception inside is
    recorded in ``result.failure`` (the phases that completed keep their proofs).
    """
    own = cluster_settings(settings, state_dir)
    bootstrap, namespace = settings.kafka.bootstrap, f"test.cluster.{uuid.uuid4().hex[:10]}."
    create_topics(bootstrap, namespace, PARTITIONS)
    started = time.monotonic()
    loader = ThreadPoolExecutor(max_workers=1)
    result.pipeline = loader.submit(load_pipeline, settings)
    offline = pytest.MonkeyPatch()
    # The TaskManagers and their Python workers inherit this process's environment.
    offline.setenv("HF_HUB_OFFLINE", "1")
    offline.setenv("TRANSFORMERS_OFFLINE", "1")
    job = ClusterJob(own, namespace, state_dir / "submit.log", started)
    try:
        # A cluster that does not come up fails the module's fixture outright.
        infra.up(own, [infra.FLINK])
        job.lap(result, "cluster up")
        try:
            yield own, job
        except Exception as exc:
            result.failure = f"{type(exc).__name__}: {exc}"
    finally:
        offline.undo()
        topics = Topics(namespace)
        result.inputs = {t: read_topic(bootstrap, topics.name(t)) for t in PHASES}
        infra.down(own, [infra.FLINK])
        job.lap(result, "cluster down")
        delete_topics(bootstrap, namespace)
        loader.shutdown(wait=False)
        print(
            f"flink cluster scenario: seconds {result.seconds}; restored"
            f" {result.restored_after_kill} time(s) after a TaskManager's kill; resumed from"
            f" {result.resumed_from}; failure: {result.failure}"
        )


def steady_phase(job: ClusterJob, result: Scenario) -> None:
    """Turns in, the job submitted, placed on both TaskManagers and caught up."""
    bootstrap, topics = job.settings.kafka.bootstrap, Topics(job.namespace)
    publish(bootstrap, topics.name(DIALOGUE_EVENTS), phase_messages(DIALOGUE_EVENTS))
    result.job_ids["first"] = job.submit()
    job.lap(result, "job submitted")
    job.wait_running()
    result.placement = job.placement()
    job.settle(PHASES[:1])
    result.outputs[DIALOGUE_EVENTS] = read_outputs(bootstrap, job.namespace)
    job.lap(result, "phase 1")
