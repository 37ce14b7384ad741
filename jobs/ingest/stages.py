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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memstream.settings import Settings
from pipelines.errors import StageError
from pipelines.ingest import (
    IngestPipeline,
    IngestResult,
    SourceRecord,
    StageTimer,
    dead_letter,
    untimed,
)
from pipelines.review import Reviewer, UserMemoryState


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
        extractor=FactExtractor.load(parser, learned_path=settings.ingest.learned_extractor),
        crm_extractor=extract_crm,
        encoder=Encoder.load(transe_dir if transe_dir.is_dir() else None),
        reviewer=Reviewer(settings.review, load_rules(settings.review_rules or RULES_FILE)),
        stage_timer=stage_timer,
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
    """Run ``records`` through the pipeline; a record a stage fails on is dead-lettered.

    ``load_state(key)`` reads a key's persisted state (None: a new user). The
    batch runs whole first (NLP is several times faster batched). When a stage
    raises (``StageError``, or any exception outside the stages), every state
    the attempt touched is dropped — they are re-read from the persisted
    copies, which the attempt never wrote — and the records run one by one:
    the failing one becomes a ``processing_error`` dead letter naming its
    stage, the others produce what they would have. The caller persists
    ``Batch.states`` after publishing the results.
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
            letter = dead_letter(record, StageError.of(exc))
            batch.results.append(IngestResult(record, dead_letter=letter))
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
