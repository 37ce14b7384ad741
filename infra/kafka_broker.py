"""Kafka: a single-node KRaft broker run from Maven-resolved jars on the local JDK.

Jars: ``<cache_dir>/kafka/<version>/libs``, resolved once from infra/kafka/pom.xml
(Maven is not run again while they are there, so warm starts work offline).
Config: infra/kafka/server.template.properties rendered into the data dir.
Storage: formatted once (KRaft ``--standalone``) with a fresh cluster id.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from string import Template

from connectors import kafka_admin
from infra import toolchain
from infra.service import Mode, Service, port_open
from schemas import topics

_HERE = Path(__file__).resolve().parent
POM = _HERE / "kafka" / "pom.xml"
CONFIG_TEMPLATE = _HERE / "kafka" / "server.template.properties"
# Written last by a successful resolution: a half-finished download is redone.
_COMPLETE = ".complete"


def cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes, URL-safe base64 without padding.

    Same form as Kafka's ``Uuid.randomUuid()``, which also never returns an id
    starting with '-' (it would read as a command-line flag).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def memstream_topics(partitions: int, max_message_bytes: int) -> list[kafka_admin.TopicSpec]:
    """The six memstream topics; the dead-letter topic accepts the largest rejected message."""
    dlq = {"max.message.bytes": str(max_message_bytes)}
    return [
        kafka_admin.TopicSpec(name, partitions, dlq if name == topics.MEMORY_DLQ else {})
        for name in topics.ALL_TOPICS
    ]


class KafkaBroker(Service):
    """The local KRaft broker (or, with ``kafka.bootstrap_servers`` set, an external cluster)."""

    name = "kafka"
    # A single node's controlled shutdown flushes and closes every partition log;
    # 30 s is generous for a development data set and still bounded.
    stop_timeout_s = 30.0

    @property
    def mode(self) -> Mode:
        """External when bootstrap_servers names another cluster."""
        return "external" if self.settings.kafka.bootstrap_servers else "managed"

    @property
    def port(self) -> int | None:
        """The local broker's client port (None for an external cluster)."""
        return self.settings.kafka.port if self.mode == "managed" else None

    @property
    def libs_dir(self) -> Path:
        """Where the broker's jars are cached, per Kafka version."""
        return self.settings.cache_dir / "kafka" / self.settings.kafka.version / "libs"

    @property
    def config_file(self) -> Path:
        """The rendered server.properties."""
        return self.data_dir / "server.properties"

    def healthy(self) -> bool:
        """A metadata request answered (the port alone opens before KRaft is ready)."""
        kafka = self.settings.kafka
        if self.mode == "managed" and not port_open(kafka.host, kafka.port):
            # Skip the client while nothing listens: librdkafka would log a
            # connection error for every probe.
            return False
        return kafka_admin.broker_ready(kafka.bootstrap)

    def prepare(self) -> None:
        """Resolve the jars (first time), render the config, format storage (first time)."""
        super().prepare()
        java = toolchain.find_java(self.settings.java_home)
        self._resolve_jars(java)
        self._write_config()
        if not (self.data_dir / "log" / "meta.properties").exists():
            self._format(java)

    def _resolve_jars(self, java: Path) -> None:
        if (self.libs_dir / _COMPLETE).exists():
            return
        toolchain.run_maven(
            POM,
            [
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-Dkafka.version={self.settings.kafka.version}",
                f"-DoutputDirectory={self.libs_dir}",
            ],
            repo=self.settings.cache_dir / "m2",
            java=java,
            log_file=self.settings.state_dir / "logs" / "kafka-maven.log",
        )
        (self.libs_dir / _COMPLETE).touch()

    def _write_config(self) -> None:
        kafka = self.settings.kafka
        rendered = Template(CONFIG_TEMPLATE.read_text()).substitute(
            host=kafka.host,
            port=kafka.port,
            controller_port=kafka.controller_port,
            log_dirs=self.data_dir / "log",
            partitions=kafka.partitions,
            max_message_bytes=kafka.max_message_bytes,
        )
        self.config_file.write_text(rendered)

    def _format(self, java: Path) -> None:
        command = [
            str(java),
            "-cp",
            f"{self.libs_dir}/*",
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster_id(),
            "-c",
            str(self.config_file),
            # The config names its voter with controller.quorum.bootstrap.servers.
            "--standalone",
        ]
        toolchain.run_checked(
            command, log_file=self.settings.state_dir / "logs" / "kafka-format.log"
        )

    def command(self) -> list[str]:
        """``java kafka.Kafka server.properties`` with the configured heap."""
        heap = self.settings.kafka.heap
        return [
            str(toolchain.find_java(self.settings.java_home)),
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-Djava.awt.headless=true",
            # slf4j-simple at INFO writes ~300 KB a minute under test load:
            # keep warnings and errors, plus the server's start/stop lines.
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
            "-cp",
            f"{self.libs_dir}/*",
            "kafka.Kafka",
            str(self.config_file),
        ]

    def after_healthy(self) -> None:
        """Create the memstream topics that are missing."""
        kafka = self.settings.kafka
        kafka_admin.ensure_topics(
            kafka.bootstrap, memstream_topics(kafka.partitions, kafka.max_message_bytes)
        )
