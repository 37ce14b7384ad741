"""A restart of the whole Flink session cluster resumes the job from its retained checkpoint.

The module starts its own cluster (cluster_helpers.own_cluster), runs the job
over the sample's turns until it has committed them, publishes the actions,
SIGKILLs the JobManager and both TaskManagers at once (the job's checkpoints
stay on disk: RETAIN_ON_CANCELLATION, no graceful stop), starts the cluster
again and submits ``memstream flink --cluster HOST:PORT --resume``. The new
job must restore the first job's newest checkpoint and continue: ``memory.ops``
then holds exactly the single-process reference's operations, each once (a
start from scratch would repeat every op, an older checkpoint some).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_helpers import (
    PHASES,
    Scenario,
    own_cluster,
    phase_messages,
    sigkill,
    steady_phase,
    through,
)
from flink_helpers import assert_same_ops, written_ops
from ingest_helpers import publish, read_outputs

import infra
from infra.flink_cluster import cluster_services
from memstream.settings import Settings
from schemas.ops import MemoryOperation
from schemas.topics import USER_ACTIONS, Topics


@pytest.fixture(scope="module")
def scenario(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """Turns on a first cluster; actions on the restarted one, through the resumed job."""
    result = Scenario()
    state_dir = tmp_path_factory.mktemp("flink-cluster-restart")
    with own_cluster(settings, state_dir, result) as (own, job):
        steady_phase(job, result)
        bootstrap, topics = own.kafka.bootstrap, Topics(job.namespace)
        publish(bootstrap, topics.name(USER_ACTIONS), phase_messages(USER_ACTIONS))
        for service in cluster_services(own):
            sigkill(service)
        job.lap(result, "cluster killed")
        infra.up(own, [infra.FLINK])
        job.lap(result, "cluster up again")
        result.job_ids["resumed"] = job.submit("--resume")
        job.lap(result, "resumed job submitted")
        restored = job.get("/checkpoints")["latest"]["restored"]
        result.resumed_from = restored["external_path"] if restored else None
        job.settle(PHASES[:2])
        result.outputs[USER_ACTIONS] = read_outputs(bootstrap, job.namespace)
        job.lap(result, "phase 2")
    yield result


@pytest.fixture(scope="module")
def reference(scenario: Scenario) -> dict[str, MemoryOperation]:
    return scenario.reference()


def test_a_restarted_cluster_resumes_from_the_retained_checkpoint(
    scenario: Scenario, reference: dict[str, MemoryOperation]
) -> None:
    outputs = scenario.outputs_after(USER_ACTIONS)
    # A new job on the new cluster, restored from the first job's checkpoint.
    first, resumed = scenario.job_ids["first"], scenario.job_ids["resumed"]
    assert resumed != first
    assert scenario.resumed_from is not None and f"/{first}/chk-" in scenario.resumed_from
    assert through(reference, 2).keys() > through(reference, 1).keys(), "actions yield ops"
    assert_same_ops(written_ops(outputs), through(reference, 2))
