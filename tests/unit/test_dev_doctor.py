"""`./dev doctor`: every external program with its status, an honest exit code, no installs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The programs the tests run that `./dev setup` installs from Debian.
DEBIAN_PROGRAMS = ("redis-server", "kcat", "chromium")
REQUIRED = ("python3.11", "java", "mvn", *DEBIAN_PROGRAMS, "venv", "memstream")


def doctor(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / "dev"), "doctor"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def sections(out: str) -> dict[str, dict[str, str]]:
    """The report's sections ("Required programs", ...), each as row name -> status."""
    found: dict[str, dict[str, str]] = {}
    rows: dict[str, str] | None = None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            heading = line.split(" (")[0]
            rows = None if heading.startswith("doctor:") else found.setdefault(heading, {})
            continue
        assert rows is not None, f"a row outside any section: {line!r}"
        name, status, *_ = re.split(r"\s{2,}", line.strip())
        if name != "NAME":
            rows[name] = status
    return found


def test_doctor_reports_each_program_as_path_lookup_finds_it() -> None:
    done = doctor()
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report = sections(done.stdout)
    required = report["Required programs"]
    assert set(REQUIRED) <= set(required), done.stdout
    for program in DEBIAN_PROGRAMS:
        expected = "ok" if shutil.which(program) else "MISSING"
        assert required[program] == expected, done.stdout
    assert {"kafka", "redis", "neo4j bolt"} <= set(report["Services"]), done.stdout
    assert set(report["Caches"]) == {"kafka jars", "flink connector", "neo4j launcher"}
    # 0 exactly when every required program is present.
    all_present = all(status == "ok" for status in required.values())
    assert done.returncode == (0 if all_present else 1), done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("doctor: every" if all_present else "doctor: missing"), summary


def test_doctor_reports_missing_pieces_and_installs_nothing(tmp_path: Path) -> None:
    # Installers that leave a mark if the doctor ever calls them.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for installer in ("apt-get", "sudo", "pip"):
        fake = bin_dir / installer
        fake.write_text(f'#!/bin/sh\ntouch "{tmp_path}/called-{installer}"\nexit 1\n')
        fake.chmod(0o755)
    venv = tmp_path / "no-venv"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MEMSTREAM_VENV": str(venv),
        "MEMSTREAM_JAVA_HOME": str(tmp_path / "no-jdk"),
    }
    done = doctor(env)
    assert done.returncode == 1, done.stdout + done.stderr
    required = sections(done.stdout)["Required programs"]
    assert required["venv"] == required["memstream"] == required["java"] == "MISSING"
    assert "venv" in done.stdout.strip().splitlines()[-1]
    assert not venv.exists()
    assert not list(tmp_path.glob("called-*"))
