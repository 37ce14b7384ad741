"""The external tools the local services need: a Java 17+ runtime and Maven.

Both are looked up, never assumed, and a missing or too-old tool is a
`ToolchainError` that says how to fix it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

# Kafka 4.x and Neo4j 5.26 both need Java 17 or newer.
MIN_JAVA = 17


class ToolchainError(RuntimeError):
    """A required tool is missing, too old or failed."""


def find_java(java_home: Path | None) -> Path:
    """The ``java`` executable: ``java_home`` (settings), else $JAVA_HOME, else PATH.

    Raises ToolchainError when none is found or it is older than Java 17.
    """
    home = java_home or (Path(os.environ["JAVA_HOME"]) if os.environ.get("JAVA_HOME") else None)
    if home is not None:
        java = home / "bin" / "java"
        if not java.is_file():
            raise ToolchainError(f"no java executable at {java} (from java_home/JAVA_HOME)")
    else:
        found = shutil.which("java")
        if found is None:
            raise ToolchainError(
                "java not found: install a JDK 17+ (Debian: apt-get install"
                " openjdk-17-jdk-headless) or set MEMSTREAM_JAVA_HOME"
            )
        java = Path(found)
    major = java_major_version(java)
    if major < MIN_JAVA:
        raise ToolchainError(
            f"{java} is Java {major}; Kafka 4 and Neo4j 5.26 need Java {MIN_JAVA}+"
            " (set MEMSTREAM_JAVA_HOME to a newer JDK)"
        )
    return java


def java_major_version(java: Path) -> int:
    """The major version of ``java`` (8 for 1.8.0_x, 17 for 17.0.15)."""
    out = subprocess.run(  # noqa: S603 - fixed argv
        [str(java), "-version"], capture_output=True, text=True, check=False
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise ToolchainError(f"cannot read the Java version from `{java} -version`: {out!r}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def run_maven(pom: Path, args: Sequence[str], *, repo: Path, java: Path, log_file: Path) -> None:
    """Run Maven on ``pom`` with its local repository at ``repo``; output goes to ``log_file``.

    Raises ToolchainError (naming the log) when Maven is missing or fails.
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolchainError("mvn not found: install Maven (Debian: apt-get install maven)")
    # Maven runs on the same JDK as the services, whatever JAVA_HOME says.
    env = {**os.environ, "JAVA_HOME": str(java.resolve().parent.parent)}
    run_checked(
        [mvn, "-B", "-q", "-f", str(pom), f"-Dmaven.repo.local={repo}", *args],
        log_file=log_file,
        env=env,
    )


def run_checked(
    command: Sequence[str], *, log_file: Path, env: Mapping[str, str] | None = None
) -> None:
    """Run a set-up command to completion, output to ``log_file``.

    Raises ToolchainError naming the log (and showing its end) when it fails.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        done = subprocess.run(  # noqa: S603 - argv list, no shell
            list(command), stdout=log, stderr=subprocess.STDOUT, env=env, check=False
        )
    if done.returncode != 0:
        raise ToolchainError(
            f"{Path(command[0]).name} failed (exit {done.returncode}); see {log_file}\n"
            f"command: {' '.join(command)}\n{log_file.read_text()[-3000:]}"
        )
