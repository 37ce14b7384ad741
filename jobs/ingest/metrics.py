"""Prometheus metrics of the ingest job, the same for both engines (Faust, PyFlink).

Collectors on the default registry (``jobs.metrics_endpoint`` serves it) and
one entry point per thing an engine sees:

- ``time_stage(stage)``: the ``StageTimer`` of ``IngestPipeline`` (the engines
  pass it to ``jobs.ingest.stages.load_pipeline``), into
  ``memstream_ingest_stage_seconds``;
- ``observe_batch(batch, produced_at)``: after a batch's outputs are handed to
  Kafka, everything else — events in per input topic, events out per output
  topic (``memory.dlq`` included), review outcomes, dead letters by reason and
  the end-to-end latency from each operation's event time to its production.

Labels never hold tenant data: topics (base names, without a test or shadow
namespace), stages, outcomes and dead-letter reasons only.

Review outcomes, one per reviewed fact decision:
committed (an ``upsert_fact`` that is not a merge), merged (an ``upsert_fact``
whose conflict decision is ``merge``), superseded (a ``close_fact``: a version
ended by a newer one or by a contradiction), pending (an ``add_pending``) and
held (an ``add_pending`` whose fact check held it for contradicting memory),
skipped (no operation at all: the review counters ``skipped`` — below the HITL
floor — and ``impossible``, read from the batch's states).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from datetime import UTC, datetime

from prometheus_client import Counter, Histogram

from jobs.ingest.stages import Batch
from pipelines.ingest import IngestResult
from pipelines.route import outputs
from schemas.memory import ReviewStage
from schemas.ops import MemoryOperation, OpType

log = logging.getLogger(__name__)

OUTCOMES = ("committed", "pending", "skipped", "held", "merged", "superseded")
STAGES = ("parse", "extract", "encode", "review")
# Retrieval-trigger reasons (pipelines/triggers/model.py TriggerReason) and the
# behaviour window's outcomes (pipelines/behaviour/stage.py Outcome).
TRIGGER_REASONS = ("explicit", "implicit", "too_few_signals", "chit_chat", "not_user", "stale")
BEHAVIOUR_OUTCOMES = ("counted", "duplicate", "late", "not_counted", "rejected")
# The predictive stages' cap counters (UserMemoryState.all_counters): what a
# flood of one user's actions or sessions pushed out to stay bounded.
_CAP_COUNTERS = {
    "behaviour_evicted": "window_events",
    "behaviour_expired": "window_expired",
    "trigger_sessions_evicted": "trigger_sessions",
}
# Review counters (pipelines/review) of facts dropped without an operation.
_SKIP_COUNTERS = ("skipped", "impossible")

EVENTS_IN = Counter(
    "memstream_ingest_events_in_total",
    "Records consumed by the ingest job, per input topic.",
    ["topic"],
)
EVENTS_OUT = Counter(
    "memstream_ingest_events_out_total",
    "Records produced by the ingest job, per output topic (memory.dlq included).",
    ["topic"],
)
STAGE_SECONDS = Histogram(
    "memstream_ingest_stage_seconds",
    "Duration of one stage call: a batch for parse and encode, a user's turns for "
    "extract, one event for review.",
    ["stage"],
    # bench_stage_speed: review ~0.3-0.7 ms per fact; parse+extract+encode
    # ~14 ms per turn, so a 64-turn batch takes ~1 s; 10 s catches stalls.
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
REVIEW_OUTCOMES = Counter(
    "memstream_ingest_review_outcomes_total",
    "Review decisions on facts (see jobs/ingest/metrics.py for each outcome).",
    ["outcome"],
)
DEAD_LETTERS = Counter(
    "memstream_ingest_dead_letters_total",
    "Records the ingest job dead-lettered to memory.dlq, by reason.",
    ["reason"],
)
END_TO_END_SECONDS = Histogram(
    "memstream_ingest_end_to_end_seconds",
    "From the input record's broker timestamp (or when the job read it) to its outputs.",
    # Around docs/architecture.md's p95 <= 800 ms; the long tail shows replays and backlogs
    # (a Flink job's output is only visible at its 30 s checkpoints).
    buckets=(0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 15, 30, 60, 300, 3600),
)
EVENT_TIME_LAG_SECONDS = Histogram(
    "memstream_ingest_event_time_lag_seconds",
    "From an operation's event time (the producer's ts) to the ingest job producing it.",
    # A replayed backlog or a producer's clock reads days: buckets to a week.
    buckets=(0.1, 0.8, 3.2, 15, 60, 300, 3600, 21600, 86400, 604800),
)

TRIGGER_DECISIONS = Counter(
    "memstream_ingest_trigger_decisions_total",
    "Retrieval-trigger decisions on dialogue turns, by reason (explicit and implicit fire).",
    ["reason"],
)
TRIGGER_SIGNALS = Counter(
    "memstream_ingest_trigger_signals_total",
    "Trigger signals that fired on user turns (also when too few fired to trigger).",
    ["signal"],
)
BEHAVIOUR_ACTIONS = Counter(
    "memstream_ingest_behaviour_actions_total",
    "User actions the behaviour window saw, by outcome.",
    ["outcome"],
)
BEHAVIOUR_CLAMPS = Counter(
    "memstream_ingest_behaviour_clamps_total",
    "Action values the behaviour window clamped (negative or absurd dwell, long queries).",
)
BEHAVIOUR_ITEMS = Counter(
    "memstream_ingest_behaviour_items_total",
    "Behaviour items (interests, purchases after views, search drifts) sent to review.",
)
PREDICTIVE_DROPPED = Counter(
    "memstream_ingest_predictive_dropped_total",
    "What the predictive stages' caps dropped: window events over MAX_EVENTS, events "
    "expired from the window, trigger sessions over MAX_SESSIONS.",
    ["what"],
)

# Every label value exists from the start, so a rate() over a fresh process
# reads 0 rather than nothing.
for _stage in STAGES:
    STAGE_SECONDS.labels(stage=_stage)
for _outcome in OUTCOMES:
    REVIEW_OUTCOMES.labels(outcome=_outcome)
for _reason in TRIGGER_REASONS:
    TRIGGER_DECISIONS.labels(reason=_reason)
for _outcome in BEHAVIOUR_OUTCOMES:
    BEHAVIOUR_ACTIONS.labels(outcome=_outcome)
for _what in _CAP_COUNTERS.values():
    PREDICTIVE_DROPPED.labels(what=_what)


def time_stage(stage: str) -> AbstractContextManager[object]:
    """The pipeline's ``StageTimer``: times the block into ``memstream_ingest_stage_seconds``."""
    return STAGE_SECONDS.labels(stage=stage).time()


def outcome_of(op: MemoryOperation) -> str | None:
    """The review outcome an operation records, or None (turns, statuses, resolutions)."""
    if op.op_type is OpType.CLOSE_FACT:
        return "superseded"
    if op.record is None:
        return None
    decisions = {(outcome.stage, outcome.decision) for outcome in op.record.review}
    if op.op_type is OpType.UPSERT_FACT:
        return "merged" if (ReviewStage.CONFLICT, "merge") in decisions else "committed"
    if op.op_type is OpType.ADD_PENDING:
        return "held" if (ReviewStage.FACT_CHECK, "hold") in decisions else "pending"
    return None


def observe_batch(batch: Batch, produced_at: datetime) -> None:
    """Count a batch whose outputs were produced at ``produced_at`` (aware)."""
    for result in batch.results:
        EVENTS_IN.labels(topic=result.record.topic).inc()
        # The engines' rule: pipelines.route.outputs.
        for output in outputs(result.ops, result.dead_letter):
            EVENTS_OUT.labels(topic=output.topic).inc()
        for op in result.ops:
            outcome = outcome_of(op)
            if outcome is not None:
                REVIEW_OUTCOMES.labels(outcome=outcome).inc()
            EVENT_TIME_LAG_SECONDS.observe(max(0.0, (produced_at - op.at).total_seconds()))
        read_at = result.record.read_at
        if read_at is not None:
            END_TO_END_SECONDS.observe(max(0.0, (produced_at - read_at).total_seconds()))
        if result.dead_letter is not None:
            DEAD_LETTERS.labels(reason=result.dead_letter.reason.value).inc()
        _observe_predictive(result)
    skipped = sum(batch.counted(name) for name in _SKIP_COUNTERS)
    if skipped:
        REVIEW_OUTCOMES.labels(outcome="skipped").inc(skipped)
    for counter, what in _CAP_COUNTERS.items():
        dropped = batch.counted(counter)
        if dropped:
            PREDICTIVE_DROPPED.labels(what=what).inc(dropped)


def _observe_predictive(result: IngestResult) -> None:
    """A record's trigger decision or behaviour observation, if it had one."""
    if result.trigger is not None:
        TRIGGER_DECISIONS.labels(reason=result.trigger.reason.value).inc()
        for signal in result.trigger.signals:
            TRIGGER_SIGNALS.labels(signal=signal.name.value).inc()
    seen = result.behaviour
    if seen is not None:
        BEHAVIOUR_ACTIONS.labels(outcome=seen.outcome.value).inc()
        if seen.outcome.value == "rejected":
            # A valid action the window cannot use (a view without a target): it
            # is applied like any action, so no dead letter; its coordinates and
            # the reason are logged (no content).
            record = result.record
            where = f"{record.topic}/{record.partition}/{record.offset}"
            log.warning("behaviour window refused %s: %s", where, "; ".join(seen.reasons))
        if seen.outcome.value == "counted" and seen.reasons:
            BEHAVIOUR_CLAMPS.inc(len(seen.reasons))
        if seen.items:
            BEHAVIOUR_ITEMS.inc(len(seen.items))


def broker_time(timestamp: float | None) -> datetime:
    """A record's broker timestamp (seconds since the epoch), or now when it has none."""
    if timestamp is None or timestamp <= 0:
        return datetime.now(UTC)
    return datetime.fromtimestamp(timestamp, UTC)
