"""The PyFlink ingest job: input topics in; ``memory.ops``, ``memory.pending``, ``memory.dlq`` out.

A composition root, the scale-out twin of the Faust worker (jobs/ingest/faust_worker.py):
the same stages (``jobs.ingest.stages.load_pipeline``) and the same failure isolation
(``jobs.ingest.stages.run_batch``), with the per-user ``UserMemoryState`` in Flink keyed
state. ``build(env, settings, options)`` wires the job into any environment;
``main()`` runs it, locally (``python -m jobs.ingest.flink_job``: a mini-cluster in the
gateway JVM) or on a cluster (``flink run -py jobs/ingest/flink_job.py``).

Graph::

    Kafka table source ──► key_by tenant:user ──► IngestFunction ──► Kafka table sink
    (key, value, topic,    (the payload's, as      (keyed state:      (topic chosen per
     partition, offset)     the review keys it)     snapshot JSON)     row, transactional)

Source records with their coordinates: PyFlink 2.2's DataStream ``KafkaSource``
only offers value-only deserialisers, but the Kafka *table* connector (the same
KafkaSource underneath, from flink-sql-connector-kafka) exposes ``topic``,
``partition`` and ``offset`` as metadata columns; with the ``raw`` format for key
and value the rows carry the original bytes, and ``to_data_stream`` hands them
to the DataStream API. Outputs go back through the table connector's sink (a
``KafkaSink``) because its writable ``topic`` metadata column is the topic
selector, and its ``raw`` key format keeps the ``tenant:user`` key — PyFlink's
DataStream ``KafkaRecordSerializationSchema`` cannot take key and value from two
fields of one row.

Keying: the stream is keyed by the payload's ``tenant:user`` (``RecordKey``),
exactly the key the review asks state for, as in the Faust worker; a record whose
payload does not validate has no such key and is keyed by its raw Kafka key —
the pipeline dead-letters it without touching state.

Exactly once: checkpoints every 30 s (``FlinkOptions.checkpoint_interval_s``) in
EXACTLY_ONCE mode on the RocksDB state backend hold the source offsets and the
keyed states together; the sink writes each checkpoint's outputs in one Kafka
transaction committed when the checkpoint completes, so readers with
``isolation.level=read_committed`` see every output once — and only up to one
checkpoint interval after its event (the price of a transactional sink). Source
offsets are also committed to the consumer group on each checkpoint, for
``memstream lag``; the job itself restarts from checkpoints, never from them.

Start and resume: a fresh start reads the input topics from the earliest
offset (empty state must see the history to rebuild the version chains; every
output is deterministic per event, so the ops a replay repeats are
byte-identical and the sink dedupes them). ``resume`` restores the newest
retained checkpoint under ``<state_dir>/flink/checkpoints/<namespace><group>``
(``execution.state-recovery.path``): state and offsets continue together.
``until_end`` stops at the end offsets seen at start (a bounded run: the
sample, a replay), committing the last transaction in the final checkpoint;
Flink discards a finished job's checkpoints, so a later ``resume`` starts over.

Metrics: the Python operator runs in a Python worker process (in a local run,
the client process itself), so it serves the same ``memstream_ingest_*``
collectors as the Faust worker (jobs/ingest/metrics.py) with prometheus-client
on ``settings.metrics.flink_port``, started in ``open()`` once per process —
one set of queries for both engines, and no Flink metrics-reporter jar to
configure. Flink's own metrics (checkpoints, back pressure) stay in Flink's
web UI and reporters. "Produced" in the end-to-end latency means emitted by
the operator; readers see it at the next checkpoint's commit.

One record at a time: PyFlink hands a keyed function one element under one
key, and a key's state can only be read and written while it is current, so
the stages run on single records here, where the Faust worker batches 64.
Measured on the sample (2 shared, busy cores): ~7x fewer events/s than the
batched pipeline in one process, almost all of it NLP (MiniLM, spaCy and Flair
are batch-friendly); the state's JSON round trip is <10%. Batching would need
the pipeline split into a stateless, batchable NLP half before ``key_by`` and
the review after it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyflink.common import Configuration, Row, Types
from pyflink.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    KeySelector,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.table import StreamTableEnvironment

from infra import toolchain
from infra.flink_jars import connector_jars
from jobs.ingest.metrics import observe_batch, time_stage
from jobs.ingest.stages import json_state, load_pipeline, run_batch
from jobs.metrics_endpoint import serve_metrics
from memstream.settings import FlinkSettings, Settings
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.topics import INPUT_TOPICS, OUTPUT_TOPICS, Topics
from schemas.validate import InvalidEvent, decode_event

log = logging.getLogger(__name__)

SOURCE_TABLE = "ingest_source"
SINK_TABLE = "ingest_sink"
STATE_NAME = "user-memory"
_OUTPUT_TYPE = Types.ROW_NAMED(
    ["topic", "k", "v"],
    [Types.STRING(), Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.PRIMITIVE_ARRAY(Types.BYTE())],
)


# The defaults of a bare construction: the settings' own (one place for them).
_FLINK = FlinkSettings()
_FLINK_TUNABLES = {
    "group_id",
    "checkpoint_interval_s",
    "parallelism",
    "transaction_timeout_s",
    "restart_attempts",
    "restart_delay_s",
}


@dataclass(frozen=True)
class FlinkOptions:
    """How the job runs; ``from_settings`` fills it from the settings object.

    The tunables are the settings' ``flink`` section (memstream/settings.py
    documents them); a bare construction gets that section's defaults.
    """

    bootstrap: str
    checkpoint_root: Path
    max_message_bytes: int
    jars: tuple[str, ...] = ()
    namespace: str = ""
    group_id: str = _FLINK.group_id
    checkpoint_interval_s: float = _FLINK.checkpoint_interval_s
    parallelism: int = _FLINK.parallelism
    transaction_timeout_s: int = _FLINK.transaction_timeout_s
    restart_attempts: int = _FLINK.restart_attempts
    restart_delay_s: float = _FLINK.restart_delay_s
    resume: bool = False
    until_end: bool = False

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> FlinkOptions:
        """Addresses, jars and tunables from the settings; ``overrides`` win."""
        params: dict[str, Any] = settings.flink.model_dump(include=_FLINK_TUNABLES)
        params.update(overrides)
        return cls(
            bootstrap=settings.kafka.bootstrap,
            checkpoint_root=settings.state_dir / "flink" / "checkpoints",
            max_message_bytes=settings.kafka.max_message_bytes,
            jars=tuple(connector_jars(settings)),
            **params,
        )

    @property
    def job_name(self) -> str:
        """The job, consumer group and transactional-id prefix: one name per namespace."""
        return self.namespace + self.group_id

    @property
    def checkpoint_dir(self) -> Path:
        """Where the checkpoints go (one sub-directory per run, as Flink lays them out)."""
        return self.checkpoint_root / self.job_name

    @property
    def topics(self) -> Topics:
        """The topic names under this namespace."""
        return Topics(self.namespace)

    def topic(self, name: str) -> str:
        """The namespaced name of a topic."""
        return self.topics.name(name)


def latest_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The newest completed checkpoint (``<run>/chk-N`` holding ``_metadata``), if any."""
    completed = checkpoint_dir.glob("*/chk-*/_metadata")
    newest = max(completed, key=_written_at, default=None)
    return newest.parent if newest is not None else None


def _written_at(path: Path) -> float:
    # A running job deletes the checkpoint its new one subsumes: one may go
    # between the listing and this look (it then counts as the oldest).
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("-inf")


def job_configuration(options: FlinkOptions) -> dict[str, str]:
    """The Flink configuration of the job (2.x keys; docs/dependencies.md, PyFlink)."""
    values = {
        "pipeline.name": options.job_name,
        "parallelism.default": str(options.parallelism),
        "execution.runtime-mode": "STREAMING",
        "state.backend.type": "rocksdb",
        # Only what changed since the last checkpoint is written (RocksDB SSTs).
        "execution.checkpointing.incremental": "true",
        "execution.checkpointing.interval": f"{int(options.checkpoint_interval_s * 1000)} ms",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "execution.checkpointing.dir": options.checkpoint_dir.as_uri(),
        # Kept after a stop or cancel: --resume needs them.
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        # A few quick restarts ride out a broker hiccup (state and offsets come
        # back from the last checkpoint); a lasting fault (a model that cannot
        # load, Kafka gone) then fails the job instead of looping forever, and
        # the process exits non-zero for its supervisor to restart with --resume.
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(options.restart_attempts),
        "restart-strategy.fixed-delay.delay": f"{int(options.restart_delay_s * 1000)} ms",
    }
    if options.resume and (checkpoint := latest_checkpoint(options.checkpoint_dir)) is not None:
        values["execution.state-recovery.path"] = checkpoint.as_uri()
    return values


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _with(options: dict[str, str]) -> str:
    return ",\n  ".join(f"{_sql_text(k)} = {_sql_text(v)}" for k, v in options.items())


def source_ddl(options: FlinkOptions) -> str:
    """The Kafka table of the three input topics: raw key and value plus coordinates."""
    settings = {
        "connector": "kafka",
        "topic": ";".join(options.topic(t) for t in INPUT_TOPICS),
        "properties.bootstrap.servers": options.bootstrap,
        "properties.group.id": options.job_name,
        # Producers may write the inputs in transactions: skip aborted ones.
        "properties.isolation.level": "read_committed",
        "scan.startup.mode": "earliest-offset",
        "key.format": "raw",
        "key.fields": "k",
        "value.format": "raw",
        "value.fields-include": "EXCEPT_KEY",
    }
    if options.until_end:
        settings["scan.bounded.mode"] = "latest-offset"
    return f"""CREATE TABLE {SOURCE_TABLE} (
  k BYTES,
  v BYTES,
  `topic` STRING METADATA VIRTUAL,
  `partition` INT METADATA VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL
) WITH (
  {_with(settings)}
)"""


def sink_ddl(options: FlinkOptions) -> str:
    """The transactional Kafka table of the three output topics, chosen per row."""
    settings = {
        "connector": "kafka",
        # The writable ``topic`` column picks one of these per row.
        "topic": ";".join(options.topic(t) for t in OUTPUT_TOPICS),
        "properties.bootstrap.servers": options.bootstrap,
        "sink.delivery-guarantee": "exactly-once",
        "sink.transactional-id-prefix": options.job_name,
        "properties.transaction.timeout.ms": str(options.transaction_timeout_s * 1000),
        # A dead letter carries its rejected message whole (schemas.deadletter).
        "properties.max.request.size": str(options.max_message_bytes),
        "key.format": "raw",
        "key.fields": "k",
        "value.format": "raw",
        "value.fields-include": "EXCEPT_KEY",
    }
    return f"""CREATE TABLE {SINK_TABLE} (
  `topic` STRING METADATA,
  k BYTES,
  v BYTES
) WITH (
  {_with(settings)}
)"""


def source_record(row: Row, namespace: str) -> SourceRecord:
    """A source row as the pipeline's record, under its base topic name.

    The event model is chosen by the base name, and lineage and the state's
    offsets then read the same in every namespace (as in the Faust worker).
    """
    key, value, topic, partition, offset = row
    return SourceRecord(
        topic=topic.removeprefix(namespace),
        partition=partition,
        offset=offset,
        key=bytes(key) if key is not None else None,
        value=bytes(value) if value is not None else b"",
        # The source table carries no record timestamp: the moment the job read it.
        read_at=datetime.now(UTC),
    )


class RecordKey(KeySelector):
    """Keys a source row by its payload's ``tenant:user``, the key the review asks state for.

    A row that does not validate has no such key: it is keyed by its raw Kafka
    key (or "") and the pipeline dead-letters it without asking for state.
    """

    def __init__(self, namespace: str) -> None:
        """``namespace``: the prefix to strip from topic names."""
        self.namespace = namespace

    def get_key(self, value: Row) -> str:
        """The ``tenant:user`` of the row."""
        record = source_record(value, self.namespace)
        try:
            return decode_event(record.topic, record.value).key
        except InvalidEvent:
            return record.key.decode("utf-8", "replace") if record.key is not None else ""


_loaded: dict[str, IngestPipeline] = {}
_loading = threading.Lock()


def _pipeline(settings: Settings) -> IngestPipeline:
    # Once per Python worker process: in a local run every subtask's function
    # lives in the client process (PyFlink's loopback mode), and the models
    # take seconds and ~1 GB to load.
    with _loading:
        key = settings.model_dump_json()
        if key not in _loaded:
            _loaded[key] = load_pipeline(settings, stage_timer=time_stage)
        return _loaded[key]


class IngestFunction(KeyedProcessFunction):
    """One record at a time through the pipeline, on the key's state in Flink keyed state.

    The state is kept as its ``snapshot()`` JSON in a ``ValueState``: RocksDB
    stores bytes anyway, and JSON is the form the Faust table holds too.
    """

    def __init__(self, settings: Settings, namespace: str) -> None:
        """``settings`` loads the stages in the worker; ``namespace`` prefixes topic names."""
        self.settings = settings
        self.namespace = namespace

    def open(self, runtime_context: RuntimeContext) -> None:
        """Load the stages (once per process), serve /metrics and bind the keyed state."""
        started = time.perf_counter()
        metrics = self.settings.metrics
        serve_metrics(metrics.host, metrics.flink_port, "flink ingest")
        self.pipeline = _pipeline(self.settings)
        log.info("stages ready in %.1f s", time.perf_counter() - started)
        self.state = runtime_context.get_state(ValueStateDescriptor(STATE_NAME, Types.STRING()))

    def process_element(self, value: Row, ctx: KeyedProcessFunction.Context) -> Iterator[Row]:
        """Run one record; emit its ops and dead letter; store the key's new state."""
        record = source_record(value, self.namespace)
        current_key: str = ctx.get_current_key()
        # json_state is the ValueState's form: a state it cannot write is the
        # record's dead letter, not a failed job (stages.run_batch).
        batch = run_batch(
            self.pipeline, [record], lambda key: self._load(key, current_key), json_state
        )
        topics = Topics(self.namespace)
        for messages in batch.messages:
            for message in messages:
                yield Row(topics.name(message.topic), message.key, message.value)
        encoded = batch.encoded.get(current_key)
        if encoded is not None:
            self.state.update(encoded)
        observe_batch(batch, datetime.now(UTC))

    def _load(self, key: str, current_key: str) -> UserMemoryState | None:
        if key != current_key:
            # RecordKey keys every valid record by the key the review asks
            # for; anything else is a bug, dead-lettered as a processing error.
            raise RuntimeError(f"state of {key!r} asked for under key {current_key!r}")
        snapshot = self.state.value()
        return UserMemoryState.restore(json.loads(snapshot)) if snapshot is not None else None


def build(env: StreamExecutionEnvironment, settings: Settings, options: FlinkOptions) -> None:
    """Add the ingest job to ``env``: checkpointing on, Kafka in, keyed stages, Kafka out."""
    config = Configuration()
    for key, value in job_configuration(options).items():
        config.set_string(key, value)
    env.configure(config)
    # Added to pipeline.jars, not set: `flink run -py` has put flink-python there.
    env.add_jars(*options.jars)
    env.enable_checkpointing(
        int(options.checkpoint_interval_s * 1000), CheckpointingMode.EXACTLY_ONCE
    )
    tables = StreamTableEnvironment.create(env)
    tables.execute_sql(source_ddl(options))
    tables.execute_sql(sink_ddl(options))
    outputs = (
        tables.to_data_stream(tables.from_path(SOURCE_TABLE))
        .key_by(RecordKey(options.namespace), key_type=Types.STRING())
        .process(IngestFunction(settings, options.namespace), output_type=_OUTPUT_TYPE)
        .name("ingest")
    )
    statements = tables.create_statement_set()
    statements.add_insert(SINK_TABLE, tables.from_data_stream(outputs))
    statements.attach_as_datastream()


def run(settings: Settings, options: FlinkOptions) -> None:
    """Build the job and execute it: until stopped, or until the end offsets (``until_end``)."""
    # The gateway JVM (local runs) is started by PyFlink from these variables;
    # find_java honours settings.java_home, then $JAVA_HOME, then PATH.
    os.environ["JAVA_HOME"] = str(toolchain.find_java(settings.java_home).resolve().parent.parent)
    log_dir = settings.state_dir / "logs" / "flink"
    log_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FLINK_LOG_DIR", str(log_dir))
    env = StreamExecutionEnvironment.get_execution_environment()
    build(env, settings, options)
    recovery = job_configuration(options).get("execution.state-recovery.path")
    log.info("%s: starting from %s", options.job_name, recovery or "the earliest offsets")
    started = time.perf_counter()
    env.execute(options.job_name)
    # Inside `flink run -d` execute() returns once the cluster has the job.
    log.info("%s: execute returned after %.1f s", options.job_name, time.perf_counter() - started)


def main() -> None:
    """``flink run -py jobs/ingest/flink_job.py [OPTIONS]``: the options of ``memstream flink``."""
    import typer

    from jobs.cli.flink import flink

    typer.run(flink)


if __name__ == "__main__":
    main()
