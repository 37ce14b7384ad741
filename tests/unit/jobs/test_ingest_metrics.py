"""Ingest metrics over the real stages on the sample stream: the timing hook and observe_batch."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY

from jobs.ingest.metrics import (
    OUTCOMES,
    STAGES,
    broker_time,
    observe_batch,
    outcome_of,
    time_stage,
)
from jobs.ingest.stages import Batch, run_batch
from memstream.data import sample_dir
from pipelines.encode import Encoder
from pipelines.extract import FactExtractor, extract_crm
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer
from pipelines.route import PENDING_OPS
from schemas.memory import ReviewOutcome, ReviewStage
from schemas.ops import MemoryOperation, OpType
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

SAMPLE = sample_dir()
PRODUCED_AT = datetime.now(UTC)
READ_AT = PRODUCED_AT - timedelta(seconds=2)  # the records' broker timestamp
BAD = [
    SourceRecord(USER_ACTIONS, 1, 900, b"t:u", b"{not json", READ_AT),
    SourceRecord(DIALOGUE_EVENTS, 1, 901, b"t:u", b'{"event_id": "x"}', READ_AT),
]


def _records(topic: str, limit: int) -> list[SourceRecord]:
    lines = (SAMPLE / f"{topic}.jsonl").read_bytes().splitlines()[:limit]
    records = []
    for offset, line in enumerate(lines):
        event = json.loads(line)
        key = f"{event['tenant_id']}:{event['user_id']}".encode()
        records.append(SourceRecord(topic, 0, offset, key, line, READ_AT))
    return records


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _snapshot() -> dict[str, float]:
    """Every ingest metric this test checks, by name and label."""
    values = {f"stage:{s}": _value("memstream_ingest_stage_seconds_count", stage=s) for s in STAGES}
    values |= {
        f"outcome:{o}": _value("memstream_ingest_review_outcomes_total", outcome=o)
        for o in OUTCOMES
    }
    for topic in ("memory.ops", "memory.pending", "memory.dlq"):
        values[f"out:{topic}"] = _value("memstream_ingest_events_out_total", topic=topic)
    for topic in (DIALOGUE_EVENTS, CRM_WEBHOOKS, USER_ACTIONS):
        values[f"in:{topic}"] = _value("memstream_ingest_events_in_total", topic=topic)
    for reason in ("malformed_json", "schema_violation"):
        values[f"dlq:{reason}"] = _value("memstream_ingest_dead_letters_total", reason=reason)
    values["e2e"] = _value("memstream_ingest_end_to_end_seconds_count")
    values["e2e:sum"] = _value("memstream_ingest_end_to_end_seconds_sum")
    values["event_time"] = _value("memstream_ingest_event_time_lag_seconds_count")
    return values


@pytest.fixture(scope="module")
def batch_and_deltas() -> tuple[Batch, dict[str, float]]:
    parser = DialogueParser.load()
    pipeline = IngestPipeline(
        parser=parser,
        extractor=FactExtractor.load(parser),
        crm_extractor=extract_crm,
        encoder=Encoder.load(None),
        reviewer=Reviewer(),
        stage_timer=time_stage,
    )
    records = (
        _records(DIALOGUE_EVENTS, 60) + _records(CRM_WEBHOOKS, 8) + _records(USER_ACTIONS, 8) + BAD
    )
    before = _snapshot()
    batch = run_batch(pipeline, records, lambda _key: None)
    observe_batch(batch, PRODUCED_AT)
    after = _snapshot()
    return batch, {name: after[name] - before[name] for name in after}


def _ops(batch: Batch) -> list[MemoryOperation]:
    return [op for result in batch.results for op in result.ops]


def test_every_stage_is_timed(batch_and_deltas: tuple[Batch, dict[str, float]]) -> None:
    batch, deltas = batch_and_deltas
    assert all(deltas[f"stage:{stage}"] >= 1 for stage in STAGES), deltas
    reviewed = sum(1 for r in batch.results if r.event is not None and r.dead_letter is None)
    assert deltas["stage:review"] == reviewed  # one review call per valid event


def test_events_in_and_out_per_topic(batch_and_deltas: tuple[Batch, dict[str, float]]) -> None:
    batch, deltas = batch_and_deltas
    ops = _ops(batch)
    assert (deltas[f"in:{DIALOGUE_EVENTS}"], deltas[f"in:{CRM_WEBHOOKS}"]) == (61, 8)
    assert deltas[f"in:{USER_ACTIONS}"] == 9
    assert deltas["out:memory.ops"] == len(ops) > 0
    assert deltas["out:memory.pending"] == sum(op.op_type in PENDING_OPS for op in ops)
    assert deltas["out:memory.dlq"] == 2
    assert (deltas["dlq:malformed_json"], deltas["dlq:schema_violation"]) == (1, 1)
    # Latency from the broker's timestamp, once per record (dead letters too);
    # the sample's own ts (March 2026) only shows in the event-time lag.
    assert deltas["e2e"] == len(batch.results) == 61 + 8 + 9
    assert deltas["e2e:sum"] == pytest.approx(2.0 * len(batch.results))
    assert deltas["event_time"] == len(ops)


def test_review_outcomes_match_the_ops_and_the_review_counters(
    batch_and_deltas: tuple[Batch, dict[str, float]],
) -> None:
    batch, deltas = batch_and_deltas
    kinds = Counter(op.op_type for op in _ops(batch))
    assert deltas["outcome:committed"] + deltas["outcome:merged"] == kinds[OpType.UPSERT_FACT]
    assert deltas["outcome:superseded"] == kinds[OpType.CLOSE_FACT]
    assert deltas["outcome:pending"] + deltas["outcome:held"] == kinds[OpType.ADD_PENDING]
    # Every state was new, so the whole counter is this batch's.
    skipped = sum(
        s.counters.get("skipped", 0) + s.counters.get("impossible", 0)
        for s in batch.states.values()
    )
    assert deltas["outcome:skipped"] == skipped
    assert deltas["outcome:committed"] > 0 and kinds[OpType.UPSERT_FACT] > 0


def test_outcome_of_reads_the_review_trail(
    batch_and_deltas: tuple[Batch, dict[str, float]],
) -> None:
    batch, _ = batch_and_deltas
    upsert = next(op for op in _ops(batch) if op.op_type is OpType.UPSERT_FACT)
    assert upsert.record is not None
    merge = ReviewOutcome(stage=ReviewStage.CONFLICT, decision="merge")
    hold = ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="hold")

    def with_review(op_type: OpType, *extra: ReviewOutcome) -> MemoryOperation:
        assert upsert.record is not None
        record = upsert.record.model_copy(update={"review": [*upsert.record.review, *extra]})
        return upsert.model_copy(update={"op_type": op_type, "record": record})

    assert outcome_of(with_review(OpType.UPSERT_FACT)) == "committed"
    assert outcome_of(with_review(OpType.UPSERT_FACT, merge)) == "merged"
    assert outcome_of(with_review(OpType.ADD_PENDING)) == "pending"
    assert outcome_of(with_review(OpType.ADD_PENDING, hold)) == "held"
    assert outcome_of(with_review(OpType.CLOSE_FACT)) == "superseded"
    turn = next(op for op in _ops(batch) if op.op_type is OpType.APPEND_TURN)
    assert outcome_of(turn) is None


def test_skipped_facts_are_counted_from_the_states_review_counters() -> None:
    reviewer = Reviewer()
    loaded = reviewer.new_state()
    loaded.count("skipped", 4)
    later = reviewer.new_state()
    later.count("skipped", 7)  # three more skipped in this batch...
    later.count("impossible", 2)  # ...two impossible values...
    later.count("pending", 5)  # ...and pending items, which ops count instead
    batch = Batch(results=[], states={"t:u": later}, counters_at_load={"t:u": loaded.counters})
    before = _value("memstream_ingest_review_outcomes_total", outcome="skipped")
    observe_batch(batch, PRODUCED_AT)
    assert _value("memstream_ingest_review_outcomes_total", outcome="skipped") - before == 5


def test_a_record_without_a_broker_timestamp_is_timed_from_when_it_was_read() -> None:
    assert broker_time(1_780_000_000.5) == datetime.fromtimestamp(1_780_000_000.5, UTC)
    before = datetime.now(UTC)
    for missing in (None, 0.0, -1.0):
        assert before <= broker_time(missing) <= datetime.now(UTC)
