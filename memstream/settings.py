"""The one configuration object of memstream.

Every process reads its configuration here, once, at start-up: from the
environment (prefix ``MEMSTREAM_``, nested fields joined with ``__``, e.g.
``MEMSTREAM_KAFKA__PARTITIONS=12``) and from a ``.env`` file in the working
directory. Nothing else in the code base reads ``os.environ`` (the one
exception is ``XDG_DATA_HOME`` for the default state directory, here too).
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipelines.behaviour.config import BehaviourConfig
from pipelines.recall import RecallWeights
from pipelines.review.config import ReviewConfig
from pipelines.triggers.config import TriggerConfig

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def default_state_dir() -> Path:
    """``.memstream/`` of the checkout when run from one, else the user's data directory.

    A checkout is recognised by its ``pyproject.toml`` and ``jobs/`` beside the
    package; an installed package keeps its state in
    ``$XDG_DATA_HOME/memstream`` (``~/.local/share/memstream``), never inside
    site-packages.
    """
    if (_PACKAGE_ROOT / "pyproject.toml").is_file() and (_PACKAGE_ROOT / "jobs").is_dir():
        return _PACKAGE_ROOT / ".memstream"
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "memstream"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Section):
    """The Kafka broker (a local single-node KRaft broker by default)."""

    # 4.x is the current line; every client we use speaks it (see README).
    version: str = "4.1.1"
    host: str = "127.0.0.1"
    # Non-standard ports so a developer's own Kafka on 9092 is left alone.
    port: int = 19092
    controller_port: int = 19093
    # Six partitions let up to six consumers of a group share a topic; keys
    # (tenant:user) keep each user's events in order on one partition.
    partitions: int = Field(default=6, ge=1)
    heap: str = "512m"
    # Deliberately larger than Kafka's 1 MiB default so that the dead-letter
    # topic can carry an oversized rejected message whole (see schemas.deadletter).
    max_message_bytes: int = 8 * 1024 * 1024
    bootstrap_servers: str | None = None  # set to use an external cluster

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_servers or f"{self.host}:{self.port}"


class RedisSettings(_Section):
    """Working memory, the pending queue and the backpressure spool."""

    host: str = "127.0.0.1"
    port: int = 16379
    db: int = 0
    password: SecretStr | None = None
    managed: bool = True  # False: use an existing server, start nothing

    @property
    def url(self) -> str:
        auth = f":{self.password.get_secret_value()}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}/{self.db}"


class Neo4jSettings(_Section):
    """Semantic memory: Neo4j Community embedded in infra/neo4j-launcher."""

    # Newest 5.26 LTS patch on Maven Central when infra/neo4j-launcher was built
    # (5.26 is the last line that runs on Java 17; 2025.x needs Java 21).
    version: str = "5.26.30"
    host: str = "127.0.0.1"
    bolt_port: int = 17687
    user: str = "neo4j"
    # Empty password: the local launcher runs with auth disabled.
    password: SecretStr = SecretStr("")
    heap: str = "512m"
    # Neo4j would size its page cache from free RAM; memstream's graphs are
    # small and the machine is shared, so 128 MiB (the launcher caps it).
    pagecache_mb: int = Field(default=128, ge=8)
    managed: bool = True
    uri_override: str | None = None

    @property
    def uri(self) -> str:
        return self.uri_override or f"bolt://{self.host}:{self.bolt_port}"


class ChromaSettings(_Section):
    """Episodic memory: embedded chromadb by default, or a Chroma server."""

    mode: Literal["embedded", "server"] = "embedded"
    host: str = "127.0.0.1"
    port: int = 18000
    path: Path | None = None  # embedded data dir; default <state_dir>/chroma


class IngestSettings(_Section):
    """The ingest job's stages and the Faust worker (the default engine)."""

    group_id: str = "memstream-ingest"
    # 64 turns fill one spaCy ``pipe`` batch and one MiniLM batch well (both
    # several times faster per item batched).
    batch_size: int = Field(default=64, ge=1)
    # How long a partial batch waits for more records after the previous batch
    # (faust's take_events restarts the wait each batch): 0.02 s halved p50
    # (690/569 -> 325/298 ms) and cut p95 (1,026/986 -> 831/805 ms) at 90-110 ev/s
    # in benchmarks/bench_ingest.py, same throughput. 0 is refused: take_events
    # reads it as "no timeout" and would wait for a full batch.
    batch_within_s: float = Field(default=0.02, gt=0)
    # torch intra-op threads per worker process: on 2 cores, 1 thread measured
    # 73 turns/s for parse+extract+encode against 9 with 2 (threads fight the
    # broker and the other jobs for the cores; benchmarks/bench_stage_speed.py).
    torch_threads: int = Field(default=1, ge=1)
    # Micro-batching of concurrent recall queries (jobs/serve/query_batcher.py):
    # one worker embeds whatever queries wait as one MiniLM batch, instead of
    # one forward pass per request thread fighting the others for the cores.
    # Off: each request embeds its own query. The wait bounds what a query pays
    # for company (only while queries come together; a lone caller never
    # waits); the batch bound keeps one pass short (a padded batch of 16 short
    # queries took ~3.5x one query's time on the loaded machine, not 16x).
    query_batching: bool = True
    query_batch_max: int = Field(default=16, ge=1, le=256)
    query_batch_wait_ms: float = Field(default=2.0, ge=0.0, le=50.0)
    # None: <state_dir>/models/transe (written by `memstream train transe`);
    # without a trained model the encode stage uses its deterministic fallback.
    transe_dir: Path | None = None
    # What reads facts from dialogue turns. "hybrid": the rules, plus the learned
    # tagger's typed triples (read in their sentences for negation and hedges)
    # where the rules state nothing (pipelines/extract/learned/facts.py). It
    # scored higher than the rules alone at first sight on all eight blind
    # splits (benchmarks/devset/README.md) and runs the chain ~2x slower.
    # "rules": the rules alone, for throughput over quality.
    extractor: Literal["hybrid", "rules"] = "hybrid"
    # The hybrid's tagger: a model written by `memstream train extractor`.
    # None: the one packaged with memstream (pipelines/extract/learned/model/).
    learned_extractor: Path | None = None
    # `memstream lag` calls the group STALL when its committed offset stands
    # still this long while its lag grows: the worker commits after every batch
    # (64 turns take 1-5 s on a loaded 2-core machine), so 20 s is several
    # batches without a commit.
    stall_after_s: float = Field(default=20.0, gt=0)


class SinkSettings(_Section):
    """The sink job that applies memory.ops to the three tiers."""

    group_id: str = "memstream-sink"
    # One consumed batch is at most one writer chunk (connectors/protocols.py),
    # so a write's latency is comparable with the budget.
    batch_size: int = Field(default=256, ge=1, le=256)
    # docs/guarantees.md: a store slower than 200 ms per write falls back to the spool.
    latency_budget_ms: float = Field(default=200.0, gt=0)
    # `memstream lag` calls the group STALL after this long without a commit
    # while its lag grows: the sink commits after every batch (well under a
    # second, a spool drain included), so 10 s is many missed batches.
    stall_after_s: float = Field(default=10.0, gt=0)


class FlinkSettings(_Section):
    """The PyFlink ingest job (the scale-out engine)."""

    # Its own group: the Faust worker may consume the same topics.
    group_id: str = "memstream-ingest-flink"
    # docs/guarantees.md: a checkpoint, and so a committed transaction, every 30 s.
    checkpoint_interval_s: float = Field(default=30.0, gt=0)
    # 2 cores (docs/dependencies.md): one subtask leaves a core for Kafka and the sink.
    parallelism: int = Field(default=1, ge=1)
    # Below the local broker's transaction.max.timeout.ms (1 h).
    transaction_timeout_s: int = Field(default=900, gt=0, le=3600)
    # `memstream lag`'s stall time for the job's group. None: two checkpoint
    # intervals, because offsets move only when a checkpoint completes, and a
    # checkpoint may take a while: one missed commit, not a late one, is a stall.
    stall_after_s: float | None = Field(default=None, gt=0)
    # Restarts of a failed job (a TaskManager lost, a broker hiccup) before it
    # fails for good, this many seconds apart: three 5 s waits outlast a broker
    # restart on this machine (~10 s); on a session cluster they must also
    # outlast the JobManager noticing a dead TaskManager (heartbeat_* below).
    restart_attempts: int = Field(default=3, ge=0)
    restart_delay_s: float = Field(default=5.0, gt=0)
    # The same on a session cluster (`memstream flink --cluster`): a SIGKILLed
    # TaskManager's slot comes back only with a replacement, and until then
    # every restart fails at once (Flink's standalone resource manager refuses
    # slots no registered TaskManager offers). 24 restarts 5 s apart give a
    # replacement 2 minutes; one took ~30 s to register on the loaded machine.
    cluster_restart_attempts: int = Field(default=24, ge=0)
    cluster_restart_delay_s: float = Field(default=5.0, gt=0)

    # The standalone session cluster (`memstream infra up --flink`,
    # infra/flink_cluster.py): one JobManager and ``taskmanagers`` TaskManagers
    # as local processes from the distribution inside the apache-flink package.
    host: str = "127.0.0.1"
    # REST API and web UI (Flink's 8081, moved like every memstream port: 18081
    # is the MCP server's); `memstream flink --cluster HOST:PORT` names this one.
    rest_port: int = Field(default=18481, ge=1, le=65535)
    # JobManager RPC (Flink's 6123, moved likewise). TaskManagers, blob server
    # and data exchange take free ports chosen at start (Flink's default, 0).
    rpc_port: int = Field(default=16123, ge=1, le=65535)
    taskmanagers: int = Field(default=2, ge=1)
    # One slot each: a job of parallelism 2 then runs one subtask on each
    # TaskManager, which is what the cluster is for (and 2 cores fit 2 Python workers).
    slots_per_taskmanager: int = Field(default=1, ge=1)
    # Process sizes (heap, managed memory for RocksDB and the Python worker,
    # metaspace, overhead). Flink's defaults are 1600m / 1728m; the JobManager
    # of one small job needs less, and the machine is shared.
    jobmanager_memory: str = "1024m"
    taskmanager_memory: str = "1728m"
    # Flink's defaults (10 s / 50 s) let a SIGKILLed TaskManager hold the job
    # for ~20-50 s before the JobManager gives up on it; 2 s beats with two
    # missed RPCs (Flink's heartbeat.rpc-failure-threshold) notice it in ~5 s.
    # The timeout stays long enough for a TaskManager busy on 2 loaded cores.
    heartbeat_interval_s: float = Field(default=2.0, gt=0)
    heartbeat_timeout_s: float = Field(default=20.0, gt=0)

    @property
    def rest_address(self) -> str:
        """HOST:PORT of the cluster's REST API, as `flink run -m` takes it."""
        return f"{self.host}:{self.rest_port}"

    @property
    def stall_after(self) -> float:
        """The stall time of the Flink group (see ``stall_after_s``)."""
        return self.stall_after_s or 2 * self.checkpoint_interval_s


class ApiSettings(_Section):
    """Who may call the HTTP API and the MCP server: API keys map to tenants."""

    # MEMSTREAM_API__KEYS='{"<key>": "<tenant>"}'; merged with the keys file.
    keys: dict[str, str] = Field(default_factory=dict, repr=False)
    keys_file: Path | None = None  # a JSON object of key -> tenant
    mcp_key: SecretStr | None = None  # the key `memstream mcp` serves (its tenant)
    # The review console's operator keys (jobs/serve/keys.py), never API keys:
    # MEMSTREAM_API__OPERATOR_KEYS='{"<key>": "<tenant>/<reviewer>"}', merged
    # with the file. None configured: `memstream serve` has no /review.
    operator_keys: dict[str, str] = Field(default_factory=dict, repr=False)
    operator_keys_file: Path | None = None  # a JSON object of key -> "<tenant>/<reviewer>"
    # How many of a tenant's pending and held items the console lists, newest first.
    review_max_items: int = Field(default=200, ge=1, le=10_000)
    # Rows of per-user recall indexes a serving process keeps in memory (least
    # recently used users go first): ~1.6 KB a row, so 500k ~ 0.8 GB.
    recall_cache_items: int = Field(default=500_000, ge=1)
    # Recall query vectors a serving process keeps, by exact query text (agents
    # repeat questions; a hit skips MiniLM): ~1.5 KB each, 0 keeps none.
    query_cache_items: int = Field(default=10_000, ge=0)
    # torch intra-op threads of the serving process. One: a short query's forward
    # pass is too small to split well, and concurrent requests already use both
    # cores of the 2-core machine (docs/recall.md, Speed).
    torch_threads: int = Field(default=1, ge=1)
    # Micro-batching of concurrent recall queries (jobs/serve/query_batcher.py):
    # one worker embeds whatever queries wait as one MiniLM batch, instead of
    # one forward pass per request thread fighting the others for the cores.
    # Off: each request embeds its own query. The wait bounds what a query pays
    # for company (only while queries come together; a lone caller never
    # waits); the batch bound keeps one pass short (a padded batch of 16 short
    # queries took ~3.5x one query's time on the loaded machine, not 16x).
    query_batching: bool = True
    query_batch_max: int = Field(default=16, ge=1, le=256)
    query_batch_wait_ms: float = Field(default=2.0, ge=0.0, le=50.0)


class MetricsSettings(_Section):
    """Prometheus endpoints of the jobs and the lag sampler behind the API's dashboard.

    Each job serves ``/metrics`` on its own port (0: no endpoint); the API
    serves ``/metrics`` and ``/dashboard`` on its own port. Ports sit beside
    the API's 18080 and the MCP server's 18081, away from infra's services.
    """

    host: str = "127.0.0.1"  # loopback: exposing metrics beyond the machine is a choice
    ingest_port: int = Field(default=18091, ge=0, le=65535)  # the Faust worker
    flink_port: int = Field(default=18092, ge=0, le=65535)  # the PyFlink job's Python worker
    sink_port: int = Field(default=18093, ge=0, le=65535)
    # Seconds between lag samples in `memstream serve`: `memstream lag --watch`'s
    # default, several samples per Flink checkpoint (30 s).
    lag_interval_s: float = Field(default=5.0, gt=0)
    # Samples kept for the dashboard: one hour at the default interval.
    lag_history: int = Field(default=720, ge=2)
    # Groups the sampler follows; empty: every group on the cluster.
    lag_groups: list[str] = Field(default_factory=list)
    # The stall time of groups that are not the ingest, Flink or sink job's
    # (those have their own, in their sections): a consumer we know nothing of.
    stall_after_s: float = Field(default=60.0, gt=0)


class HintSettings(_Section):
    """Hints pushed to agents on memory.hints (docs/predictive.md, Hints)."""

    # Recall hits in one hint: a prompt's memory block of a few lines (the
    # HTTP context's default is 10; a pushed hint is read unasked, so fewer).
    k: int = Field(default=5, ge=1, le=100)
    # How long the sink remembers which memory.ops record owns a hint
    # (connectors/redis_hints.py): a copy of a request arriving later than this
    # publishes the hint again. A week covers a Flink job restarted afresh and a
    # Faust backlog; the claims are ~100 bytes each.
    claim_ttl: timedelta = timedelta(days=7)
    # The SSE stream sends a comment line when no hint came for this long, so
    # proxies keep the connection and a gone client is noticed.
    keepalive_s: float = Field(default=15.0, gt=0)


class BenchmarkSettings(_Section):
    """Data the benchmarks read that the repository does not ship."""

    # The LongMemEval oracle file (longmemeval_oracle.json from the LongMemEval
    # release). Public data under its own licence: read in place, never copied
    # into the repository. Unset: the LongMemEval benchmarks ask for --data.
    longmemeval: Path | None = None


class Settings(BaseSettings):
    """All of memstream's configuration, with documented defaults."""

    model_config = SettingsConfigDict(
        env_prefix="MEMSTREAM_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
        frozen=True,
    )

    # All runtime state (service data, logs, pid files, trained models) lives
    # under this one directory; it is gitignored when inside the repository.
    state_dir: Path = Field(default_factory=default_state_dir)
    # Downloaded jars and the built Neo4j launcher: outside the repository so
    # that a fresh clone reuses them.
    cache_dir: Path = Path.home() / ".cache" / "memstream"
    java_home: Path | None = None
    service_start_timeout_s: float = 90.0

    kafka: KafkaSettings = KafkaSettings()
    redis: RedisSettings = RedisSettings()
    neo4j: Neo4jSettings = Neo4jSettings()
    chroma: ChromaSettings = ChromaSettings()
    # Review thresholds and TTLs (documented in pipelines/review/config.py);
    # e.g. MEMSTREAM_REVIEW__COMMIT_THRESHOLD=0.9.
    ingest: IngestSettings = IngestSettings()
    sink: SinkSettings = SinkSettings()
    flink: FlinkSettings = FlinkSettings()
    api: ApiSettings = ApiSettings()
    metrics: MetricsSettings = MetricsSettings()
    review: ReviewConfig = ReviewConfig()
    # score = 0.6·vector + 0.3·keyword + 0.1·time (docs/architecture.md, Tiers);
    # e.g. MEMSTREAM_RECALL__TIME=0.2.
    recall: RecallWeights = RecallWeights()
    # Retrieval triggers and behaviour memory (defaults documented in
    # pipelines/triggers/config.py and pipelines/behaviour/config.py, docs/predictive.md);
    # e.g. MEMSTREAM_TRIGGERS__SEMANTIC_MAX_COSINE=0.2, MEMSTREAM_BEHAVIOUR__MIN_VIEWS=4.
    triggers: TriggerConfig = TriggerConfig()
    behaviour: BehaviourConfig = BehaviourConfig()
    # e.g. MEMSTREAM_HINTS__K=8.
    hints: HintSettings = HintSettings()
    benchmarks: BenchmarkSettings = BenchmarkSettings()
    review_rules: Path | None = None  # None: the packaged pipelines/review/rules.toml

    @property
    def chroma_path(self) -> Path:
        return self.chroma.path or self.state_dir / "chroma"

    @property
    def transe_model_dir(self) -> Path:
        """The TransE model: written by ``memstream train transe``, read by the encode stage."""
        return self.ingest.transe_dir or self.state_dir / "models" / "transe"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
