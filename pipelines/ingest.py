"""The ingest stages composed: raw Kafka records in, memory operations out.

Engine-agnostic: the Faust worker and the PyFlink job both hand a batch of raw
records plus each key's ``UserMemoryState`` to ``IngestPipeline.process`` and
publish what comes back. Nothing here knows Kafka, an engine or a store; a
record is just (topic, partition, offset, key, value).

Order: NLP runs batched over the whole batch (spaCy's ``pipe`` and MiniLM are
several times faster per item in batches), then review runs record by record
in offset order, so a user's facts are decided in the order they were said.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pipelines.actions import action_facts
from pipelines.review import Reviewer, UserMemoryState
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.events import CrmWebhook, DialogueEvent, InputEvent, UserAction
from schemas.facts import ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Encoding
from schemas.ops import MemoryOperation
from schemas.validate import InvalidEvent, decode_event


@dataclass(frozen=True)
class SourceRecord:
    """One raw message as any engine sees it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass
class IngestResult:
    """What one record produced."""

    record: SourceRecord
    event: InputEvent | None = None
    ops: list[MemoryOperation] = field(default_factory=list)
    dead_letter: DeadLetter | None = None
    facts: list[ExtractedFact] = field(default_factory=list)
    intent: str | None = None

    @property
    def state_key(self) -> str | None:
        return self.event.key if self.event is not None else None


class _Parsed(Protocol):
    @property
    def intent(self) -> str: ...


class Parser(Protocol):
    def parse_batch(self, events: Sequence[DialogueEvent]) -> Sequence[_Parsed]: ...


class Extractor(Protocol):
    def extract_batch(
        self, pairs: Sequence[tuple[DialogueEvent, _Parsed]]
    ) -> Sequence[list[ExtractedFact]]: ...


class FactEncoder(Protocol):
    def encode(self, facts: Sequence[ExtractedFact]) -> list[Encoding]: ...


CrmExtractor = Callable[[CrmWebhook], list[ExtractedFact]]


class IngestPipeline:
    """parse → extract → encode → review → route over a batch of raw records."""

    def __init__(
        self,
        parser: Parser,
        extractor: Extractor,
        crm_extractor: CrmExtractor,
        encoder: FactEncoder,
        reviewer: Reviewer,
    ) -> None:
        """Assemble from loaded stages (jobs load them once per worker)."""
        self.parser = parser
        self.extractor = extractor
        self.crm_extractor = crm_extractor
        self.encoder = encoder
        self.reviewer = reviewer

    def process(
        self,
        records: Sequence[SourceRecord],
        state_for: Callable[[str], UserMemoryState],
    ) -> list[IngestResult]:
        """Run every record; ``state_for(key)`` returns the key's live state object.

        The caller persists the states it handed out after the call (Faust:
        re-assign the table value; Flink: ``state.update``).
        """
        results = [self._decode(r) for r in records]
        self._extract(results)
        encodings = self._encode(results)
        for result in results:
            if result.event is None or result.dead_letter is not None:
                continue
            state = state_for(result.event.key)
            lineage = _lineage(result.record, result.event)
            try:
                result.ops = self._review(state, result, lineage, encodings[id(result)])
            except ValueError as exc:
                # The reviewer leaves the state untouched when it raises, so a
                # poison event is dead-lettered and the batch goes on.
                result.dead_letter = _processing_error(result.record, "review", exc)
        return results

    def _review(
        self,
        state: UserMemoryState,
        result: IngestResult,
        lineage: SourceLineage,
        encodings: list[Encoding | None],
    ) -> list[MemoryOperation]:
        if isinstance(result.event, DialogueEvent):
            return self.reviewer.on_dialogue(
                state, result.event, lineage, result.facts, encodings, intent=result.intent
            )
        assert result.event is not None  # noqa: S101  # dead letters never reach review
        return self.reviewer.apply(state, result.event, lineage, result.facts, encodings)

    # -- steps -------------------------------------------------------------
    @staticmethod
    def _decode(record: SourceRecord) -> IngestResult:
        try:
            return IngestResult(record, event=decode_event(record.topic, record.value))
        except InvalidEvent as exc:
            letter = exc.to_dead_letter(
                record.value,
                record.topic,
                partition=record.partition,
                offset=record.offset,
                key=record.key.decode("utf-8", "replace") if record.key else None,
            )
            return IngestResult(record, dead_letter=letter)

    def _extract(self, results: list[IngestResult]) -> None:
        turns = [r for r in results if isinstance(r.event, DialogueEvent)]
        try:
            self._extract_turns(turns)
        except Exception:
            # Third-party NLP can fail on any input; redo the batch one turn at
            # a time so only the turn that fails is dead-lettered.
            for result in turns:
                try:
                    self._extract_turns([result])
                except Exception as exc:
                    result.dead_letter = _processing_error(result.record, "parse/extract", exc)
        for result in results:
            try:
                if isinstance(result.event, CrmWebhook):
                    result.facts = self.crm_extractor(result.event)
                elif isinstance(result.event, UserAction):
                    result.facts = action_facts(result.event)
            except ValueError as exc:
                result.dead_letter = _processing_error(result.record, "extract", exc)

    def _extract_turns(self, turns: list[IngestResult]) -> None:
        events = [r.event for r in turns if isinstance(r.event, DialogueEvent)]
        parsed = self.parser.parse_batch(events)
        facts = self.extractor.extract_batch(list(zip(events, parsed, strict=True)))
        for result, turn, turn_facts in zip(turns, parsed, facts, strict=True):
            result.facts = list(turn_facts)
            result.intent = turn.intent

    def _encode(self, results: list[IngestResult]) -> Mapping[int, list[Encoding | None]]:
        live = [r for r in results if r.dead_letter is None]
        flat = [f for r in live for f in r.facts]
        vectors = iter(self.encoder.encode(flat))
        return {id(r): [next(vectors) for _ in r.facts] for r in live}


def _processing_error(record: SourceRecord, stage: str, exc: Exception) -> DeadLetter:
    return DeadLetter.wrap(
        record.value,
        reason=DeadLetterReason.PROCESSING_ERROR,
        detail=f"{stage} failed: {type(exc).__name__}: {exc}",
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key.decode("utf-8", "replace") if record.key else None,
        stage=stage,
    )


def _lineage(record: SourceRecord, event: InputEvent) -> SourceLineage:
    turn_id = event.turn_id if isinstance(event, DialogueEvent) else None
    return SourceLineage(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        event_id=event.event_id,
        turn_id=turn_id,
    )
