"""The parse and extract decisions behind a fact, recomputed from its source event.

The ingest job does not record what parse and extract decided (only the review
outcomes travel inside the record), so ``memstream trace`` runs the same pure
stages again on the fetched event. A dialogue turn is extracted in the context
of its session's earlier turns, as the ingest job does from its keyed state;
CRM webhooks and user actions need no parse and no context. The fact is then
matched among what extract yields:

- ``exact``: the candidate's deterministic fact id equals the stored one (same
  chain, event, object and polarity — schemas.ids.fact_id);
- ``triple``: same subject, predicate, object and polarity, another id (e.g. a
  merge kept the earlier version's id);
- ``chain``: same subject and predicate, another value (the stages changed since
  the fact was written, or the value came from an agent's offer);
- ``none``: nothing extracted resembles the fact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pipelines.actions import action_facts
from pipelines.extract import FactExtractor, extract_crm
from pipelines.extract.context import DialogueContext
from pipelines.parse import DialogueParser, ParsedTurn
from schemas.events import CrmWebhook, DialogueEvent, InputEvent, UserAction
from schemas.facts import ExtractedFact
from schemas.hits import SearchHit
from schemas.ids import fact_id


@dataclass(frozen=True)
class NlpStages:
    """The loaded parse and extract stages (spaCy + the project's Flair model)."""

    parser: DialogueParser
    extractor: FactExtractor


# Loading spaCy and Flair takes seconds: a trace of a CRM fact never pays it.
StageLoader = Callable[[], NlpStages]


def load_stages() -> NlpStages:
    """Load the stages as the ingest job does (jobs.ingest.stages.load_pipeline)."""
    parser = DialogueParser.load()
    return NlpStages(parser, FactExtractor.load(parser))


class Match(StrEnum):
    """How the stored fact was found among the recomputed candidates."""

    EXACT = "exact"
    TRIPLE = "triple"
    CHAIN = "chain"
    NONE = "none"


@dataclass(frozen=True)
class Decisions:
    """What parse and extract decide on the source event today (recomputed)."""

    stage_names: list[str]  # the stages that ran: ["parse", "extract"] or ["extract"]
    parsed: ParsedTurn | None  # dialogue turns only
    context_turns: int  # earlier turns of the session replayed as context
    extracted: list[ExtractedFact]
    matched: int | None  # index into ``extracted``
    match: Match

    @property
    def fact(self) -> ExtractedFact | None:
        """The candidate that produced the stored fact, if one matched."""
        return self.extracted[self.matched] if self.matched is not None else None


def match_fact(fact: SearchHit, candidates: Sequence[ExtractedFact]) -> tuple[int | None, Match]:
    """The candidate behind ``fact`` and how closely it matches (best kind first)."""

    def folded(*parts: str) -> tuple[str, ...]:
        return tuple(p.casefold().strip() for p in parts)

    triple = folded(fact.subject, fact.predicate, fact.object, fact.polarity.value)
    tests: list[tuple[Match, Callable[[ExtractedFact], bool]]] = [
        (
            Match.EXACT,
            lambda c: (
                fact_id(fact.chain_id, c.event_id, c.object, c.polarity.value) == fact.fact_id
            ),
        ),
        (
            Match.TRIPLE,
            lambda c: folded(c.subject, c.predicate, c.object, c.polarity.value) == triple,
        ),
        (Match.CHAIN, lambda c: folded(c.subject, c.predicate) == triple[:2]),
    ]
    for kind, test in tests:
        for index, candidate in enumerate(candidates):
            if test(candidate):
                return index, kind
    return None, Match.NONE


def recompute(
    load: StageLoader,
    event: InputEvent,
    context: Sequence[DialogueEvent],
    fact: SearchHit,
) -> Decisions:
    """Run parse/extract on ``event`` (after ``context``, for a turn) and match ``fact``."""
    if isinstance(event, CrmWebhook | UserAction):
        extracted = extract_crm(event) if isinstance(event, CrmWebhook) else action_facts(event)
        index, match = match_fact(fact, extracted)
        return Decisions(["extract"], None, 0, extracted, index, match)
    stages = load()
    turns = [*context, event]
    parsed = stages.parser.parse_batch(turns)
    contexts: dict[str, DialogueContext] = {}
    facts, _ = stages.extractor.extract_in_context(zip(turns, parsed, strict=True), contexts)
    extracted = list(facts[-1])
    index, match = match_fact(fact, extracted)
    return Decisions(["parse", "extract"], parsed[-1], len(context), extracted, index, match)
