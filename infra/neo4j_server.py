"""Neo4j: Community embedded in infra/neo4j-launcher, serving Bolt on the configured port.

The launcher is built with Maven into ``<cache_dir>/neo4j-launcher/<key>``
where the key hashes the pom, the Java source and the Neo4j version: a change
to any of them builds anew, and an unchanged launcher never runs Maven.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import neo4j
import neo4j.exceptions

from infra import toolchain
from infra.service import Mode, Service, port_open

LAUNCHER_DIR = Path(__file__).resolve().parent / "neo4j-launcher"
MAIN_CLASS = "memstream.neo4j.Launcher"
# Written last by a successful build: a half-finished build is redone.
_COMPLETE = ".complete"


def launcher_key(version: str) -> str:
    """A hash of everything the launcher build depends on."""
    digest = hashlib.sha256(version.encode())
    for path in sorted([LAUNCHER_DIR / "pom.xml", *(LAUNCHER_DIR / "src").rglob("*.java")]):
        digest.update(path.relative_to(LAUNCHER_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    # 16 hex digits: unique enough for a handful of builds in one cache.
    return digest.hexdigest()[:16]


class Neo4jServer(Service):
    """The semantic-memory graph (or an existing server when ``neo4j.managed`` is false)."""

    name = "neo4j"
    # Neo4j checkpoints every database, then Bolt's Netty event loops take their
    # graceful quiet periods (about 10 s measured); 45 s bounds a slow disk.
    stop_timeout_s = 45.0

    @property
    def mode(self) -> Mode:
        """Managed unless settings point at an existing server."""
        neo = self.settings.neo4j
        return "managed" if neo.managed and neo.uri_override is None else "external"

    @property
    def port(self) -> int | None:
        """The Bolt port."""
        return self.settings.neo4j.bolt_port

    @property
    def build_dir(self) -> Path:
        """Where this version of the launcher is built."""
        key = launcher_key(self.settings.neo4j.version)
        return self.settings.cache_dir / "neo4j-launcher" / key

    def healthy(self) -> bool:
        """A Bolt ``RETURN 1`` answered."""
        neo = self.settings.neo4j
        if self.mode == "managed" and not port_open(neo.host, neo.bolt_port):
            return False
        password = neo.password.get_secret_value()
        auth = (neo.user, password) if password else None
        try:
            with neo4j.GraphDatabase.driver(neo.uri, auth=auth, connection_timeout=2) as driver:
                records, _, _ = driver.execute_query("RETURN 1 AS one")
                return bool(records and records[0]["one"] == 1)
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError):
            return False

    def prepare(self) -> None:
        """Build the launcher unless this version of it is already built."""
        super().prepare()
        if (self.build_dir / _COMPLETE).exists():
            return
        toolchain.run_maven(
            LAUNCHER_DIR / "pom.xml",
            [
                "package",
                f"-Dneo4j.version={self.settings.neo4j.version}",
                f"-Dlauncher.out={self.build_dir}",
            ],
            repo=self.settings.cache_dir / "m2",
            java=toolchain.find_java(self.settings.java_home),
            log_file=self.settings.state_dir / "logs" / "neo4j-maven.log",
        )
        (self.build_dir / _COMPLETE).touch()

    def command(self) -> list[str]:
        """The launcher on the built classpath, heap and page cache from settings."""
        neo = self.settings.neo4j
        classpath = f"{self.build_dir / 'build' / 'neo4j-launcher.jar'}:{self.build_dir / 'lib'}/*"
        return [
            str(toolchain.find_java(self.settings.java_home)),
            f"-Xms{neo.heap}",
            f"-Xmx{neo.heap}",
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self.data_dir),
            neo.host,
            str(neo.bolt_port),
            str(neo.pagecache_mb),
        ]
