"""An event is what happens and its date, in one value ("hip operation 14 may").

The vocabulary keeps a dated event as its name and its date together
(``event brother's wedding 14 june``; docs/vocabulary.md, "dated"
predicates). The tagger often finds a part of it: the place beside the date
("back operation at treliske 12th of may"), the date alone, or nothing when
the date is said apart from the event ("Operation is 14 april in Santry").

``dated_events`` reads a user's sentence that names an event (a wedding, an
operation, an exam: ``EVENT_NOUNS``) and a date, and states the event as the
noun phrase that names it and that date. ``moved_events`` reads "they moved
it to 1 June" as the held event the turn is about, at its new date.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pipelines.extract.endings import KnownValue, named_in
from pipelines.extract.learned.facts import CONFIDENCE_HEDGED
from pipelines.extract.polarity import is_hedged, is_update
from pipelines.extract.typed import stated
from pipelines.vocabulary.values import MONTHS, WEEKDAYS, normalise_datetime, undated
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact

# What people mark on a calendar in their own lives: the rites, the medical
# dates, exams and contests, the days of a move. A trip is ``travel`` and a
# booked slot ``appointment_time``: neither is here.
EVENT_NOUNS = frozenset(
    {"wedding", "graduation", "birthday", "party", "anniversary", "funeral", "memorial"}
    | {"christening", "baptism", "communion", "reunion", "engagement", "shower", "do"}
    | {"surgery", "operation", "op", "replacement", "transplant", "scan", "biopsy"}
    | {"exam", "exams", "test", "viva", "defence", "defense", "interview", "audition"}
    | {"recital", "concert", "gig", "show", "match", "game", "final", "race", "marathon"}
    | {"tournament", "competition", "ceremony", "festival", "opener", "premiere", "results"}
    | {"closing", "completion", "arrival", "visit", "induction", "hearing", "due"}
)
# The sentence's date: a day with its month (and weekday), a month alone, a day
# alone ("the 14th"), or a season. Durations ("six weeks") and relative days
# ("next week") date nothing the calendar keeps.
_MONTH = "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
_WEEKDAY = "|".join(WEEKDAYS)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b(?:(?:{_WEEKDAY})\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+(?:{_MONTH})\b"
    rf"|\b(?:{_MONTH})\s+(?:the\s+)?{_DAY}\b(?!\s*(?:am|pm|[:.]\d))"
    rf"|\bthe\s+\d{{1,2}}(?:st|nd|rd|th)\b"
    rf"|\b(?:{_MONTH})\b(?!\s*\d)"
    r"|\b(?:spring|summer|autumn|fall|winter)\b",
    re.IGNORECASE,
)
# "may" the modal is no month: only read as one beside a day or after in/of/by.
_MODAL_MAY = re.compile(r"^may$", re.IGNORECASE)
_MONTH_CONTEXT = re.compile(r"\b(?:in|of|by|early|late|mid|end|this|next|until)\s+$", re.IGNORECASE)
# Words inside a noun phrase that name no part of the event.
_NOT_IN_NAME = frozenset(
    {"my", "our", "his", "her", "their", "your", "its", "the", "a", "an", "this", "that"}
)
# Who is getting married, said before it ("my sister Kat's getting married",
# "Jess is getting married", "we're getting married"): the wedding is theirs.
_MARRYING = re.compile(
    r"\b(?P<who>(?:(?:my|our|his|her)\s+)?(?:[\w-]+\s+){0,2}?[\w-]+)"
    r"(?:'s|’s|\s+is|\s+are|'re|’re|\s+am|'m|’m)\s+(?:getting|gettin'?|gonna get|going to get)"
    r"\s+married\b",
    re.IGNORECASE,
)
FIRST_PERSON = frozenset({"i", "we", "me", "us", "im"})
_EVENT_WORD = re.compile(rf"\b(?:{'|'.join(sorted(EVENT_NOUNS))})\b", re.IGNORECASE)
# A date more arcs than this from the event in the parse is said of something else.
_MAX_ARCS = 4
_TIME_PREPOSITIONS = frozenset({"after", "before", "since", "until", "till", "during"})
_NAME_POS = frozenset({"NOUN", "PROPN", "ADJ", "NUM", "PART"})
# A denied or asked sentence states no event; a hedged one (is_hedged) an
# unsure one, left to the tagger's own reading.
_DENIED_OR_ASKED = re.compile(r"\b(?:not|never|no)\b|n't\b|\?", re.IGNORECASE)
# Above the review gate's commit threshold (0.82): the noun and the date were
# both read in the sentence as said.
CONFIDENCE = 0.86
ANSWER_DATE_CHARS = 40


def dated_events(
    event: DialogueEvent, doc: Any, facts: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """``facts`` with each event the user dates in a sentence stated as its name and date.

    A tagger's event value from the same sentence that shares the event's
    noun or date gives way to the composed one.
    """
    if event.role is not Role.USER or doc is None:
        return list(facts)
    composed: list[tuple[ExtractedFact, frozenset[str]]] = []
    for sent in doc.sents:
        if _DENIED_OR_ASKED.search(sent.text) or is_hedged(sent.text):
            continue
        for value in [*_dated_in(sent), *_wedding_in(sent.text)]:
            fact = stated(
                event,
                "event",
                value,
                asserted_by=Assertor.USER,
                confidence=CONFIDENCE,
                field="EVENT",
            )
            composed.append((fact, frozenset(value.split())))
    if not composed:
        return list(facts)
    words = frozenset().union(*(w for _, w in composed))
    kept = [f for f in facts if f.predicate != "event" or not (set(f.object.split()) & words)]
    return kept + [f for f, _ in composed]


def answered_events(
    event: DialogueEvent,
    facts: Sequence[ExtractedFact],
    last_text: str,
    nlp: Callable[[str], Any],
) -> list[ExtractedFact]:
    """``facts`` with a date said in answer to a question about an event, as that event's date.

    "When's the wedding?" - "tentatively oct 10" - and "Are you going to Jen's
    wedding?" - "I think so! It's August 22." date the event the question
    names (a hedged answer, unsure). ``nlp`` parses ``last_text``, the turn
    before, only when the answer is a date with no dated event of its own.
    """
    if event.role is not Role.USER or not last_text:
        return list(facts)
    text = event.text
    if "?" in text or (_DENIED_OR_ASKED.search(text) and not is_update(text)):
        return list(facts)
    date = _date_in(text)
    # An answer says its date first ("tentatively oct 10", "I think so! It's
    # August 22"); a date later in a long turn dates something else.
    if date is None or date[1] > ANSWER_DATE_CHARS:
        return list(facts)
    if any(f.predicate == "event" and f.object != undated(f.object) for f in facts):
        return list(facts)
    # The parse is paid only for a question that holds an event's word.
    if not _EVENT_WORD.search(last_text):
        return list(facts)
    names = [_event_name(t) for t in nlp(last_text) if _names_event(t)]
    name = next((n for n in reversed(names) if n is not None), None)
    if name is None:
        return list(facts)
    hedged = is_hedged(text)
    answer = stated(
        event,
        "event",
        f"{name} {normalise_datetime(date[0])}",
        asserted_by=Assertor.USER,
        confidence=CONFIDENCE_HEDGED if hedged else CONFIDENCE,
        field="EVENT",
    ).model_copy(update={"hedged": hedged})
    # The tagger's undated piece of it ("jen's wedding") is this event.
    words = _name_words(name)
    kept = [f for f in facts if f.predicate != "event" or not _name_words(f.object) <= words]
    return [*kept, answer]


def moved_events(
    event: DialogueEvent,
    facts: Sequence[ExtractedFact],
    known: Sequence[KnownValue],
    last_text: str,
) -> list[ExtractedFact]:
    """``facts`` with "they moved it to 1 June" stated as the held event at its new date.

    The event is the held one the turn or the question before it names; a
    pronoun ("moved it") takes the one held event when there is only one.
    """
    if event.role is not Role.USER:
        return list(facts)
    # A move may be denied first ("No, they moved it"): only a hedge or a
    # question leaves the new date unsaid.
    if not is_update(event.text) or is_hedged(event.text) or "?" in event.text:
        return list(facts)
    date = _date_in(event.text)
    held = [k for k in known if k.predicate == "event" and undated(k.object).strip()]
    if date is None or not held:
        return list(facts)
    names = {undated(k.object) for k in named_in(event.text, held) or named_in(last_text, held)}
    if (
        not names
        and len({undated(k.object) for k in held}) == 1
        and re.search(r"\b(?:it|its|it's)\b", event.text, re.IGNORECASE)
    ):
        names = {undated(held[-1].object)}
    if len(names) != 1:
        return list(facts)
    name = names.pop()
    # The tagger's parts of the held event ("graduation 29 may" read from the
    # question, "dayo") are this event; an event of its own keeps the turn as is.
    parts = [f for f in facts if f.predicate == "event"]
    if any(not _name_words(f.object) <= _name_words(name) for f in parts):
        return list(facts)
    value = f"{name} {normalise_datetime(date[0])}"
    moved = stated(
        event, "event", value, asserted_by=Assertor.USER, confidence=CONFIDENCE, field="EVENT"
    )
    kept = [f for f in facts if f.predicate != "event"]
    return [*kept, moved.model_copy(update={"is_update": True})]


def _date_in(text: str) -> tuple[str, int, int] | None:
    """The first calendar date in ``text`` with its offsets."""
    return next(dates_in(text), None)


def dates_in(text: str) -> Iterator[tuple[str, int, int]]:
    """The calendar dates in ``text`` with their offsets, "may" the modal aside."""
    for match in _DATE.finditer(text):
        said = match.group(0)
        if _MODAL_MAY.match(said) and not _MONTH_CONTEXT.search(text[: match.start()]):
            continue
        yield said, match.start(), match.end()


def _dated_in(sent: Any) -> list[str]:
    """Each event ``sent`` names with the date said of it, as "name date".

    The date must be said of the event: inside its phrase ("surgery on June
    12") or beside it under one verb ("Operation is 14 april", "viva is
    pencilled in for july"); of several, the one fewest arcs away in the parse.
    """
    doc, offset = sent.doc, sent.start_char
    dates = []
    for said, start, end in dates_in(sent.text):
        span = doc.char_span(offset + start, offset + end, alignment_mode="expand")
        if span is not None:
            dates.append((said, span))
    if not dates:
        return []
    out = []
    for head in sent:
        if not _names_event(head) or any(head.i in range(s.start, s.end) for _, s in dates):
            continue
        linked = [(_arcs(head, span.root), said) for said, span in dates]
        linked = [(n, said) for n, said in linked if n <= _MAX_ARCS]
        if not linked:
            continue
        name = _event_name(head)
        if name is not None:
            out.append(f"{name} {normalise_datetime(min(linked)[1])}")
    return out


def _wedding_in(text: str) -> list[str]:
    """The wedding of whoever is getting married, with its date: "sister kat's wedding 14 june"."""
    match = _MARRYING.search(text)
    date = next(dates_in(text[match.end() :]), None) if match else None
    if match is None or date is None:
        return []
    who = [w for w in match.group("who").lower().split() if w not in _NOT_IN_NAME]
    name = "wedding" if not who or who[-1] in FIRST_PERSON else f"{' '.join(who)}'s wedding"
    return [f"{name} {normalise_datetime(date[0])}"]


def _names_event(token: Any) -> bool:
    """Whether ``token`` heads a phrase naming an event (not "test" of "test engineer")."""
    if token.lower_ not in EVENT_NOUNS:
        return False
    if token.lower_ == "due":
        return True
    if token.pos_ not in {"NOUN", "PROPN"} or token.dep_ in {"compound", "amod"}:
        return False
    # "after exams", "since the operation": the event dates something else.
    return not (token.dep_ == "pobj" and token.head.lower_ in _TIME_PREPOSITIONS)


def _arcs(a: Any, b: Any) -> int:
    """Arcs between two tokens of one parse, through their lowest common ancestor."""
    up_a = [a, *a.ancestors]
    up_b = [b, *b.ancestors]
    ids_b = {t.i: n for n, t in enumerate(up_b)}
    for n, token in enumerate(up_a):
        if token.i in ids_b:
            return n + ids_b[token.i]
    return 1_000


def _event_name(head: Any) -> str | None:
    """The noun phrase ``head`` ends: "dayo's graduation", "back operation", "baby due"."""
    if head.lower_ == "due":
        # "Baby's due in July", "she's due 19 May": the birth is the event.
        expecting = re.search(r"\b(?:baby|pregnant|expecting)\b", head.doc.text, re.IGNORECASE)
        return "baby due" if expecting else None
    words = [head.lower_]
    left = head.i - 1
    while left >= head.sent.start:
        token = head.doc[left]
        if token.lower_ in _NOT_IN_NAME or token.pos_ not in _NAME_POS:
            break
        if token.pos_ == "PART" and token.lower_ not in {"'s", "’s"}:
            break
        # A proper noun is a name only as written with a capital ("nope" is none).
        if token.pos_ == "PROPN" and not token.text[:1].isupper():
            break
        words.insert(0, "'s" if token.lower_ == "’s" else token.lower_)
        left -= 1
    name = " ".join(words).replace(" 's", "'s")
    if name.startswith("'s"):
        return None
    return name if undated(name).strip() else None


def _name_words(value: str) -> set[str]:
    """The words naming an event, without its date or possessive endings."""
    return {re.sub(r"['’]s$", "", word) for word in undated(value).split()}
