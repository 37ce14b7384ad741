"""The ingest stages, loaded once per worker process, and a batch runner that isolates failures.

Both engines (the Faust worker, the PyFlink job) build their pipeline here, so
a model path or a stage's constructor changes in one place:
``load_pipeline(settings)`` loads spaCy, the project's Flair NER, MiniLM and
TransE (several seconds: once per process, never per batch), with every stage timed
into ``jobs.ingest.metrics``; ``run_batch(pipeline, records, load_state)``
runs a batch so that one bad record cannot take the batch, or the worker, down
with it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pipelines
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, IngestResult, SourceRecord
from pipelines.review import Reviewer, UserMemoryState
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.ops import OpType

# Ops the pending-queue consumers (HITL tooling) need besides the sink: both
# engines also send these to memory.pending.
PENDING_OPS = frozenset({OpType.ADD_PENDING, OpType.RESOLVE_PENDING})
_PIPELINES_ROOT = Path(pipelines.__file__).resolve().parent
# Stage names as dead letters report them, by the pipelines/ sub-package (or
# module) an exception was raised in. ner is the Flair model behind extract.
_STAGE_OF_PACKAGE = {
    "parse": "parse",
    "extract": "extract",
    "ner": "extract",
    "actions": "extract",
    "encode": "encode",
    "review": "review",
    "route": "route",
}


def load_pipeline(settings: Settings) -> IngestPipeline:
    """Load every stage once and compose them (parse → extract → encode → review → route)."""
    # Imported here: each pulls in spaCy, Flair or torch (seconds), which the
    # CLI's --help and the engines' start-up checks should not wait for.
    import torch

    from jobs.ingest.metrics import time_stage
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
        extractor=FactExtractor.load(parser),  # shares the parser's spaCy pipeline
        crm_extractor=extract_crm,
        encoder=Encoder.load(transe_dir if transe_dir.is_dir() else None),
        reviewer=Reviewer(settings.review, load_rules(settings.review_rules or RULES_FILE)),
        stage_timer=time_stage,
    )


@dataclass
class Batch:
    """A processed batch: one result per record, and every state it touched."""

    results: list[IngestResult]
    states: dict[str, UserMemoryState] = field(default_factory=dict)
    isolated: bool = False  # the batch failed as a whole and ran record by record
    # Each state's review counters (skipped, pending, ...) when it was loaded.
    counters_at_load: dict[str, dict[str, int]] = field(default_factory=dict)

    def counted(self, name: str) -> int:
        """How much the batch added to the review counter ``name`` over all its states."""
        return sum(
            state.counters.get(name, 0) - self.counters_at_load[key].get(name, 0)
            for key, state in self.states.items()
        )


def run_batch(
    pipeline: IngestPipeline,
    records: Sequence[SourceRecord],
    load_state: Callable[[str], UserMemoryState | None],
) -> Batch:
    """Run ``records`` through the pipeline; a record whose stage raises is dead-lettered.

    ``IngestPipeline`` already dead-letters a turn the NLP stages fail on and
    a review ``ValueError``; this catches what still escapes it (an encoder
    error, any other exception type), which would otherwise fail the batch.
    ``load_state(key)`` reads a key's persisted state (None: a new user). The
    batch runs whole first (NLP is several times faster batched). When it
    raises, every state the attempt touched is dropped — they are re-read from
    the persisted copies, which the attempt never wrote — and the records run
    one by one: the failing one becomes a ``processing_error`` dead letter
    naming its stage, the others produce what they would have. The caller
    persists ``Batch.states`` after publishing the results.
    """
    batch = Batch(results=[])
    try:
        batch.results = pipeline.process(records, _state_source(pipeline, load_state, batch))
        return batch
    except Exception:  # any stage error; the record-by-record pass finds the culprit
        batch = Batch(results=[], isolated=True)
    state_for = _state_source(pipeline, load_state, batch)
    for record in records:
        try:
            batch.results += pipeline.process([record], state_for)
        except Exception as exc:  # review rolled its state back; earlier stages touch none
            batch.results.append(IngestResult(record, dead_letter=_processing_error(record, exc)))
    return batch


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
            batch.counters_at_load[key] = dict(state.counters)
        return state

    return state_for


def _processing_error(record: SourceRecord, exc: Exception) -> DeadLetter:
    stage = failed_stage(exc)
    return DeadLetter.wrap(
        record.value,
        reason=DeadLetterReason.PROCESSING_ERROR,
        detail=f"{stage} failed: {type(exc).__name__}: {exc}",  # IngestPipeline's wording
        errors=traceback.format_exception_only(exc),
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key.decode("utf-8", "replace") if record.key is not None else None,
        stage=stage,
    )


def failed_stage(exc: BaseException) -> str:
    """The stage an exception came from: the innermost pipelines/ package in its traceback."""
    stage = "ingest"
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(_PIPELINES_ROOT):
            name = path.relative_to(_PIPELINES_ROOT).parts[0].removesuffix(".py")
            stage = _STAGE_OF_PACKAGE.get(name, stage)
    return stage
