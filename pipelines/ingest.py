"""The ingest stages composed: raw Kafka records in, memory operations out.

Engine-agnostic: the Faust worker and the PyFlink job both hand a batch of raw
records plus each key's ``UserMemoryState`` to ``IngestPipeline.process`` and
publish what comes back. Nothing here knows Kafka, an engine or a store; a
record is just (topic, partition, offset, key, value).

Order: NLP runs batched over the whole batch (spaCy's ``pipe``, Flair and
MiniLM are several times faster per item in batches), then review runs record
by record in offset order, so a user's facts are decided in the order they
were said. The extract stage's per-session turn context lives in the user's
keyed state beside the review state, so the result never depends on how an
engine batches records (Flink hands over one at a time, Faust dozens).

Failures: a record that does not validate becomes a dead letter here (its
reason says why). A stage that raises — third-party NLP can fail on any input,
a review rule can refuse an event — makes ``process`` raise
``StageError(stage)`` (``pipelines.errors``); the caller (``run_batch`` in
``jobs.ingest.stages``, the one place failures are isolated) re-runs the batch
record by record and turns the failing record's error into its dead letter
with ``dead_letter(record, error)``.

Timing: an optional ``StageTimer`` wraps each stage's work (``parse``,
``extract``, ``encode``, ``review``) in a context manager of the caller's, so a
job can measure stage latency without this module reading a clock or knowing
a metrics library. The default does nothing.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pipelines import speakers
from pipelines.actions import action_facts
from pipelines.behaviour import BehaviourConfig, BehaviourItem, Observation, observe
from pipelines.behaviour.admit import Admitted, admit
from pipelines.episodes import episode_ops, search_episode_ops
from pipelines.errors import StageError, stage
from pipelines.extract import FactExtractor
from pipelines.extract.context import DialogueContext
from pipelines.parse import DialogueParser
from pipelines.parse.model import ParsedTurn
from pipelines.review import Reviewer, UserMemoryState
from pipelines.review.observed import current_behaviour
from pipelines.route import RequestHint, route
from pipelines.triggers import TriggerConfig, TriggerDecision, TriggerTurn, decide
from pipelines.triggers.hints import hint_request
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.events import ActionType, CrmWebhook, DialogueEvent, InputEvent, UserAction
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
    # The broker's timestamp of the record, or when the engine read it: where
    # the ingest latency starts (the event's own ``ts`` may be any time).
    read_at: datetime | None = None


@dataclass
class IngestResult:
    """What one record produced."""

    record: SourceRecord
    event: InputEvent | None = None
    ops: list[MemoryOperation] = field(default_factory=list)
    dead_letter: DeadLetter | None = None
    facts: list[ExtractedFact] = field(default_factory=list)
    intent: str | None = None
    replayed: bool = False  # applied before (offset at or below the state's): skipped
    parsed: ParsedTurn | None = None  # a dialogue turn's parse (the triggers read it)
    trigger: TriggerDecision | None = None  # a dialogue turn's retrieval-trigger decision
    behaviour: Observation | None = None  # what the behaviour window made of an action
    search_query: str | None = None  # a search action's query, as the window reads it
    speaker: str | None = None  # the name a turn is keyed with (pipelines/speakers.py)

    @property
    def state_key(self) -> str | None:
        return self.event.key if self.event is not None else None

    @property
    def items(self) -> tuple[BehaviourItem, ...]:
        """The behaviour items the action completed (reviewed after its facts)."""
        return self.behaviour.items if self.behaviour is not None else ()


class FactEncoder(Protocol):
    def encode_with_texts(
        self, facts: Sequence[ExtractedFact], texts: Sequence[str]
    ) -> tuple[Sequence[Encoding | None], list[list[float]]]:
        """The facts' encodings and the texts' MiniLM vectors (one forward pass)."""
        ...


CrmExtractor = Callable[[CrmWebhook], list[ExtractedFact]]


class StageTimer(Protocol):
    """Wraps one stage's work: ``with timer("parse"): ...`` (stages: module docstring)."""

    def __call__(self, stage: str) -> AbstractContextManager[object]: ...


def untimed(stage: str) -> AbstractContextManager[object]:
    """The default StageTimer: measures nothing."""
    return nullcontext()


class IngestPipeline:
    """parse → extract → encode → review → route over a batch of raw records."""

    def __init__(
        self,
        parser: DialogueParser,
        extractor: FactExtractor,
        crm_extractor: CrmExtractor,
        encoder: FactEncoder,
        reviewer: Reviewer,
        stage_timer: StageTimer = untimed,
        episodes: bool = True,
        triggers: TriggerConfig | None = None,
        behaviour: BehaviourConfig | None = None,
    ) -> None:
        """Assemble from loaded stages (jobs load them once per worker).

        ``triggers`` and ``behaviour`` configure the predictive stages (their
        defaults: ``TriggerConfig()``, ``BehaviourConfig()``); both always run,
        over state kept in the user's ``UserMemoryState``.
        """
        self.parser = parser
        self.extractor = extractor
        self.crm_extractor = crm_extractor
        self.encoder = encoder
        self.reviewer = reviewer
        self.stage_timer = stage_timer
        # Every content-bearing turn kept whole in episodic memory (pipelines/episodes.py).
        self.episodes = episodes
        self.triggers = triggers or TriggerConfig()
        self.behaviour = behaviour or BehaviourConfig()

    def process(
        self,
        records: Sequence[SourceRecord],
        state_for: Callable[[str], UserMemoryState],
    ) -> list[IngestResult]:
        """Run every record; ``state_for(key)`` returns the key's live state object.

        The caller persists the states it handed out after the call (Faust:
        re-assign the table value; Flink: ``state.update``). Raises
        ``StageError`` when a stage fails; the states handed out may then be
        part-way through the batch and must be dropped (``run_batch`` does).
        """
        results = [self._decode(r) for r in records]
        for result in results:
            if result.event is not None:
                lineage = _lineage(result.record, result.event)
                result.replayed = state_for(result.event.key).already_applied(lineage)
        self._extract(results, state_for)
        encodings, turn_vectors = self._encode(results)
        for result in results:
            if result.event is None or result.dead_letter is not None or result.replayed:
                continue
            state = state_for(result.event.key)
            lineage = _lineage(result.record, result.event)
            with stage("review"), self.stage_timer("review"):
                result.ops = self._review(state, result, lineage, encodings[id(result)])
            vector = turn_vectors.get(id(result))
            if isinstance(result.event, DialogueEvent):
                if self.episodes:
                    with stage("episodes"):
                        result.ops += episode_ops(
                            state,
                            result.event,
                            lineage,
                            result.ops,
                            intent=result.intent,
                            vector=vector,
                            speaker=result.speaker,
                        )
                with stage("triggers"):
                    result.ops += self._trigger(state, result, result.event, lineage, vector)
            elif (
                isinstance(result.event, UserAction)
                and self.episodes
                and result.search_query is not None
            ):
                with stage("episodes"):
                    result.ops += search_episode_ops(
                        result.event, lineage, result.search_query, result.ops, vector=vector
                    )
        return results

    def _trigger(
        self,
        state: UserMemoryState,
        result: IngestResult,
        event: DialogueEvent,
        lineage: SourceLineage,
        vector: Sequence[float] | None,
    ) -> list[MemoryOperation]:
        """Decide the turn's trigger (after its own review); a fired one requests a hint."""
        if result.parsed is None:
            return []
        turn = TriggerTurn.from_parsed(result.parsed, event.text, vector)
        result.trigger = decide(state.triggers, turn, self.triggers)
        if not result.trigger.triggered:
            return []
        request = hint_request(result.trigger, event, current_behaviour(state, event.ts))
        at = result.ops[0].at if result.ops else event.ts
        return route(
            [RequestHint(request)],
            tenant_id=event.tenant_id,
            user_id=event.user_id,
            lineage=lineage,
            at=at,
            first_index=len(result.ops),
        )

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
        # An action's own facts come first, then its behaviour items (encoded after them).
        facts = len(result.facts)
        observed = list(zip(result.items, encodings[facts:], strict=True))
        clamps = result.behaviour.reasons if result.behaviour is not None else ()
        return self.reviewer.apply(
            state,
            result.event,
            lineage,
            result.facts,
            encodings[:facts],
            observed=observed,
            clamps=clamps,
        )

    def _timed(self, stage: str, items: int) -> AbstractContextManager[object]:
        """The stage timer, for a call with work to do (an empty call is no latency)."""
        return self.stage_timer(stage) if items else nullcontext()

    # -- steps -------------------------------------------------------------
    @staticmethod
    def _decode(record: SourceRecord) -> IngestResult:
        try:
            return IngestResult(record, event=decode_event(record.topic, record.value))
        except InvalidEvent as exc:
            return IngestResult(record, dead_letter=dead_letter(record, exc))

    def _extract(
        self, results: list[IngestResult], state_for: Callable[[str], UserMemoryState]
    ) -> None:
        turns = [r for r in results if isinstance(r.event, DialogueEvent) and not r.replayed]
        self._extract_turns(turns, state_for)
        for result in results:
            if result.replayed:
                continue
            with stage("extract"):
                if isinstance(result.event, CrmWebhook):
                    result.facts = self.crm_extractor(result.event)
                elif isinstance(result.event, UserAction):
                    result.facts = action_facts(result.event)
            if isinstance(result.event, UserAction):
                with stage("behaviour"):
                    self._observe(result, result.event, state_for(result.event.key))

    def _observe(self, result: IngestResult, action: UserAction, state: UserMemoryState) -> None:
        """Count the action in the user's behaviour window (erasure is the review's)."""
        if action.action_type is ActionType.FORGET_USER:
            return  # state.forget() empties the window with everything else
        result.behaviour = observe(state.behaviour, action, self.behaviour)
        if action.action_type is ActionType.SEARCH:
            admitted = admit(action, self.behaviour)
            if isinstance(admitted, Admitted):
                result.search_query = admitted.query

    def _extract_turns(
        self, turns: list[IngestResult], state_for: Callable[[str], UserMemoryState]
    ) -> None:
        events = [r.event for r in turns if isinstance(r.event, DialogueEvent)]
        with stage("parse"), self._timed("parse", len(events)):
            parsed = self.parser.parse_batch(events)
        for result, turn in zip(turns, parsed, strict=True):
            result.intent = turn.intent
            result.parsed = turn
        # Turn context is per user and session: extract each user's turns (in
        # offset order) against that user's contexts. Contexts are committed to
        # the state only after every user's turns were extracted, so a failure
        # leaves the contexts as they were.
        by_user: dict[str, list[int]] = {}
        for i, event in enumerate(events):
            by_user.setdefault(event.key, []).append(i)
        updates: list[tuple[UserMemoryState, dict[str, DialogueContext]]] = []
        for key, rows in by_user.items():
            state = state_for(key)
            with stage("speakers"):
                for i in rows:
                    speakers.observe(state.speakers, events[i].role, events[i].text)
                    turns[i].speaker = speakers.speaker_key(state.speakers, events[i].role)
            with stage("extract"), self.stage_timer("extract"):
                contexts = {s: DialogueContext.model_validate(c) for s, c in state.dialogue.items()}
                facts, updated = self.extractor.extract_in_context(
                    [(events[i], parsed[i]) for i in rows], contexts
                )
            for i, turn_facts in zip(rows, facts, strict=True):
                turns[i].facts = list(turn_facts)
            # Ordered (not a set): the state keeps sessions in LRU order.
            touched = dict.fromkeys(events[i].session_id for i in rows)
            updates.append((state, {s: updated[s] for s in touched if s in updated}))
        for state, changed in updates:
            for session, context in changed.items():
                state.put_dialogue(session, context.model_dump(mode="json"))

    def _encode(
        self, results: list[IngestResult]
    ) -> tuple[Mapping[int, list[Encoding | None]], Mapping[int, list[float]]]:
        """Each result's fact encodings, and each turn's MiniLM vector (for its episode)."""
        live = [r for r in results if r.dead_letter is None and not r.replayed]
        # Each result's facts, then its behaviour items' facts (``_review`` splits them).
        flat = [f for r in live for f in (*r.facts, *(i.fact for i in r.items))]
        turns = [r for r in live if _text_of(r).strip()] if self.episodes else []
        texts = [_text_of(r) for r in turns]
        with stage("encode"):
            with self._timed("encode", len(flat) + len(texts)):
                encoded, turn_vectors = self.encoder.encode_with_texts(flat, texts)
            vectors = iter(encoded)
            facts = {id(r): [next(vectors) for _ in (*r.facts, *r.items)] for r in live}
            return facts, {id(r): v for r, v in zip(turns, turn_vectors, strict=True)}


def _text_of(result: IngestResult) -> str:
    """What an episode keeps whole: a turn's text, a search's query; else nothing."""
    if isinstance(result.event, DialogueEvent):
        return speakers.keyed(result.speaker, result.event.text)
    return result.search_query or ""


def dead_letter(record: SourceRecord, error: InvalidEvent | StageError) -> DeadLetter:
    """The dead letter of a record: it did not validate, or a stage failed on it.

    The one builder of the ingest job's dead letters: the record's coordinates
    and key, the reason, and — for a stage failure — the stage the
    ``StageError`` names (never a file path) and the exception's one-line form.
    """
    if isinstance(error, InvalidEvent):
        reason, detail, errors, stage_name = error.reason, error.detail, error.errors, "validate"
    else:
        reason, detail = DeadLetterReason.PROCESSING_ERROR, str(error)  # "<stage> failed: ..."
        errors, stage_name = traceback.format_exception_only(error.cause), error.stage
    return DeadLetter.wrap(
        record.value,
        reason=reason,
        detail=detail,
        errors=errors,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key.decode("utf-8", "replace") if record.key else None,
        stage=stage_name,
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
