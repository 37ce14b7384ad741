"""The composed ingest stages over the bundled sample stream: no services."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from memstream.data import sample_dir
from pipelines.errors import StageError
from pipelines.ingest import IngestPipeline, IngestResult, SourceRecord, dead_letter
from pipelines.review import Reviewer, UserMemoryState
from pipelines.snapshot_vectors import is_packed, unpack_vector
from schemas.deadletter import DeadLetterReason
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

SAMPLE = sample_dir()


def _records(topic: str, limit: int) -> list[SourceRecord]:
    lines = (SAMPLE / f"{topic}.jsonl").read_bytes().splitlines()[:limit]
    records = []
    for offset, line in enumerate(lines):
        event = json.loads(line)
        key = f"{event['tenant_id']}:{event['user_id']}".encode()
        records.append(SourceRecord(topic, 0, offset, key, line))
    return records


def _states() -> tuple[dict[str, UserMemoryState], Callable[[str], UserMemoryState]]:
    states: dict[str, UserMemoryState] = {}
    reviewer = Reviewer()

    def state_for(key: str) -> UserMemoryState:
        return states.setdefault(key, reviewer.new_state())

    return states, state_for


def _op_ids(results: list[IngestResult]) -> list[str]:
    return [op.op_id for r in results for op in r.ops]


def test_results_do_not_depend_on_batch_size(pipeline: IngestPipeline) -> None:
    # Flink hands the pipeline one record at a time, Faust dozens: the same
    # stream must give the same operations and the same final state.
    records = _records(DIALOGUE_EVENTS, 80)
    whole_states, whole_for = _states()
    whole = pipeline.process(records, whole_for)
    single_states, single_for = _states()
    single = [r for rec in records for r in pipeline.process([rec], single_for)]
    assert _op_ids(whole) == _op_ids(single)
    assert len(_op_ids(whole)) > len(records)  # turns plus facts: something was extracted
    assert whole_states.keys() == single_states.keys()
    for key, state in whole_states.items():
        _assert_same(state.snapshot(), single_states[key].snapshot(), key)


def _assert_same(a: Any, b: Any, path: str) -> None:
    """Equal, except floats within 1e-5: MiniLM's vectors move by ~1e-7 with batch size.

    Vectors are compared unpacked (snapshots hold them as base64, pipelines/snapshot_vectors.py).
    """
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, abs_tol=1e-5), path
    elif is_packed(a) and is_packed(b):
        _assert_same(unpack_vector(a), unpack_vector(b), path)  # type: ignore[arg-type]
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def test_a_replayed_record_yields_nothing_and_changes_no_state(pipeline: IngestPipeline) -> None:
    records = _records(DIALOGUE_EVENTS, 12) + _records(CRM_WEBHOOKS, 6)
    states, state_for = _states()
    first = pipeline.process(records, state_for)
    before = {k: s.snapshot() for k, s in states.items()}
    again = pipeline.process(records, state_for)
    assert _op_ids(first)
    assert _op_ids(again) == []
    assert all(r.replayed for r in again)
    assert {k: s.snapshot() for k, s in states.items()} == before


def test_bad_records_are_dead_lettered_and_the_rest_goes_on(pipeline: IngestPipeline) -> None:
    good = _records(USER_ACTIONS, 5)
    bad = [
        SourceRecord(USER_ACTIONS, 1, 0, b"t:u", b"{not json"),
        SourceRecord(USER_ACTIONS, 1, 1, b"t:u", b'{"event_id": "x"}'),
        SourceRecord(DIALOGUE_EVENTS, 1, 2, None, b"\xff\xfe"),
        SourceRecord("no.such.topic", 0, 0, None, b"{}"),
    ]
    _, state_for = _states()
    results = pipeline.process([bad[0], *good, *bad[1:]], state_for)
    reasons = [r.dead_letter.reason for r in results if r.dead_letter is not None]
    assert reasons == [
        DeadLetterReason.MALFORMED_JSON,
        DeadLetterReason.SCHEMA_VIOLATION,
        DeadLetterReason.NOT_UTF8,
        DeadLetterReason.UNKNOWN_TOPIC,
    ]
    assert all(r.dead_letter is None and r.event is not None for r in results[1:6])


def test_store_memory_without_a_predicate_is_dead_lettered(pipeline: IngestPipeline) -> None:
    action = {
        "event_id": "a-store-1",
        "tenant_id": "t1",
        "user_id": "u1",
        "action_type": "store_memory",
        "ts": "2026-03-01T10:00:00+00:00",
        "properties": {"object": "tea"},
    }
    record = SourceRecord(USER_ACTIONS, 0, 0, b"t1:u1", json.dumps(action).encode())
    _, state_for = _states()
    with pytest.raises(StageError) as raised:
        pipeline.process([record], state_for)
    assert raised.value.stage == "extract"
    letter = dead_letter(record, raised.value)
    assert letter.reason is DeadLetterReason.PROCESSING_ERROR
    assert letter.stage == "extract"
    assert "predicate" in letter.detail
