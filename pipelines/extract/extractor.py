"""The extract stage: triples with polarity, kind and confidence from parsed turns."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.extract.budgets import stated_budgets
from pipelines.extract.candidates import (
    Candidate,
    TopicHints,
    dependency_candidates,
    lexicon_candidates,
    ner_candidates,
)
from pipelines.extract.context import (
    LAST_TEXT_CHARS,
    DialogueContext,
    OfferedFact,
    advance,
    is_affirmation,
    is_refusal,
    new_session,
    offered_form,
    turn_topic,
)
from pipelines.extract.dislikes import stated_dislikes
from pipelines.extract.endings import endings
from pipelines.extract.events import answered_events, dated_events, moved_events
from pipelines.extract.extras import offered_extras
from pipelines.extract.fragments import evaluation_candidates, fragment_candidates
from pipelines.extract.heads import singular_head
from pipelines.extract.hometown import hometowns
from pipelines.extract.learned.facts import SURE_TAG_SCORE, combine, learned_fact
from pipelines.extract.moments import one_moment
from pipelines.extract.moves import move_plans
from pipelines.extract.naming import (
    named_as_held,
    named_beside,
    named_by_pronoun,
    named_by_question,
    named_pets,
    named_when_asked,
)
from pipelines.extract.picks import picked_offers
from pipelines.extract.plans import completed_plans
from pipelines.extract.polarity import (
    HEDGES,
    SPAN_KEY,
    answers_unsure,
    build_negex,
    dependency_negated,
    is_conditional,
    is_hedged,
    is_negated,
    is_update,
    presupposed,
)
from pipelines.extract.possession import (
    last_question,
    named_in_answer,
    names_someone_else,
    users_own,
)
from pipelines.extract.proper_names import whole_names
from pipelines.extract.restated import asked_after
from pipelines.extract.scope import describes_offering, on_the_way, tells_of_the_past
from pipelines.extract.spans import (
    clean_tagger_spans,
    is_time_core,
    with_gazetteer_phones,
    with_gazetteer_places,
    with_gazetteer_times,
)
from pipelines.extract.staff import with_staff
from pipelines.extract.typed import typed
from pipelines.extract.visits import as_visits
from pipelines.ner.tagger import MODEL_PATH, NerTagger
from pipelines.parse.model import Intent, ParsedTurn
from pipelines.parse.parser import DialogueParser, parsed_head
from pipelines.vocabulary import TIME_TYPES, Negation, default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span, origin, statement
from schemas.memory import MemoryKind, Polarity

if TYPE_CHECKING:
    from pipelines.extract.learned.model import LearnedExtractor
    from pipelines.extract.learned.tagging import LearnedTriple

SUBJECT = "user"
# Confidence levels against the review gate (commit >= 0.82, pending >= 0.55):
# a plain statement with an explicit topic cue commits; a time whose topic had to
# be guessed (no cue, fallback predicate) still commits but ranks below; a hedged
# statement lands in pending and is never committed without a confirmation.
CONFIDENCE_STATED = 0.9
CONFIDENCE_GUESSED_TOPIC = 0.84
CONFIDENCE_HEDGED = 0.6
# The user said yes to the agent's concrete offer: as good as stating it, but the
# object came from the agent's words, so it ranks just under a stated fact.
CONFIDENCE_CONFIRMED = 0.86
# Sentences with these acts state no facts (questions, cancellations, chit-chat).
NO_FACT_ACTS = frozenset({Intent.CHIT_CHAT, Intent.INQUIRY, Intent.CANCEL_REQUEST, Intent.UNKNOWN})
# A question for information, unlike an offer ("How about Friday?", "Friday?").
WH_QUESTION = re.compile(
    r"^\W*(?:(?:and|so|but|also|ok|okay)\W+)*(?:what|which|when|where|who|why|how)\b(?! about)",
    re.IGNORECASE,
)
# A user question that restates an earlier fact rather than asking.
RESTATING_QUESTION = re.compile(
    r"^\W*(?:(?:hi|hiya|hello|hey|oh|so|and|also)\W+)*(?:remember|as i said|as i told you"
    r"|like i said)\b",
    re.IGNORECASE,
)
ASSERTORS = {Role.USER: Assertor.USER, Role.AGENT: Assertor.AGENT, Role.SYSTEM: Assertor.SYSTEM}


class FactExtractor:
    """spaCy + the project's Flair tagger + rules (+ the learned tagger) -> ``ExtractedFact``s.

    With a ``learned`` extractor (pipelines/extract/learned), its typed triples,
    read in their sentences for negation and hedges, join the rules' facts
    (``combine`` in pipelines/extract/learned/facts.py).
    """

    def __init__(
        self, parser: DialogueParser, tagger: NerTagger, learned: LearnedExtractor | None = None
    ) -> None:
        """Share the parser's spaCy pipeline; ``tagger`` is the loaded Flair NER model."""
        self.parser = parser
        self.tagger = tagger
        self.learned = learned
        self.negex = build_negex(parser.nlp)

    @classmethod
    def load(
        cls,
        parser: DialogueParser | None = None,
        model_path: Path = MODEL_PATH,
        learned_path: Path | None = None,
    ) -> FactExtractor:
        """Load spaCy (unless a parser is given), the NER model and, if given, the learned one."""
        learned = None
        if learned_path is not None:
            from pipelines.extract.learned.model import LearnedExtractor

            learned = LearnedExtractor.load(learned_path)
        return cls(parser or DialogueParser.load(), NerTagger.load(model_path), learned)

    def extract(self, event: DialogueEvent, parsed: ParsedTurn) -> list[ExtractedFact]:
        """Facts stated in one turn (agent facts are marked ``asserted_by=agent``)."""
        return self.extract_batch([(event, parsed)])[0]

    def extract_batch(
        self, pairs: Iterable[tuple[DialogueEvent, ParsedTurn]]
    ) -> list[list[ExtractedFact]]:
        """Facts per turn with no context from earlier batches (each session starts fresh)."""
        return self.extract_in_context(pairs, {})[0]

    def extract_in_context(
        self,
        pairs: Iterable[tuple[DialogueEvent, ParsedTurn]],
        contexts: Mapping[str, DialogueContext],
    ) -> tuple[list[list[ExtractedFact]], dict[str, DialogueContext]]:
        """Facts per turn, reading and advancing each session's ``DialogueContext``.

        ``pairs`` must be in turn order within a session; ``contexts`` (by session
        id) is not modified: the updated contexts are returned beside the facts.
        All fact-bearing sentences of the batch go through Flair together.
        """
        pairs = list(pairs)
        work: list[tuple[int, Any, Any]] = []  # (pair index, doc, sentence)
        docs: dict[int, Any] = {}
        for i, (event, parsed) in enumerate(pairs):
            if not parsed.lang.startswith("en"):
                continue
            # Only the head of a huge turn is parsed (and so yields facts): parse.FULL_PARSE_CHARS.
            doc = parsed.doc if parsed.doc is not None else self.parser.nlp(parsed_head(event.text))
            docs[i] = doc
            if parsed.is_chit_chat:
                continue
            acts = [s.intent for s in parsed.sentences]
            # The parser keeps the non-blank sentences, those of the parsed head first;
            # pair them with their acts (sentences past the head have no Doc).
            sentences = [sent for sent in doc.sents if sent.text.strip()]
            for sent, act in zip(sentences, acts[: len(sentences)], strict=True):
                if _states_facts(sent, act, event.role):
                    work.append((i, doc, sent))
        tagged = self.tagger.predict(
            [[t.text for t in sent if not t.is_space] for _, _, sent in work]
        )
        per_turn: dict[int, list[tuple[Any, list[Any]]]] = {}
        for (i, doc, sent), spans in zip(work, tagged, strict=True):
            tokens = [t for t in sent if not t.is_space]
            ner = [
                doc[tokens[s.start].i : tokens[s.end - 1].i + 1]
                for s in spans
                if s.end <= len(tokens)
            ]
            for span, s in zip(ner, spans, strict=False):
                span.label_ = s.label
            ner = with_gazetteer_phones(sent, with_gazetteer_places(sent, clean_tagger_spans(ner)))
            ner = with_gazetteer_times(sent, ner)
            per_turn.setdefault(i, []).append((sent, ner))
        results: list[list[ExtractedFact]] = [[] for _ in pairs]
        learned = self._learned(pairs, contexts, docs) if self.learned is not None else None
        updated = dict(contexts)
        # The user's latest session context (``contexts`` is in least-recently-used order).
        latest = {c.user_id: c for c in contexts.values() if c.user_id is not None}
        for i, (event, parsed) in enumerate(pairs):
            context = updated.get(event.session_id) or new_session(event, latest.get(event.user_id))
            if i in per_turn:
                results[i] = self._turn_facts(event, parsed, per_turn[i], context)
            if learned is not None:
                update = _updates(parsed, event)
                found = learned[i]
                if event.role is Role.USER:
                    found = _countered(found, context.offers, event.text)
                own = [
                    learned_fact(event, parsed, t, update=update, source=src)
                    for t, src in _as_offered(found, context.offers)
                ]
                results[i] = combine(own, results[i])
            results[i] = with_staff(event, results[i])
            if event.role is Role.AGENT and i in docs:
                results[i] += offered_extras(event, docs[i], results[i])
                results[i] += asked_after(event, results[i], context.known)
            # Only an offer made as a question is accepted by a yes; a yes after an
            # agent's statement ("Thursday at 11am then." - "Yes.") acknowledges it.
            # After the tagger's facts are combined, which keep only the rules'
            # closed-form values: an accepted time or plan would be dropped there.
            if (
                event.role is Role.USER
                and context.agent_asked
                and i in docs
                and is_affirmation(event.text)
            ):
                results[i] += self._confirmed(event, parsed, results[i], context, docs[i])
            if event.role is Role.USER and context.agent_asked and is_refusal(event.text):
                results[i] += _refused(event, parsed, results[i], context)
            if i in docs:
                results[i] = dated_events(event, docs[i], results[i])
                results[i] = move_plans(event, docs[i], results[i])
                results[i] = hometowns(event, docs[i], results[i])
                results[i] = stated_budgets(event, docs[i], results[i])
                results[i] = whole_names(results[i], docs[i])
                results[i] = stated_dislikes(event, docs[i], results[i])
            results[i] = moved_events(event, results[i], context.known, context.last_text)
            results[i] = answered_events(event, results[i], context.last_text, self.parser.nlp)
            results[i] = endings(event, results[i], context.known, context.last_text)
            results[i] = users_own(typed(results[i]), event.text, context.last_text)
            results[i] = picked_offers(event, results[i], context.offers)
            results[i] = named_in_answer(event, results[i], context.known, context.last_text)
            results[i] = named_pets(named_beside(results[i], event.text), event.text)
            results[i] = named_by_pronoun(results[i], event.text)
            results[i] = named_as_held(results[i], context.known)
            if event.role is Role.USER:
                results[i] = named_by_question(results[i], context.last_text, context.known)
                if i in docs:
                    results[i] = named_when_asked(
                        event, results[i], docs[i], context.last_text, context.known
                    )
            results[i] = [f for f in results[i] if not names_someone_else(f, context.known)]
            results[i] = one_moment(results[i])
            if i in docs:
                results[i] = _hedged_by_turn(results[i], docs[i])
            # The topic a turn sets is that of the times it stated, else its first cue:
            # "I can't come on Monday, I'm travelling" stays about the appointment.
            times = [f.predicate for f in results[i] if "TIME" in f.fields]
            topic = times[0] if times else turn_topic(docs[i]) if i in docs else None
            updated[event.session_id] = advance(context, event, results[i], topic)
            latest[event.user_id] = updated[event.session_id]
        return results, updated

    def _learned(
        self,
        pairs: list[tuple[DialogueEvent, ParsedTurn]],
        contexts: Mapping[str, DialogueContext],
        docs: Mapping[int, Any],
    ) -> list[list[tuple[LearnedTriple, Span | None]]]:
        """The tagger's triples of every turn, with their sentence, each read after the turn before.

        The other speaker's turns are tagged too: what an agent (or a friend)
        states about the user is a fact in their voice, held until the user
        confirms it (review's gate), and the user's "yes" is read with it as
        context. The fine-tuned tagger learned both voices: with agent turns
        the hybrid's pooled F1 on the first-sight splits rose from 0.559 to
        0.601 (benchmarks/devset/README.md), for a MiniLM pass per agent turn.
        """
        assert self.learned is not None  # noqa: S101 - only called with a model
        previous = {sid: c.last_text for sid, c in contexts.items()}
        inputs, english = [], []
        # The text each turn was tagged with as its context: a value read from
        # it has its offsets there. It is parsed only when such a value must be
        # read in its clause, from the text itself and never from this batch's
        # docs, so a turn yields the same facts however the stream is batched.
        context_text: dict[int, str] = {}
        for i, (event, parsed) in enumerate(pairs):
            tagged = event.role is not Role.SYSTEM and not parsed.is_chit_chat
            tagged = tagged and not _machine_text(event.text)
            if tagged and parsed.lang.startswith("en"):
                head = parsed_head(event.text)
                context_text[i] = previous.get(event.session_id, "")
                inputs.append((context_text[i], head, event.role.value))
                english.append(i)
            previous[event.session_id] = event.text[:LAST_TEXT_CHARS]
        triples = self.learned.predict(inputs)
        context_docs: dict[int, Any] = {}

        def read_in(i: int, t: LearnedTriple) -> Any:
            """The parse ``t``'s offsets point into: the turn's, or its context's (made once)."""
            if not t.from_context:
                return docs.get(i)
            if not context_text[i] or not reads_clause(t):
                return None
            if i not in context_docs:
                context_docs[i] = self.parser.nlp(context_text[i])
            return context_docs[i]

        out: list[list[tuple[LearnedTriple, Span | None]]] = [[] for _ in pairs]
        for i, found in zip(english, triples, strict=True):
            scoped = [in_scope(t, docs.get(i)) for t in found if not is_aside(t, read_in(i, t))]
            scoped = completed_plans(scoped, docs.get(i))
            scoped = as_visits(scoped, parsed_head(pairs[i][0].text))
            scoped = [singular_head(t, docs.get(i)) for t in scoped]
            out[i] = [(t, _sentence(t, docs.get(i))) for t in scoped]
        return out

    def _turn_facts(
        self,
        event: DialogueEvent,
        parsed: ParsedTurn,
        sentences: list[tuple[Any, list[Any]]],
        context: DialogueContext,
    ) -> list[ExtractedFact]:
        is_agent = event.role is Role.AGENT
        hints = TopicHints(
            topic=context.topic_for(event.turn_index),
            standing_topic=context.standing_topic,
            place_topic=context.place_topic,
            number_topic=context.number_topic,
        )
        found_per_sentence = []
        for sent, ner in sentences:
            found = list(ner_candidates(sent, ner, is_agent, hints))
            # A verbless sentence naming a topic ("bill date. can it be the 28th")
            # sets it for the turn's next sentences, as an earlier turn's cue does;
            # a cue inside a clause ("once the part arrives") is an aside.
            cue = None if any(t.pos_ in {"VERB", "AUX"} for t in sent) else turn_topic(sent)
            hints = replace(hints, topic=cue) if cue is not None else hints
            found += lexicon_candidates(sent, is_agent)
            found += dependency_candidates(sent)
            found += fragment_candidates(
                sent, found, ner, None if is_agent else context.answer_predicate()
            )
            if not is_agent:
                found += evaluation_candidates(sent, [c.span for c in found] + ner)
            found_per_sentence.append(_dedupe(found))
        doc = sentences[0][0].doc
        doc.spans[SPAN_KEY] = [c.span for found in found_per_sentence for c in found]
        self.negex(doc)
        update = any(s.intent is Intent.CORRECTION for s in parsed.sentences)
        facts: list[ExtractedFact] = []
        for (sent, ner), found in zip(sentences, found_per_sentence, strict=True):
            facts.extend(self._facts(event, parsed, sent, found, ner, update))
        return facts

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
        update = update or is_update(sent.text)
        committed = any(span.label_ == "COMMITMENT" for span in ner)
        entities = [
            Span(label=s.label_, text=s.text, start=s.start_char, end=s.end_char) for s in ner
        ]
        facts = []
        for cand in found:
            negated = is_negated(cand.span) != cand.reverse
            polarity = Polarity.NEGATED if negated else Polarity.AFFIRMED
            # A hedged sentence hedges every value in it: no clause need be read,
            # except that one's own relative or pet is there whatever it hedges.
            conditional = not hedged and is_conditional(cand.span)
            held = (hedged or conditional) and not _owned(cand.predicate, cand.span)
            if held:
                confidence = CONFIDENCE_HEDGED
            else:
                confidence = CONFIDENCE_STATED if cand.explicit else CONFIDENCE_GUESSED_TOPIC
            kind = default_vocabulary().spec(cand.predicate).kind_of(cand.value, negated=negated)
            if kind is not MemoryKind.RULE and committed:
                kind = MemoryKind.COMMITMENT
            facts.append(
                ExtractedFact(
                    **origin(event),
                    subject=SUBJECT,
                    predicate=cand.predicate,
                    object=cand.value,
                    polarity=polarity,
                    kind=kind,
                    confidence=confidence,
                    text=statement(cand.predicate, cand.value, polarity),
                    intent=parsed.intent.value,
                    asserted_by=ASSERTORS[event.role],
                    hedged=held,
                    is_update=update,
                    source_span=Span(
                        label="SENTENCE", text=sent.text, start=sent.start_char, end=sent.end_char
                    ),
                    entities=entities,
                    fields={cand.field: cand.value},
                )
            )
        return facts

    def _confirmed(
        self,
        event: DialogueEvent,
        parsed: ParsedTurn,
        own: list[ExtractedFact],
        context: DialogueContext,
        doc: Any,
    ) -> list[ExtractedFact]:
        """The agent's offers the user accepted with a plain yes (asserted by the user).

        A yes to a choice ("Saturday we have 9:30am or 11am." - "Great.") picks
        neither of two values of one single-valued predicate. A yes on a
        condition ("Yes, if I can get the morning off") accepts it unsure.
        """
        vocabulary = default_vocabulary()
        stated = {fact.predicate for fact in own}
        offered = Counter(vocabulary.canonical(offer.predicate) for offer in context.offers)
        hedged = answers_unsure(doc)
        confidence = CONFIDENCE_HEDGED if hedged else CONFIDENCE_CONFIRMED
        return [
            _answered(event, parsed, offer, Polarity.AFFIRMED, confidence, hedged=hedged)
            for offer in context.offers
            if offer.predicate not in stated
            and (
                offered[vocabulary.canonical(offer.predicate)] == 1
                or vocabulary.spec(offer.predicate).multi_valued
            )
        ]


def _refused(
    event: DialogueEvent,
    parsed: ParsedTurn,
    own: list[ExtractedFact],
    context: DialogueContext,
) -> list[ExtractedFact]:
    """The agent's offers the user declined with a plain no, negated in the user's voice.

    "Would you like our newsletter?" - "No thank you." is the user's
    ``contact_channel NOT newsletter``. An offer whose predicate the user gives
    a value of ("No, Thursday is better") is a counter-offer, not a refusal.
    """
    vocabulary = default_vocabulary()
    stated = {vocabulary.canonical(fact.predicate) for fact in own}
    # Only what the question itself offers: "Changed to 24 Griffith Avenue.
    # Anything else?" - "No, that's it." declines nothing. An identity
    # (a name, a number) is corrected by a no, not refused.
    asked = last_question(context.last_text)
    return [
        _answered(event, parsed, offer, Polarity.NEGATED, CONFIDENCE_CONFIRMED, hedged=False)
        for offer in context.offers
        if vocabulary.canonical(offer.predicate) not in stated
        and vocabulary.spec(offer.predicate).negation is not Negation.DENIED
        and _words_in(offer.object, asked)
    ]


def _answered(
    event: DialogueEvent,
    parsed: ParsedTurn,
    offer: OfferedFact,
    polarity: Polarity,
    confidence: float,
    *,
    hedged: bool,
) -> ExtractedFact:
    """An offer the user answered with a plain yes or no, as the user's own fact."""
    first = parsed.sentences[0] if parsed.sentences else None
    source = (
        None
        if first is None
        else Span(label="SENTENCE", text=first.text, start=first.start, end=first.end)
    )
    negated = polarity is Polarity.NEGATED
    return ExtractedFact(
        **origin(event),
        subject=SUBJECT,
        predicate=offer.predicate,
        object=offer.object,
        polarity=polarity,
        kind=default_vocabulary().spec(offer.predicate).kind_of(offer.object, negated=negated),
        confidence=confidence,
        text=statement(offer.predicate, offer.object, polarity),
        intent=parsed.intent.value,
        asserted_by=Assertor.USER,
        hedged=hedged,
        source_span=source,
        fields={"REFUSED" if negated else "CONFIRMED": offer.object},
    )


def _words_in(value: str, text: str) -> bool:
    """Whether every word of ``value`` is in ``text`` (lower case)."""
    words = set(re.findall(r"\w+", text.lower()))
    return all(w in words for w in re.findall(r"\w+", value.lower()))


def _updates(parsed: ParsedTurn, event: DialogueEvent) -> bool:
    """Whether the turn corrects an earlier value ("actually", a correction act)."""
    return any(s.intent is Intent.CORRECTION for s in parsed.sentences) or is_update(event.text)


# A user turn that puts its own value in place of the one on the table:
# "make it 6:30 pm", "can we do Thursday instead", "how about the 5th?".
COUNTER_CUE = re.compile(
    r"\b(?:make it|instead|rather|change it|how about|what about|better|prefer"
    r"|can (?:we|you|it) (?:do|make it|be)|could (?:we|you|it) (?:do|make it|be))\b",
    re.IGNORECASE,
)


def _countered(
    found: list[tuple[LearnedTriple, Span | None]],
    offers: list[OfferedFact],
    text: str,
) -> list[tuple[LearnedTriple, Span | None]]:
    """The times read from the agent's turn that the user's own time set aside.

    The tagger reads the agent's last turn as context, so an answer takes the
    times offered there: right for "Perfect." after "Saturday 21 March at
    10?", wrong for "Make it 6:30 pm." after "Saturday 7 pm?". An offered time
    stays when the user names a part of it ("Wednesday's fine" keeps
    "wednesday 6pm": the one chosen of two) or says yes without a change cue.
    It goes when the user names a time of their own against it: on the same
    predicate, or one the tagger was unsure of, whose predicate was a guess and
    becomes the offer's ("make it 6:30 pm" is a delivery time when a delivery
    was offered).
    """
    vocabulary = default_vocabulary()

    def time(triple: LearnedTriple) -> bool:
        return vocabulary.spec(triple.predicate).type in TIME_TYPES and not triple.negated

    offered = [t for t, _ in found if t.from_context and time(t)]
    own = [t for t, _ in found if not t.from_context and time(t)]
    if not offered or not own:
        return found
    if is_affirmation(text) and not COUNTER_CUE.search(text):
        return found

    def chosen(o: LearnedTriple) -> bool:
        return any(_time_words(t.obj) <= _time_words(o.obj) for t in own)

    def against(t: LearnedTriple, o: LearnedTriple) -> bool:
        same = vocabulary.canonical(t.predicate) == vocabulary.canonical(o.predicate)
        return same or t.confidence < SURE_TAG_SCORE

    dropped = [o for o in offered if not chosen(o) and any(against(t, o) for t in own)]
    if not dropped:
        return found
    offered_times = [o.predicate for o in offers if vocabulary.spec(o.predicate).type in TIME_TYPES]
    topic = offered_times[0] if offered_times else dropped[0].predicate
    # Said against an offer, the time is meant: kept even where the tagger
    # alone would be unsure of it.
    return [
        (replace(t, predicate=topic, confidence=SURE_TAG_SCORE), source)
        if t in own and t.confidence < SURE_TAG_SCORE
        else (t, source)
        for t, source in found
        if t not in dropped
    ]


_TIME_FILLER = frozenset({"am", "pm", "st", "nd", "rd", "th", "at", "on", "the", "of"})


def _time_words(value: str) -> set[str]:
    """A time's words and numbers, without the ones any spelling adds ("5:30" of "5:30pm")."""
    return set(re.findall(r"[a-z]+|\d+", value.lower())) - _TIME_FILLER


def _as_offered(
    found: list[tuple[LearnedTriple, Span | None]], offers: list[OfferedFact]
) -> list[tuple[LearnedTriple, Span | None]]:
    """The triples read in the agent's last turn, each in the form of the offer it is part of.

    Two pieces of one offer become that one value, so a "yes" to "April 15
    between 8 am and noon" is one window, not "april 15" and "noon"
    (``offered_form``). The turn's own words and a negated piece stay as read.
    """
    vocabulary = default_vocabulary()

    def same_type(a: str, b: str) -> bool:
        return vocabulary.spec(a).type == vocabulary.spec(b).type

    out: list[tuple[LearnedTriple, Span | None]] = []
    seen: set[tuple[str, str, bool]] = set()
    for triple, source in found:
        if triple.from_context and not triple.negated:
            offer = offered_form(triple.predicate, triple.obj, offers, same_type)
            if offer is not None:
                triple = replace(triple, predicate=offer.predicate, obj=offer.object)
        key = (triple.predicate, triple.obj, triple.negated)
        if key not in seen:
            seen.add(key)
            out.append((triple, source))
    return out


def _states_facts(sent: Any, act: Intent, role: Role) -> bool:
    """Questions state nothing, except an agent's offer ("Can we deliver on Wednesday?").

    An agent question between alternatives ("Morning or afternoon?") offers none
    of them; an agent describing the business ("There's a Thursday group") says
    nothing about the user. A user's "Remember I told you Thursdays?" restates.
    """
    if role is Role.AGENT and describes_offering(sent):
        return False
    if role is Role.AGENT and WH_QUESTION.match(sent.text):
        return False  # "Which evening would you like?" asks, it offers nothing
    if act is Intent.INQUIRY:
        if role is Role.USER:
            # "Remember I told you Thursdays?" restates; "Friday?" and "monday
            # instead?" propose a value; "any news on the 25th?" asks.
            return _proposes_a_time(sent) or RESTATING_QUESTION.match(sent.text) is not None
        return not any(t.lower_ == "or" for t in sent)
    return act not in NO_FACT_ACTS


# Words a proposal may carry beside its time: "Maybe the following Saturday?"
PROPOSAL_WORDS = frozenset(
    {"maybe", "possibly", "perhaps", "probably", "the", "a", "following", "instead", "then"}
)
PROPOSAL_WORDS |= frozenset({"or", "and", "how", "what", "about", "on", "at", "in", "this", "next"})


def _proposes_a_time(sent: Any) -> bool:
    """A verbless question of time words only ("Friday?", "monday instead?")."""
    words = [t for t in sent if t.is_alpha or t.like_num]
    return (
        bool(words)
        and all(is_time_core(t) or t.lower_ in PROPOSAL_WORDS for t in words)
        and any(is_time_core(t) for t in words)
    )


def _dedupe(found: list[Candidate]) -> list[Candidate]:
    """One candidate per (predicate, value): the same object can match two rules.

    A thing "liked" that a closed list names ("I'd rather not do direct debit")
    is that list's fact only.
    """
    seen: dict[tuple[str, str], Candidate] = {}
    listed = {c.value for c in found if c.predicate != "likes"}
    for cand in found:
        if cand.predicate == "likes" and cand.value in listed:
            continue
        seen.setdefault((cand.predicate, cand.value), cand)
    return list(seen.values())


# Braces, brackets, quotes, "=" and ";": the punctuation of JSON, code and
# query strings, rare in what people type to each other.
_MACHINE_PUNCTUATION = frozenset('{}[]"=;')
MACHINE_PUNCTUATION_SHARE = 0.15
# C0 control characters other than the whitespace ones.
_CONTROLS = frozenset(chr(c) for c in range(32)) - set("\t\n\r")


def _machine_text(text: str) -> bool:
    """Whether a turn reads as JSON or code rather than dialogue: the tagger skips it.

    The tagger learned dialogue only; in '{"role": "user", "text": null}' it
    read "text" as the SMS channel. Emoji and a little markup around a sentence
    stay dialogue ("<b>Call me on 0151 234 5678</b>"), and so does a zero-width
    space pasted in with a word.
    """
    stripped = "".join(text.split())
    if not stripped:
        return False
    # No keyboard types a NUL or a bidi override: such a turn is binary, a
    # spoofing attempt or a paste gone wrong, never a statement to learn from.
    if any(
        ch in _CONTROLS or "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069" for ch in text
    ):
        return True
    share = sum(ch in _MACHINE_PUNCTUATION for ch in stripped) / len(stripped)
    return share >= MACHINE_PUNCTUATION_SHARE


def _sentence(triple: LearnedTriple, doc: Any) -> Span | None:
    """The sentence a tagged value was read in (the turn's first for an answer's value).

    Trace shows it, and ``typed`` joins a window's parts only within one sentence.
    """
    if doc is None:
        return None
    sentences = list(doc.sents)
    if not sentences:
        return None
    sent = sentences[0]
    if not triple.from_context:
        sent = next((s for s in sentences if s.start_char <= triple.start < s.end_char), sent)
    return Span(label="SENTENCE", text=sent.text, start=sent.start_char, end=sent.end_char)


def _hedged_by_turn(facts: list[ExtractedFact], doc: Any) -> list[ExtractedFact]:
    """``facts`` of the sentence a hedge said on its own follows, held as hedged.

    "Kington show, 12 September. Probably." The one place a hedge said on its
    own is read, after every fact of the turn is composed (the rules', the
    tagger's, dated events, answers, picked offers), so it holds them alike in
    either speaker's turn. A sentence states a fact when the fact was read in it
    or shares a word with its value ("Maybe the 13th for the dog show." is
    about its own value, not the turn's).

    Such a hedge is about what was said just before it, and only when it has
    no clause of its own ("Probably.", "from 9 jan prob, keys not confirmed
    yet"): opening the turn it answers the other speaker ("maybe. seeing the
    specialist on the 28th"), and with a clause it hedges that clause ("Taking
    the Hilux, hopefully she survives the N2"). Over the seen splits, holding
    every fact of the turn held 136 sure facts of the gold for 2 hedged ones
    (benchmarks/devset/README.md, stop 48).
    """
    if not facts or all(f.hedged for f in facts):
        return facts
    # Every turn passes here: most say no hedge, and only a hedged sentence is read further.
    sentences = list(doc.sents)
    hedges = [i for i, sent in enumerate(sentences) if i > 0 and is_hedged(sent.text)]
    hedges = [i for i in hedges if _without_clause(sentences[i])]
    if not hedges:
        return facts
    held: set[int] = set()
    for i in hedges:
        if any(_said_in(f, sentences[i]) for f in facts):
            continue  # a hedge of its own values: the sentence's own scope read it
        held |= {n for n, f in enumerate(facts) if _said_in(f, sentences[i - 1])}
    return [
        f.model_copy(update={"hedged": True, "confidence": min(f.confidence, CONFIDENCE_HEDGED)})
        if n in held and not f.hedged
        else f
        for n, f in enumerate(facts)
    ]


# Verbs of the hedging itself ("we'll see", "I guess", "haven't decided yet").
_HEDGING_VERBS = frozenset(
    {"see", "know", "think", "guess", "hope", "suppose", "reckon", "decide", "confirm", "depend"}
)


def _without_clause(sent: Any) -> bool:
    """Whether a hedged sentence says nothing but the hedge and words to go with the one before.

    A verb or a subject outside the hedge cue makes a clause of its own, but
    not the subject of the hedge itself ("I'm not sure yet", "we'll see").
    """
    cues = [m.span() for m in HEDGES.finditer(sent.text)]

    def in_cue(token: Any) -> bool:
        at = token.idx - sent.start_char
        return any(start <= at < end for start, end in cues)

    def hedging(token: Any) -> bool:
        return in_cue(token) or token.lemma_.casefold() in _HEDGING_VERBS

    for token in sent:
        if in_cue(token):
            continue
        if token.pos_ == "VERB" and not hedging(token):
            return False
        if token.dep_ in ("nsubj", "nsubjpass") and not _of_the_hedge(token.head, hedging):
            return False
    return True


def _of_the_hedge(head: Any, hedging: Callable[[Any], bool]) -> bool:
    """Whether a subject's verb is the hedge: a hedging verb, or a copula whose complement is."""
    if hedging(head):
        return True
    complements = [c for c in head.children if c.dep_ in ("acomp", "attr")]
    return bool(complements) and all(hedging(c) for c in complements)


def _said_in(fact: ExtractedFact, sent: Any) -> bool:
    """Whether ``fact`` was read in ``sent``, or names a word of it (a composed value)."""
    span = fact.source_span
    if span is not None and sent.start_char <= span.start and span.end <= sent.end_char:
        return True
    words = set(re.findall(r"\w+", fact.object.casefold()))
    return bool(words & set(re.findall(r"\w+", sent.text.casefold())))


# A time whose past is no memory of an arrangement: a birthday is said in the past tense.
_NOT_ARRANGED = frozenset({"birthday"})


def is_aside(triple: LearnedTriple, doc: Any) -> bool:
    """A tagged value that is no fact about the user's arrangements, read in its sentence.

    ``doc`` is the turn the value was read in (the previous one for an answer's value).

    The tagger reads words, the parse reads the clause: a time of a past event
    ("the driver called me at 11 pm, way too late") is a complaint, not a
    booking, and a place on the way ("the flight via Helsinki") is no
    destination. The rules skip both (``scope``); the tagger's values now too.
    """
    if doc is None or triple.end <= triple.start or not reads_clause(triple):
        return False
    span = doc.char_span(triple.start, triple.end, alignment_mode="expand")
    if span is None:
        return False
    if default_vocabulary().spec(triple.predicate).name == "travel":
        return on_the_way(span)
    return tells_of_the_past(span)


def _owned(predicate: str, span: Any) -> bool:
    """Whether ``span`` is the speaker's own relative or pet, there whatever the sentence says."""
    return default_vocabulary().spec(predicate).named and presupposed(span)


def reads_clause(triple: LearnedTriple) -> bool:
    """Whether ``is_aside`` reads the value's clause: an arrangement's time, a trip's place."""
    spec = default_vocabulary().spec(triple.predicate)
    return spec.name == "travel" or (spec.type in TIME_TYPES and spec.name not in _NOT_ARRANGED)


def in_scope(triple: LearnedTriple, doc: Any) -> LearnedTriple:
    """A tagged value read in its sentence: negated or hedged there, whatever its tag says.

    The tag names polarity and hedge with the predicate, so a predicate seldom
    seen negated in training is seldom tagged negated. The parse sees the
    negator and the hedge cue wherever they are ("I don't think I can do
    Friday"), as it does for the rules' own spans. A value read from the
    previous turn is what the turn answers: a hedge anywhere in the answer
    ("Let me check with my partner and get back to you") holds it, and so
    does a condition the reply sets ("Wouldn't miss it, if the cattle let me").
    """
    if doc is None:
        return triple
    if triple.from_context:
        return replace(triple, hedged=True) if answers_unsure(doc) else triple
    if triple.end <= triple.start:
        return triple
    span = doc.char_span(triple.start, triple.end, alignment_mode="expand")
    if span is None:
        return triple
    # One's own relative or pet is there whatever the sentence denies or hedges
    # ("my husband don't know yet", "visiting my sister, maybe").
    owned = _owned(triple.predicate, span)
    negated = triple.negated or (dependency_negated(span) and not owned)
    unsure = is_hedged(span.sent.text) or is_conditional(span)
    hedged = triple.hedged or (unsure and not owned)
    if (negated, hedged) == (triple.negated, triple.hedged):
        return triple
    return replace(triple, negated=negated, hedged=hedged)
