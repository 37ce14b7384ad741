"""The ingest stages, loaded once per worker process, and a batch runner that isolates failures.

Both engines (the Faust worker, the PyFlink job) build their pipeline here, so
a model path or a stage's constructor changes in one place:
``load_pipeline(settings, stage_timer=...)`` loads spaCy, the project's Flair
NER, MiniLM and TransE (several seconds: once per process, never per batch),
with every stage timed by the caller's ``StageTimer`` (the engines pass
``jobs.ingest.metrics.time_stage``); ``run_batch(pipeline, records,
load_state)`` runs a batch so that one bad record cannot take the batch, or
the worker, down with it — the one place a stage failure is isolated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstream.settings import Settings
from pipelines.errors import StageError, stage
from pipelines.ingest import (
    IngestPipeline,
    IngestResult,
    SourceRecord,
    StageTimer,
    dead_letter,
    untimed,
)
from pipelines.review import Reviewer, UserMemoryState
from pipelines.route import outputs

# The stages of the checks after the pipeline, as dead letters name them.
SERIALISE = "serialise"  # an output's JSON
CHECKPOINT = "checkpoint"  # the user state, in the engine's encoder

StateEncoder = Callable[[dict[str, Any]], object]
"""The engine's serialiser of a state snapshot: raises where the engine's write would."""


def json_state(snapshot: dict[str, Any]) -> str:
    """A snapshot as compact JSON text (the Flink job's ValueState holds it)."""
    return json.dumps(snapshot, separators=(",", ":"))


def learned_model(settings: Settings) -> Path | None:
    """The learned tagger the extractor loads: None with ``ingest.extractor = "rules"``."""
    from pipelines.extract.learned.model import MODEL_PATH

    if settings.ingest.extractor == "rules":
        return None
    return settings.ingest.learned_extractor or MODEL_PATH


def load_pipeline(settings: Settings, *, stage_timer: StageTimer = untimed) -> IngestPipeline:
    """Load every stage once and compose them (parse → extract → encode → review → route)."""
    # Imported here: each pulls in spaCy, Flair or torch (seconds), which the
    # CLI's --help and the engines' start-up checks should not wait for.
    import torch

    from pipelines.encode import Encoder
    from pipelines.extract import FactExtractor, extract_crm
    from pipelines.parse import DialogueParser
    from pipelines.review import load_rules
    from pipelines.review.rules import RULES_FILE

    torch.set_num_threads(settings.ingest.torch_threads)
    parser = DialogueParser.load()
    transe_dir = settings.transe_model_dir
    return IngestPipeline(
        parser=parser,
        # Shares the parser's spaCy pipeline.
        extractor=FactExtractor.load(parser, learned_path=learned_model(settings)),
        crm_extractor=extract_crm,
        encoder=Encoder.load(transe_dir if transe_dir.is_dir() else None),
        reviewer=Reviewer(settings.review, load_rules(settings.review_rules or RULES_FILE)),
        stage_timer=stage_timer,
        triggers=settings.triggers,
        behaviour=settings.behaviour,
    )


@dataclass(frozen=True)
class Message:
    """One serialised output: a base topic name, its key and its bytes."""

    topic: str
    key: bytes | None
    value: bytes


@dataclass
class Batch:
    """A processed batch: one result per record, and every state it touched."""

    results: list[IngestResult]
    states: dict[str, UserMemoryState] = field(default_factory=dict)
    isolated: bool = False  # the batch failed as a whole and ran record by record
    # Each state's counters (review, behaviour_*, trigger_*) when it was loaded.
    counters_at_load: dict[str, dict[str, int]] = field(default_factory=dict)
    # Filled by run_batch once everything serialised: per result, its messages;
    # per touched state, its snapshot and the engine's encoding of it. The
    # engines publish and store these, never a fresh serialisation.
    messages: list[list[Message]] = field(default_factory=list)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    encoded: dict[str, object] = field(default_factory=dict)

    def counted(self, name: str) -> int:
        """What the batch added to counter ``name`` over its states (``all_counters``)."""
        return sum(
            state.all_counters().get(name, 0) - self.counters_at_load[key].get(name, 0)
            for key, state in self.states.items()
        )


def run_batch(
    pipeline: IngestPipeline,
    records: Sequence[SourceRecord],
    load_state: Callable[[str], UserMemoryState | None],
    encode_state: StateEncoder = json_state,
) -> Batch:
    """Run ``records`` through the pipeline; a record that fails anywhere is dead-lettered.

    ``load_state(key)`` reads a key's persisted state (None: a new user);
    ``encode_state`` is the engine's state serialiser. The batch runs whole
    first (NLP is several times faster batched), then every output and every
    touched state is serialised. When anything raises (a ``StageError``, an
    exception outside the stages, an output or a state that does not
    serialise), every state the attempt touched is dropped — they are
    re-read from the persisted copies, which the attempt never wrote — and
    the records run one by one, each checked the same way: the failing one
    becomes a ``processing_error`` dead letter naming its stage (``serialise``
    or ``checkpoint`` for the checks), its states go back to what they were
    before it, and the others produce what they would have. The caller
    publishes ``Batch.messages`` and then persists ``Batch.snapshots`` (or
    ``Batch.encoded``).
    """
    batch = Batch(results=[])
    try:
        batch.results = pipeline.process(records, _state_source(pipeline, load_state, batch))
        batch.messages = [_serialised(r) for r in batch.results]
        _checkpointed(batch, batch.states, encode_state)
        return batch
    except Exception:  # any failure; the record-by-record pass finds the culprit
        batch = Batch(results=[], isolated=True)
    state_for = _state_source(pipeline, load_state, batch)
    for record in records:
        before: dict[str, dict[str, Any]] = {}  # the states this record touches, as they were
        state_of_record = _remembering(state_for, before)
        try:
            results = pipeline.process([record], state_of_record)
            messages = [_serialised(r) for r in results]
            _checkpointed(batch, {k: batch.states[k] for k in before}, encode_state)
        except Exception as exc:  # review rolls its own state back; this rolls back the rest
            for key, snapshot in before.items():
                batch.states[key] = UserMemoryState.restore(snapshot)
                batch.snapshots.pop(key, None)
                batch.encoded.pop(key, None)
            letter = dead_letter(record, StageError.of(exc))
            results = [IngestResult(record, dead_letter=letter)]
            messages = [_serialised(r) for r in results]
        batch.results += results
        batch.messages += messages
    # A state rolled back after a failure: as a record before it left it, or as loaded.
    unencoded = {k: state for k, state in batch.states.items() if k not in batch.encoded}
    _checkpointed(batch, unencoded, encode_state)
    return batch


def _remembering(
    state_for: Callable[[str], UserMemoryState], before: dict[str, dict[str, Any]]
) -> Callable[[str], UserMemoryState]:
    """``state_for`` that first copies each state it hands out into ``before``."""

    def state_of_record(key: str) -> UserMemoryState:
        state = state_for(key)
        if key not in before:
            # A deep copy: a snapshot shares nested dicts with the live state.
            before[key] = json.loads(json_state(state.snapshot()))
        return state

    return state_of_record


def _serialised(result: IngestResult) -> list[Message]:
    with stage(SERIALISE):
        return [
            Message(out.topic, out.key, out.value())
            for out in outputs(result.ops, result.dead_letter)
        ]


def _checkpointed(
    batch: Batch, states: dict[str, UserMemoryState], encode_state: StateEncoder
) -> None:
    with stage(CHECKPOINT):
        for key, state in states.items():
            snapshot = state.snapshot()
            batch.encoded[key] = encode_state(snapshot)
            batch.snapshots[key] = snapshot


def _state_source(
    pipeline: IngestPipeline,
    load_state: Callable[[str], UserMemoryState | None],
    batch: Batch,
) -> Callable[[str], UserMemoryState]:
    def state_for(key: str) -> UserMemoryState:
        state = batch.states.get(key)
        if state is None:
            state = load_state(key) or pipeline.reviewer.new_state()
            batch.states[key] = state
            batch.counters_at_load[key] = state.all_counters()
        return state

    return state_for
