"""StageError: a failed record's dead letter names its stage, never a file path.

The stages here are stand-ins (no models load): each test makes one stage
fail and checks what ``run_batch`` — the one place failures are isolated —
writes for the failing record, and that the other records still go through.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, cast

import pytest

from jobs.ingest.stages import Batch, run_batch
from pipelines.errors import OUTSIDE_STAGES, StageError, stage
from pipelines.extract import FactExtractor, extract_crm
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer, UserMemoryState
from schemas.deadletter import DeadLetterReason
from schemas.events import DialogueEvent
from schemas.facts import ExtractedFact
from schemas.memory import Encoding
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

KEY = b"t1:u1"


class Boom(RuntimeError):
    pass


class FailingParser:
    def parse_batch(self, events: Iterable[DialogueEvent]) -> list[Any]:
        if list(events):
            raise Boom("no parse today")
        return []


class Encoder:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def encode_with_texts(
        self, facts: Sequence[ExtractedFact], texts: Sequence[str]
    ) -> tuple[list[Encoding | None], list[list[float]]]:
        if self.fail and (facts or texts):
            raise Boom("no vectors")
        return [None] * len(facts), [[1.0]] * len(texts)


class RefusingReviewer(Reviewer):
    def apply(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("refused")


def _pipeline(encoder: object = None, reviewer: Reviewer | None = None) -> IngestPipeline:
    return IngestPipeline(
        parser=cast(DialogueParser, FailingParser()),
        extractor=cast(FactExtractor, object()),
        crm_extractor=extract_crm,
        encoder=cast(Any, encoder or Encoder()),
        reviewer=reviewer or Reviewer(),
    )


def _action(offset: int, **properties: object) -> SourceRecord:
    event = {
        "event_id": f"a-{offset}",
        "tenant_id": "t1",
        "user_id": "u1",
        "action_type": "store_memory",
        "ts": "2026-03-01T10:00:00+00:00",
        "properties": properties,
    }
    return SourceRecord(USER_ACTIONS, 0, offset, KEY, json.dumps(event).encode())


def _stored(offset: int) -> SourceRecord:
    return _action(offset, predicate="prefers", object=f"tea {offset}")


def _turn(offset: int) -> SourceRecord:
    event = {
        "schema_version": 1,
        "event_id": f"d-{offset}",
        "tenant_id": "t1",
        "user_id": "u1",
        "ts": "2026-03-01T10:00:00Z",
        "session_id": "s1",
        "turn_index": offset,
        "role": "user",
        "text": "I moved to Leeds.",
    }
    return SourceRecord(DIALOGUE_EVENTS, 0, offset, KEY, json.dumps(event).encode())


def _run(pipeline: IngestPipeline, records: list[SourceRecord], load: Any = None) -> Batch:
    return run_batch(pipeline, records, load or (lambda _key: None))


def _letters(batch: Batch) -> dict[int, tuple[str, str]]:
    return {
        r.record.offset: (r.dead_letter.stage, r.dead_letter.detail)
        for r in batch.results
        if r.dead_letter is not None
    }


def test_stage_wraps_any_exception_once() -> None:
    with pytest.raises(StageError) as raised, stage("review"), stage("encode"):
        raise Boom("x")
    assert raised.value.stage == "encode"  # the inner stage's name survives the outer one
    assert isinstance(raised.value.cause, Boom)
    assert str(raised.value) == "encode failed: Boom: x"
    assert StageError.of(raised.value) is raised.value
    assert StageError.of(KeyError("k")).stage == OUTSIDE_STAGES


def test_a_parse_failure_is_dead_lettered_as_parse() -> None:
    batch = _run(_pipeline(), [_stored(0), _turn(1), _stored(2)])
    assert batch.isolated
    assert _letters(batch) == {1: ("parse", "parse failed: Boom: no parse today")}
    (letter,) = [r.dead_letter for r in batch.results if r.dead_letter is not None]
    assert letter.reason is DeadLetterReason.PROCESSING_ERROR
    assert letter.errors == [f"{Boom.__module__}.Boom: no parse today\n"]
    assert (letter.topic, letter.offset, letter.key) == (DIALOGUE_EVENTS, 1, "t1:u1")
    assert [len(r.ops) > 0 for r in batch.results] == [True, False, True]


def test_an_extract_failure_is_dead_lettered_as_extract() -> None:
    batch = _run(_pipeline(), [_stored(0), _action(1, object="tea"), _stored(2)])
    stage_name, detail = _letters(batch)[1]
    assert stage_name == "extract"
    assert detail.startswith("extract failed: ValueError: store_memory needs")
    assert set(_letters(batch)) == {1}


def test_an_encode_failure_is_dead_lettered_as_encode() -> None:
    batch = _run(_pipeline(encoder=Encoder(fail=True)), [_stored(0)])
    assert _letters(batch) == {0: ("encode", "encode failed: Boom: no vectors")}


def test_a_review_failure_is_dead_lettered_as_review() -> None:
    batch = _run(_pipeline(reviewer=RefusingReviewer()), [_stored(0)])
    assert _letters(batch) == {0: ("review", "review failed: ValueError: refused")}


def test_a_failure_outside_the_stages_is_dead_lettered_as_ingest() -> None:
    def load(_key: str) -> UserMemoryState | None:
        raise RuntimeError("no state")

    batch = _run(_pipeline(), [_stored(0)], load)
    assert _letters(batch) == {0: (OUTSIDE_STAGES, "ingest failed: RuntimeError: no state")}


def test_a_clean_batch_is_not_isolated() -> None:
    batch = _run(_pipeline(), [_stored(0), _stored(1)])
    assert not batch.isolated
    assert _letters(batch) == {}
    assert all(r.ops for r in batch.results)
