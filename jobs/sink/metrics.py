"""Prometheus metrics of the sink job (docs/guarantees.md: "spool depth is a metric").

Plain prometheus-client collectors on the default registry, labelled by store
(``redis``, ``chroma``, ``neo4j``); a ``/metrics`` endpoint only has to serve
``prometheus_client.REGISTRY``. Names follow Prometheus conventions: counters end
in ``_total``, durations are in seconds.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

SPOOL_DEPTH = Gauge(
    "memstream_sink_spool_depth",
    "Operations waiting in the Redis spool for a store.",
    ["store"],
)
FALLBACK_ACTIVATIONS = Counter(
    "memstream_sink_fallback_activations_total",
    "Times a store fell back from direct writes to the spool.",
    ["store", "reason"],
)
DRAIN_SECONDS = Histogram(
    "memstream_sink_drain_seconds",
    "Time from a store's fallback until its spool was drained and direct writes resumed.",
    ["store"],
    # Outages run from a slow second to a restart of minutes.
    buckets=(1, 5, 15, 30, 60, 300, 900, 3600),
)
OPS_WRITTEN = Counter(
    "memstream_sink_ops_written_total",
    "Operations written to a store, directly or by a drain.",
    ["store", "path"],
)
OPS_SPOOLED = Counter(
    "memstream_sink_ops_spooled_total",
    "Operations put in the spool instead of being written to a store.",
    ["store"],
)
WRITE_SECONDS = Histogram(
    "memstream_sink_write_seconds",
    "Duration of one direct batch write to a store.",
    ["store"],
    # Around the 200 ms latency budget (docs/guarantees.md).
    buckets=(0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 5),
)
BATCHES_COMMITTED = Counter(
    "memstream_sink_batches_committed_total",
    "Batches of memory.ops whose offsets were committed after their writes.",
)
EVENTS_IN = Counter(
    "memstream_sink_events_in_total",
    "Records consumed by the sink job, per topic.",
    ["topic"],
)
DEAD_LETTERS = Counter(
    "memstream_sink_dead_letters_total",
    "Records the sink job dead-lettered to memory.dlq, by reason.",
    ["reason"],
)
END_TO_END_SECONDS = Histogram(
    "memstream_sink_end_to_end_seconds",
    "From an operation's record reaching the broker (its memory.ops Kafka timestamp) "
    "to the sink job applying it (written or spooled).",
    # The ingest histogram's buckets (jobs/ingest/metrics.py): docs/architecture.md's
    # p95 <= 800 ms applies to the whole path, ingest hop plus this one.
    buckets=(0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 15, 30, 60, 300, 3600),
)
# Measured from the producer's clock (the event's ``ts``), so it says how far
# behind the world memory is, not how fast the pipeline runs: a replayed backlog
# or a producer clock far off moves this one and leaves END_TO_END_SECONDS alone.
EVENT_TIME_LAG_SECONDS = Histogram(
    "memstream_sink_event_time_lag_seconds",
    "From an operation's event time (the producer's ts) to the sink job applying it.",
    # Up to a week: a replay of the retained log reads events days old.
    buckets=(0.1, 0.4, 1.6, 6.4, 30, 60, 300, 3600, 21600, 86400, 604800),
)

HINTS_PUBLISHED = Counter(
    "memstream_sink_hints_published_total",
    "Hints published to memory.hints, by trigger reason (explicit or implicit).",
    ["reason"],
)
HINT_COPIES = Counter(
    "memstream_sink_hint_copies_total",
    "Hint requests not published: a copy of a request another memory.ops record owns.",
)
HINTS_DEGRADED = Counter(
    "memstream_sink_hints_degraded_total",
    "Hints published without recall hits because recall failed (a store down).",
)
HINT_SECONDS = Histogram(
    "memstream_sink_hint_seconds",
    "Recall and composition of one batch's hints (the first includes loading MiniLM).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
for _reason in ("explicit", "implicit"):
    HINTS_PUBLISHED.labels(reason=_reason)
