"""StageError: a failed record's dead letter names its stage, never a file path.

The stages here are stand-ins (no models load): each test makes one stage
fail and checks what ``run_batch`` — the one place failures are isolated —
writes for the failing record, and that the other records still go through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import pytest

from jobs.ingest.stages import Batch, run_batch
from pipelines.errors import OUTSIDE_STAGES, StageError, stage
from pipelines.extract import FactExtractor, extract_crm
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer, UserMemoryState
from pipelines.route import outputs
from schemas.deadletter import DeadLetterReason
from schemas.events import DialogueEvent
from schemas.facts import ExtractedFact
from schemas.memory import Encoding
from schemas.ops import MemoryOperation
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


class BadOp(MemoryOperation):
    """An operation whose JSON cannot be written (a stand-in for any serialiser error)."""

    def model_dump_json(self, **kwargs: Any) -> str:
        raise OverflowError("no JSON today")


class UnwritableOpReviewer(Reviewer):
    """Reviews as usual; the ops of the event at ``offset`` cannot be serialised."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.offset = offset

    def apply(
        self, state: UserMemoryState, event: Any, lineage: Any, *args: Any, **kwargs: Any
    ) -> Any:
        ops = super().apply(state, event, lineage, *args, **kwargs)
        if lineage.offset != self.offset:
            return ops
        return [BadOp.model_validate(op.model_dump()) for op in ops]


def _refusing(marker: str) -> Callable[[dict[str, Any]], str]:
    """An engine's state encoder that refuses any state holding ``marker``."""

    def encode(snapshot: dict[str, Any]) -> str:
        text = json.dumps(snapshot)
        if marker in text:
            # What orjson (Faust's table codec) says of an integer beyond 64 bits.
            raise TypeError("Integer exceeds 64-bit range")
        return text

    return encode


def test_a_state_the_engine_cannot_encode_is_dead_lettered_as_checkpoint() -> None:
    records = [_stored(0), _stored(1), _stored(2)]
    batch = run_batch(_pipeline(), records, lambda _key: None, _refusing("tea 1"))
    assert batch.isolated
    assert _letters(batch) == {
        1: ("checkpoint", "checkpoint failed: TypeError: Integer exceeds 64-bit range")
    }
    (letter,) = [r.dead_letter for r in batch.results if r.dead_letter is not None]
    assert letter.reason is DeadLetterReason.PROCESSING_ERROR
    assert [len(r.ops) > 0 for r in batch.results] == [True, False, True]
    # The state is as if record 1 never came: records 0 and 2 applied, and what
    # the engine stores is the encoding it accepted.
    state = batch.states[KEY.decode()]
    assert state.offsets == {f"{USER_ACTIONS}:0": 2}
    assert "tea 1" not in json.dumps(state.snapshot())
    assert "tea 2" in json.dumps(state.snapshot())
    assert batch.encoded == {KEY.decode(): json.dumps(state.snapshot())}
    assert batch.snapshots == {KEY.decode(): state.snapshot()}


def test_an_output_that_does_not_serialise_is_dead_lettered_as_serialise() -> None:
    pipeline = _pipeline(reviewer=UnwritableOpReviewer(offset=1))
    batch = _run(pipeline, [_stored(0), _stored(1), _stored(2)])
    assert batch.isolated
    assert _letters(batch) == {1: ("serialise", "serialise failed: OverflowError: no JSON today")}
    assert batch.states[KEY.decode()].offsets == {f"{USER_ACTIONS}:0": 2}
    # Every message the engines publish is already bytes: the dead letter for 1.
    assert [[m.topic for m in messages] for messages in batch.messages][1] == ["memory.dlq"]
    assert all(m.value for messages in batch.messages for m in messages)


def test_a_clean_batch_hands_the_engine_its_messages_and_encoded_states() -> None:
    batch = _run(_pipeline(), [_stored(0), _stored(1)])
    assert not batch.isolated
    assert len(batch.messages) == len(batch.results)
    for result, messages in zip(batch.results, batch.messages, strict=True):
        expected = outputs(result.ops, result.dead_letter)  # pending ops go to two topics
        assert [(m.topic, m.value) for m in messages] == [(o.topic, o.value()) for o in expected]
    state = batch.states[KEY.decode()]
    assert batch.encoded == {KEY.decode(): json.dumps(state.snapshot(), separators=(",", ":"))}
