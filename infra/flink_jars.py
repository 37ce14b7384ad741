"""The jars the PyFlink ingest job loads: the Kafka connector, resolved from Maven Central.

``connector_jars(settings)`` returns ``file://`` URLs ready for ``pipeline.jars``.
The first call runs Maven on infra/flink/pom.xml (local repository
``<cache_dir>/m2``, shared with the Kafka broker's jars) into
``<cache_dir>/flink/<connector version>/``; later calls find the jar there, with
the marker a successful run leaves, and run nothing: warm starts work offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from infra import toolchain
from memstream.settings import Settings

_HERE = Path(__file__).resolve().parent
POM = _HERE / "flink" / "pom.xml"
# The Kafka connector line built for Flink 2.2 (apache-flink 2.2.1 is pinned in
# pyproject.toml); Flink 2.3 has no Kafka connector yet (docs/dependencies.md, PyFlink).
CONNECTOR_VERSION: Final = "5.0.0-2.2"
CONNECTOR_ARTIFACT: Final = "flink-sql-connector-kafka"
# Written after Maven succeeds: a copy cut short leaves no marker and is redone.
_COMPLETE = ".complete"


def jar_dir(settings: Settings, version: str = CONNECTOR_VERSION) -> Path:
    """Where the connector jar of ``version`` is cached."""
    return settings.cache_dir / "flink" / version


def connector_jar(settings: Settings, version: str = CONNECTOR_VERSION) -> Path:
    """The shaded Kafka connector jar, resolved with Maven the first time.

    Raises ``ToolchainError`` when Java or Maven is missing or Maven fails
    (no network on a cold cache, for instance); the error names Maven's log.
    """
    jar = jar_dir(settings, version) / f"{CONNECTOR_ARTIFACT}-{version}.jar"
    if (jar.parent / _COMPLETE).exists() and jar.is_file():
        return jar
    toolchain.run_maven(
        POM,
        [
            "dependency:copy-dependencies",
            # The sql-connector jar is shaded: kafka-clients and the connector
            # base are inside it, and the Flink runtime is PyFlink's own.
            "-DexcludeTransitive=true",
            f"-Dflink.kafka.connector.version={version}",
            f"-DoutputDirectory={jar.parent}",
        ],
        repo=settings.cache_dir / "m2",
        java=toolchain.find_java(settings.java_home),
        log_file=settings.state_dir / "logs" / "flink-maven.log",
    )
    if not jar.is_file():
        raise toolchain.ToolchainError(f"Maven finished but {jar} is missing; see {POM}")
    (jar.parent / _COMPLETE).touch()
    return jar


def connector_jars(settings: Settings) -> list[str]:
    """``file://`` URLs of every jar the ingest job needs (the value of ``pipeline.jars``)."""
    return [connector_jar(settings).as_uri()]
