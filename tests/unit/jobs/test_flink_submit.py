"""The pure parts of the Flink session cluster and of submitting to it: no JVM, no broker."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from infra.flink_cluster import FlinkFiles, taskmanager_index
from infra.lifecycle import FLINK, select
from jobs.ingest.flink_job import FlinkOptions, job_configuration
from jobs.ingest.submit import JOB_FILE, flink_run_command, parse_address
from memstream.settings import Settings


def options(tmp_path: Path, **overrides: object) -> FlinkOptions:
    values: dict[str, object] = {
        "bootstrap": "127.0.0.1:19092",
        "checkpoint_root": tmp_path / "flink" / "checkpoints",
        "max_message_bytes": 1024,
        "namespace": "ns.",
        "parallelism": 2,
    }
    return FlinkOptions(**(values | overrides))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "expected"),
    [("127.0.0.1:18481", "127.0.0.1:18481"), ("flink.example:08081", "flink.example:8081")],
)
def test_an_address_is_host_and_port(given: str, expected: str) -> None:
    assert parse_address(given) == expected


@pytest.mark.parametrize("given", ["nonsense", "127.0.0.1", ":18481", "host:0", "host:70000"])
def test_a_bad_address_is_refused(given: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address(given)


def test_the_command_runs_the_job_file_with_this_python_and_the_same_options(
    tmp_path: Path,
) -> None:
    command = flink_run_command(options(tmp_path), "127.0.0.1:18481", detach=True)
    assert command[1:6] == ["run", "-m", "127.0.0.1:18481", "-p", "2"]
    assert command[command.index("-pyexec") + 1] == sys.executable
    assert command[command.index("-pyclientexec") + 1] == sys.executable
    assert "-d" in command and "-s" not in command
    job = command[command.index("-py") + 1 :]
    assert job[0] == str(JOB_FILE)
    # The job file parses these as `memstream flink` options, without --cluster.
    assert job[job.index("--namespace") + 1] == "ns."
    assert job[job.index("--parallelism") + 1] == "2"
    assert "--cluster" not in job and "--resume" not in job


def test_resume_names_the_newest_checkpoint(tmp_path: Path) -> None:
    resumed = options(tmp_path, resume=True)
    for written_at, (run, number) in enumerate((("old-job", 3), ("new-job", 7))):
        checkpoint = resumed.checkpoint_dir / run / f"chk-{number}"
        checkpoint.mkdir(parents=True)
        (checkpoint / "_metadata").write_bytes(b"")
        # Newest by the time its metadata was written, as Flink leaves them.
        os.utime(checkpoint / "_metadata", (1_000 + written_at, 1_000 + written_at))
    command = flink_run_command(resumed, "127.0.0.1:18481", detach=False)
    assert command[command.index("-s") + 1].endswith("/new-job/chk-7")
    assert "--resume" in command and "-d" not in command


def test_restarts_come_from_the_options(tmp_path: Path) -> None:
    values = job_configuration(options(tmp_path, restart_attempts=24, restart_delay_s=5.0))
    assert values["restart-strategy.fixed-delay.attempts"] == "24"
    assert values["restart-strategy.fixed-delay.delay"] == "5000 ms"


def test_the_cluster_config_moves_ports_and_directories_under_the_state_dir(
    tmp_path: Path,
) -> None:
    files = FlinkFiles(Settings(state_dir=tmp_path))
    files.write()
    lines = (files.conf_dir / "config.yaml").read_text().splitlines()
    values = {k: json.loads(v) for k, _, v in (line.partition(": ") for line in lines[1:])}
    assert values["rest.port"] == 18481 and values["jobmanager.rpc.port"] == 16123
    assert values["taskmanager.numberOfTaskSlots"] == 1
    assert values["python.executable"] == sys.executable
    for key in ("io.tmp.dirs", "blob.storage.directory", "env.pid.dir", "env.log.dir"):
        assert Path(values[key]).is_relative_to(tmp_path), key
    # The distribution's JVM flags for Java 17 are kept.
    assert "--add-opens" in values["env.java.opts.all"]
    assert (files.conf_dir / "log4j-console.properties").is_file()
    assert (files.conf_dir / "log4j-cli.properties").is_file()


def test_a_resource_id_names_its_taskmanager() -> None:
    assert taskmanager_index("memstream-tm-2-1a2b3c4d") == 2
    assert taskmanager_index("127.0.0.1:40113-f00") is None


def test_the_cluster_is_opt_in(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path)
    assert not any(s.name.startswith("flink-") for s in select(settings))
    names = [s.name for s in select(settings, [FLINK])]
    assert names == ["flink-jobmanager", "flink-taskmanager-1", "flink-taskmanager-2"]
    assert len(select(settings, flink=True)) == len(select(settings)) + 3
