"""The PyFlink ingest job on a real standalone session cluster, against the real broker.

The module starts its own cluster (one JobManager, two TaskManagers of one
slot each, from pyflink/bin) on free ports in a private state dir
(cluster_helpers.own_cluster), submits the job with ``memstream flink
--cluster HOST:PORT --detach`` (parallelism 2: one subtask per TaskManager)
and stops the cluster at the end, on failure too. Input goes in phases, as in
test_ingest_flink.py, each published once the job committed the previous one:

1. dialogue turns, no fault: ``memory.ops`` holds exactly the single-process
   reference's ops, each once;
2. user actions: one TaskManager (its JVM and Python worker) is SIGKILLed
   while the phase's first ops sit in an open transaction and a replacement
   is started; the same job restarts from its last checkpoint and every op is
   still there exactly once.

A restart of the whole cluster with ``--resume`` is test_flink_cluster_restart.py:
one module for all three would take ~7-8 minutes on the loaded machine.
Bad input (a cluster that is down, a parallelism above the partitions, a
TaskManager that cannot start) closes the module; it needs no cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import (
    PARTITIONS,
    PHASES,
    Scenario,
    cluster_settings,
    free_port,
    own_cluster,
    phase_messages,
    run_cli,
    sigkill,
    steady_phase,
    through,
)
from flink_helpers import assert_same_ops, written_ops
from ingest_helpers import create_topics, delete_topics, publish, read_outputs

import infra
from infra.flink_cluster import FlinkTaskManager
from memstream.settings import Settings
from schemas.ops import MemoryOperation
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS, Topics

# A fresh TaskManager registers in ~20 s on the loaded machine; Flink restarts
# the job every 5 s meanwhile (flink.cluster_restart_*).
REPLACEMENT_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def scenario(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """The two phases on the module's own cluster, which is stopped at the end."""
    result = Scenario()
    with own_cluster(settings, tmp_path_factory.mktemp("flink-cluster"), result) as (own, job):
        steady_phase(job, result)
        bootstrap, topics = own.kafka.bootstrap, Topics(job.namespace)
        publish(bootstrap, topics.name(USER_ACTIONS), phase_messages(USER_ACTIONS))
        job.wait_uncommitted_ops()
        job.lap(result, "phase 2 ops open")
        killed = FlinkTaskManager(own, 1)
        sigkill(killed)
        # The replacement: a new process under a resource id of its own.
        assert killed.start()
        killed.wait_healthy(REPLACEMENT_TIMEOUT_S)
        job.lap(result, "replacement registered")
        job.settle(PHASES[:2])
        result.restored_after_kill = int(job.get("/checkpoints")["counts"]["restored"])
        result.outputs[USER_ACTIONS] = read_outputs(bootstrap, job.namespace)
        job.lap(result, "phase 2")
    yield result


@pytest.fixture(scope="module")
def reference(scenario: Scenario) -> dict[str, MemoryOperation]:
    return scenario.reference()


def test_job_runs_one_subtask_on_each_taskmanager(scenario: Scenario) -> None:
    assert scenario.placement, scenario.failure
    assert all(tms == {1, 2} for tms in scenario.placement.values()), scenario.placement


def test_memory_ops_hold_the_references_ops_each_once(
    scenario: Scenario, reference: dict[str, MemoryOperation]
) -> None:
    outputs = scenario.outputs_after(DIALOGUE_EVENTS)
    assert_same_ops(written_ops(outputs), through(reference, 1))


def test_a_sigkilled_taskmanager_costs_no_op_and_repeats_none(
    scenario: Scenario, reference: dict[str, MemoryOperation]
) -> None:
    outputs = scenario.outputs_after(USER_ACTIONS)
    # The same job came back from a checkpoint, not a new submission from scratch.
    assert scenario.restored_after_kill >= 1
    assert through(reference, 2).keys() > through(reference, 1).keys(), "actions yield ops"
    assert_same_ops(written_ops(outputs), through(reference, 2))


def test_submitting_to_a_cluster_that_is_down_is_exit_2(settings: Settings, tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    done = run_cli(cluster_settings(settings, tmp_path), "--cluster", address)
    assert done.returncode == 2, done.stderr
    assert f"no Flink cluster answers at http://{address}/overview" in done.stderr


def test_a_parallelism_above_the_partitions_is_exit_2(settings: Settings, tmp_path: Path) -> None:
    bootstrap, namespace = settings.kafka.bootstrap, f"test.cluster.bad.{free_port()}."
    create_topics(bootstrap, namespace, PARTITIONS)
    try:
        own = cluster_settings(settings, tmp_path)
        done = run_cli(own, "--namespace", namespace, "--parallelism", str(PARTITIONS + 1))
    finally:
        delete_topics(bootstrap, namespace)
    assert done.returncode == 2, done.stderr
    assert f"above the {PARTITIONS} partitions of the input topics" in done.stderr


def test_a_taskmanager_that_cannot_start_names_its_log(settings: Settings, tmp_path: Path) -> None:
    own = cluster_settings(settings, tmp_path)
    # Too small for Flink's fixed metaspace and overhead: the TaskManager's
    # start script refuses the configuration and exits.
    broken = own.model_copy(
        update={"flink": own.flink.model_copy(update={"taskmanager_memory": "64m"})}
    )
    taskmanager = FlinkTaskManager(broken, 1)
    try:
        assert taskmanager.start()
        with pytest.raises(infra.ServiceStartError) as failed:
            taskmanager.wait_healthy(60)
    finally:
        taskmanager.stop()
    message = str(failed.value)
    assert "flink-taskmanager-1" in message and "exited before it became healthy" in message
    assert f"log: {taskmanager.log_file}" in message
