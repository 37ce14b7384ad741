"""Candidate objects of one sentence: (predicate, object span) pairs before polarity.

NER spans (TIME, PLACE, NUMBER) get their predicate from topic cues around
them; objects that are not NER spans (diets, likes, plans, channels, payment
methods, e-mail addresses) come from closed lists and spaCy dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipelines.extract import vocabulary as vocab
from pipelines.extract.spans import number_core, place_core, time_parts

# Verbs whose direct object is something the speaker likes (or, negated, does not).
LIKE_VERBS = frozenset({"like", "love", "enjoy", "prefer", "adore", "eat", "drink", "fancy"})
# Verbs that mean the opposite: "I hate X" is likes X, negated.
DISLIKE_VERBS = frozenset({"hate", "dislike", "detest"})
# Verbs that only say something about preference when negated: "I don't want X".
NEGATED_ONLY_VERBS = frozenset({"want", "need", "read", "watch", "use"})
# Adjective/noun heads with a preposition: "fan of X", "interested in X", "allergic to X".
PREP_HEADS = {("fan", "of"): "likes", ("interested", "in"): "likes", ("allergic", "to"): "allergy"}
PLAN_NOUNS = frozenset({"plan", "tariff", "contract", "subscription"})
PLAN_VERBS = frozenset({"switch", "upgrade", "downgrade"})
# Object tokens that are not a thing one likes.
DROP_OBJECT_DEPS = frozenset({"det", "poss", "predet", "case"})
CLAUSE_BREAKS = frozenset({",", ";", "but", ":"})
PAST_TIME_MARKERS = frozenset({"since", "ago", "last", "yesterday", "earlier"})
VAGUE_TIMES = frozenset({"week", "month", "year", "today", "now", "time", "day"})
ORDER_STATUS = (
    (re.compile(r"\bhas (?:been )?shipped\b|\bwas shipped\b", re.IGNORECASE), "shipped"),
    (re.compile(r"\bhas been dispatched\b|\bwas dispatched\b", re.IGNORECASE), "dispatched"),
    (re.compile(r"\bhas been delivered\b|\bwas delivered\b", re.IGNORECASE), "delivered"),
    (re.compile(r"\brefund is on its way\b|\bhas been refunded\b", re.IGNORECASE), "refunded"),
)


@dataclass(frozen=True)
class Candidate:
    """A predicate and the object span it applies to, before polarity is decided."""

    predicate: str
    value: str  # canonical object
    span: Any  # spaCy Span of the object in the turn's Doc
    field: str  # TIME, PLACE, NUMBER, EMAIL, ... (the exact-match field name)
    explicit: bool = True  # False when the predicate is the fallback (no topic cue)
    reverse: bool = False  # "hate X", "can't stand X": polarity flips once


def _lemmas(tokens: Any) -> set[str]:
    return {t.lemma_.lower() for t in tokens} | {t.lower_ for t in tokens}


def clause_of(span: Any) -> Any:
    """The tokens between the clause breaks (",", ";", "but") around ``span``."""
    sent, start, end = span.sent, span.start, span.end
    while start > sent.start and span.doc[start - 1].lower_ not in CLAUSE_BREAKS:
        start -= 1
    while end < sent.end and span.doc[end].lower_ not in CLAUSE_BREAKS:
        end += 1
    return span.doc[start:end]


def time_predicate(
    span: Any, is_agent: bool, committed: bool, topic: str | None = None
) -> tuple[str, bool]:
    """The predicate a TIME belongs to: cues in its clause, its sentence, then ``topic``.

    ``topic`` is the time topic earlier turns set (``DialogueContext``): "Sunday
    morning." after "When should we deliver?" is a delivery time. A topic from
    context is a guess, so it is not ``explicit``.
    """
    for scope in (clause_of(span), span.sent):
        lemmas = _lemmas(scope)
        predicate = vocab.time_topic(lemmas)
        if predicate is not None:
            if predicate == "contact_time" and is_agent and committed:
                return "callback_time", True
            return predicate, True
        if is_agent and committed and lemmas & {"remind", "confirm"}:
            return "callback_time", True
    return topic or vocab.DEFAULT_TIME_PREDICATE, False


def ner_candidates(
    sent: Any,
    spans: list[Any],
    is_agent: bool,
    topic: str | None = None,
    place_topic: str | None = None,
) -> Iterator[Candidate]:
    """Candidates from the Flair spans (TIME, PLACE, NUMBER) of one sentence.

    ``topic`` and ``place_topic`` come from the session's earlier turns: what a
    cue-less time or town ("Update: it's Montreal, not Toronto.") is about.
    """
    lemmas = _lemmas(sent)
    committed = any(span.label_ == "COMMITMENT" for span in spans)
    taken: list[Any] = []  # cleaned PLACE spans so far (the tagger's spans are in text order)
    for span in spans:
        if span.label_ == "TIME":
            predicate, explicit = time_predicate(span, is_agent, committed, topic)
            for part in time_parts(span):
                before = span.doc[part.start - 1].lower_ if part.start > sent.start else ""
                value = vocab.canonical_time(part.text)
                words = set(value.split())
                if words & PAST_TIME_MARKERS or before in PAST_TIME_MARKERS:
                    continue
                if value and not words <= VAGUE_TIMES:
                    yield Candidate(predicate, value, part, "TIME", explicit)
        elif span.label_ == "PLACE":
            place = place_core(span)
            # An address extended over ", Bath" also covers the tagger's separate "Bath".
            if place is None or any(place.start >= t.start and place.end <= t.end for t in taken):
                continue
            taken.append(place)
            value = vocab.canonical_place(place.text)
            # A street address is an address whatever the verb; a town is where the
            # user travels or lives, by the cue words around it.
            if value[:1].isdigit():
                yield Candidate("address", value, place, "PLACE")
            elif lemmas & vocab.TRAVEL_CUES:
                yield Candidate("travel", value, place, "PLACE")
            elif lemmas & vocab.ADDRESS_CUES:
                yield Candidate("address", value, place, "PLACE")
            elif place_topic is not None:
                yield Candidate(place_topic, value, place, "PLACE", explicit=False)
        elif span.label_ == "NUMBER":
            number = number_core(span)
            if lemmas & vocab.CODE_CUES:
                yield Candidate("door_code", vocab.canonical_code(number.text), number, "NUMBER")
            elif lemmas & vocab.METER_CUES:
                yield Candidate(
                    "meter_reading", vocab.canonical_code(number.text), number, "NUMBER"
                )
            elif vocab.is_phone_like(number.text) and lemmas & vocab.PHONE_CUES:
                yield Candidate(
                    "phone_number", vocab.canonical_phone(number.text), number, "NUMBER"
                )


def _regex_spans(sent: Any, pattern: re.Pattern[str] | str) -> Iterator[tuple[Any, str]]:
    regex = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.IGNORECASE)
    for match in regex.finditer(sent.text):
        span = sent.doc.char_span(
            sent.start_char + match.start(), sent.start_char + match.end(), alignment_mode="expand"
        )
        if span is not None:
            yield span, match.group(0)


def lexicon_candidates(sent: Any, is_agent: bool) -> Iterator[Candidate]:
    """E-mail addresses, diets, payment methods, contact channels, order status."""
    for span, text in _regex_spans(sent, vocab.EMAIL):
        yield Candidate("email", text.lower(), span, "EMAIL")
    for diet in vocab.DIETS:
        for span, _ in _regex_spans(sent, rf"\b{re.escape(diet)}\b"):
            yield Candidate("diet", diet, span, "DIET")
    for name, value in vocab.PAYMENT_METHODS.items():
        for span, _ in _regex_spans(sent, rf"\b{re.escape(name)}\b"):
            yield Candidate("payment_method", value, span, "PAYMENT")
    for channel, value in vocab.CONTACT_CHANNELS.items():
        for span, _ in _regex_spans(sent, channel):
            yield Candidate("contact_channel", value, span, "CHANNEL")
    if is_agent:
        for pattern, value in ORDER_STATUS:
            for span, _ in _regex_spans(sent, pattern):
                yield Candidate("order_status", value, span, "STATUS")


def object_phrase(token: Any) -> tuple[Any, str] | None:
    """The noun phrase headed by ``token``, canonical: "spicy dishes" -> "spicy dish"."""
    if token.pos_ not in {"NOUN", "PROPN", "ADJ"}:
        return None
    words = [t for t in token.subtree if t.i <= token.i and t.dep_ not in DROP_OBJECT_DEPS]
    words = [t for t in words if t.lower_ not in {"any", "some", "more", "the", "a", "an"}]
    if not words:
        return None
    span = token.doc[words[0].i : token.i + 1]
    modifiers = token.doc[words[0].i : token.i].text.lower()  # keeps "two-year" whole
    return span, f"{modifiers} {token.lemma_.lower()}".strip()


def _objects(head: Any) -> Iterator[Any]:
    for child in head.children:
        if child.dep_ in {"dobj", "attr", "pobj"}:
            yield child
            yield from (c for c in child.children if c.dep_ == "conj")


def _speaker_is_self(verb: Any) -> bool:
    subjects = [c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass"}]
    return not subjects or subjects[0].lower_ in {"i", "we"}


def dependency_candidates(sent: Any) -> Iterator[Candidate]:
    """Likes, allergies and plans read off spaCy dependencies."""
    for token in sent:
        lemma = token.lemma_.lower()
        if token.pos_ in {"VERB", "AUX"} and _speaker_is_self(token):
            negated_verb = any(c.dep_ == "neg" for c in token.children)
            if lemma in LIKE_VERBS | DISLIKE_VERBS or (lemma == "stand" and negated_verb):
                # "can't stand X": its own "n't" already negates; only hate-verbs flip.
                reverse = lemma in DISLIKE_VERBS
            elif lemma in NEGATED_ONLY_VERBS and negated_verb:
                reverse = False
            elif lemma in PLAN_VERBS:
                for prep in (c for c in token.children if c.lower_ == "to"):
                    for obj in _objects(prep):
                        # "switch to the premium plan" is read by the plan-noun rule below.
                        if obj.lemma_.lower() in PLAN_NOUNS:
                            continue
                        if (phrase := object_phrase(obj)) is not None:
                            yield Candidate("plan", phrase[1], phrase[0], "PLAN")
                continue
            else:
                continue
            for obj in _objects(token):
                phrase = object_phrase(obj)
                if phrase is None:
                    continue
                predicate = "plan" if obj.lemma_.lower() in PLAN_NOUNS else "likes"
                yield Candidate(predicate, phrase[1], phrase[0], "ITEM", reverse=reverse)
        for prep in (c for c in token.children if c.dep_ == "prep"):
            head_predicate = PREP_HEADS.get((lemma, prep.lower_))
            if head_predicate is None:
                continue
            for obj in _objects(prep):
                if (phrase := object_phrase(obj)) is not None:
                    yield Candidate(head_predicate, phrase[1], phrase[0], "ITEM")
        if lemma in {"plan", "tariff"} and token.pos_ == "NOUN":
            mods = [c for c in token.children if c.dep_ in {"amod", "compound"}]
            if mods:
                span = token.doc[min(m.i for m in mods) : token.i]
                yield Candidate("plan", span.text.lower(), span, "PLAN")
