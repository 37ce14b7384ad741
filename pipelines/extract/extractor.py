"""The extract stage: triples with polarity, kind and confidence from parsed turns."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipelines.extract import vocabulary as vocab
from pipelines.extract.candidates import (
    Candidate,
    dependency_candidates,
    lexicon_candidates,
    ner_candidates,
)
from pipelines.extract.polarity import SPAN_KEY, build_negex, is_hedged, is_negated
from pipelines.extract.spans import gazetteer_times
from pipelines.ner.tagger import MODEL_PATH, NerTagger
from pipelines.parse.model import Intent, ParsedTurn
from pipelines.parse.parser import DialogueParser
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span
from schemas.memory import MemoryKind, Polarity

SUBJECT = "user"
# Confidence levels against the review gate (commit >= 0.82, pending >= 0.55):
# a plain statement with an explicit topic cue commits; a time whose topic had to
# be guessed (no cue, fallback predicate) still commits but ranks below; a hedged
# statement lands in pending and is never committed without a confirmation.
CONFIDENCE_STATED = 0.9
CONFIDENCE_GUESSED_TOPIC = 0.84
CONFIDENCE_HEDGED = 0.6
# Sentences with these acts state no facts (questions, cancellations, chit-chat).
NO_FACT_ACTS = frozenset({Intent.CHIT_CHAT, Intent.INQUIRY, Intent.CANCEL_REQUEST, Intent.UNKNOWN})
ASSERTORS = {Role.USER: Assertor.USER, Role.AGENT: Assertor.AGENT, Role.SYSTEM: Assertor.SYSTEM}


class FactExtractor:
    """spaCy + the project's Flair tagger + rules -> ``ExtractedFact`` lists."""

    def __init__(self, parser: DialogueParser, tagger: NerTagger) -> None:
        """Share the parser's spaCy pipeline; ``tagger`` is the loaded Flair model."""
        self.parser = parser
        self.tagger = tagger
        self.negex = build_negex(parser.nlp)

    @classmethod
    def load(
        cls, parser: DialogueParser | None = None, model_path: Path = MODEL_PATH
    ) -> FactExtractor:
        """Load spaCy (unless a parser is given) and the committed NER model."""
        return cls(parser or DialogueParser.load(), NerTagger.load(model_path))

    def extract(self, event: DialogueEvent, parsed: ParsedTurn) -> list[ExtractedFact]:
        """Facts stated in one turn (agent facts are marked ``asserted_by=agent``)."""
        return self.extract_batch([(event, parsed)])[0]

    def extract_batch(
        self, pairs: Iterable[tuple[DialogueEvent, ParsedTurn]]
    ) -> list[list[ExtractedFact]]:
        """Facts per turn; all sentences of the batch go through Flair together."""
        pairs = list(pairs)
        work: list[tuple[int, Any, Any]] = []  # (pair index, doc, sentence)
        for i, (event, parsed) in enumerate(pairs):
            if parsed.is_chit_chat or not parsed.lang.startswith("en"):
                continue
            doc = parsed.doc if parsed.doc is not None else self.parser.nlp(event.text)
            acts = [s.intent for s in parsed.sentences]
            # The parser keeps the non-blank sentences; pair them with their acts.
            sentences = [sent for sent in doc.sents if sent.text.strip()]
            for sent, act in zip(sentences, acts, strict=True):
                if act not in NO_FACT_ACTS:
                    work.append((i, doc, sent))
        tagged = self.tagger.predict(
            [[t.text for t in sent if not t.is_space] for _, _, sent in work]
        )
        per_doc: dict[int, list[tuple[Any, list[Candidate], list[Any]]]] = {}
        for (i, doc, sent), spans in zip(work, tagged, strict=True):
            tokens = [t for t in sent if not t.is_space]
            ner = [
                doc[tokens[s.start].i : tokens[s.end - 1].i + 1]
                for s in spans
                if s.end <= len(tokens)
            ]
            for span, s in zip(ner, spans, strict=False):
                span.label_ = s.label
            ner += gazetteer_times(sent, ner)
            found = list(ner_candidates(sent, ner, pairs[i][0].role is Role.AGENT))
            found += lexicon_candidates(sent, pairs[i][0].role is Role.AGENT)
            found += dependency_candidates(sent)
            per_doc.setdefault(i, []).append((sent, _dedupe(found), ner))
        results: list[list[ExtractedFact]] = [[] for _ in pairs]
        for i, sentences in per_doc.items():
            event, parsed = pairs[i]
            doc = sentences[0][0].doc
            doc.spans[SPAN_KEY] = [c.span for _, found, _ in sentences for c in found]
            self.negex(doc)
            update = any(s.intent is Intent.CORRECTION for s in parsed.sentences)
            for sent, found, ner in sentences:
                results[i].extend(self._facts(event, parsed, sent, found, ner, update))
        return results

    def _facts(
        self,
        event: DialogueEvent,
        parsed: ParsedTurn,
        sent: Any,
        found: list[Candidate],
        ner: list[Any],
        update: bool,
    ) -> list[ExtractedFact]:
        hedged = is_hedged(sent.text)
        committed = any(span.label_ == "COMMITMENT" for span in ner)
        entities = [
            Span(label=s.label_, text=s.text, start=s.start_char, end=s.end_char) for s in ner
        ]
        facts = []
        for cand in found:
            negated = is_negated(cand.span) != cand.reverse
            polarity = Polarity.NEGATED if negated else Polarity.AFFIRMED
            if hedged:
                confidence = CONFIDENCE_HEDGED
            else:
                confidence = CONFIDENCE_STATED if cand.explicit else CONFIDENCE_GUESSED_TOPIC
            kind = vocab.PREDICATES[cand.predicate]
            if negated and cand.predicate in vocab.RULE_WHEN_NEGATED:
                kind = MemoryKind.RULE
            elif committed:
                kind = MemoryKind.COMMITMENT
            facts.append(
                ExtractedFact(
                    tenant_id=event.tenant_id,
                    user_id=event.user_id,
                    session_id=event.session_id,
                    event_id=event.event_id,
                    event_ts=event.ts,
                    subject=SUBJECT,
                    predicate=cand.predicate,
                    object=cand.value,
                    polarity=polarity,
                    kind=kind,
                    confidence=confidence,
                    text=f"{cand.predicate} {'NOT ' if negated else ''}{cand.value}",
                    intent=parsed.intent.value,
                    asserted_by=ASSERTORS[event.role],
                    hedged=hedged,
                    is_update=update,
                    source_span=Span(
                        label="SENTENCE", text=sent.text, start=sent.start_char, end=sent.end_char
                    ),
                    entities=entities,
                    fields={cand.field: cand.value},
                )
            )
        return facts


def _dedupe(found: list[Candidate]) -> list[Candidate]:
    """One candidate per (predicate, value): the same object can match two rules."""
    seen: dict[tuple[str, str], Candidate] = {}
    for cand in found:
        seen.setdefault((cand.predicate, cand.value), cand)
    return list(seen.values())
