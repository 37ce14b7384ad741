"""The last step of every extractor: facts in the vocabulary's names and forms.

Whatever produced a fact (rules, CRM mapping, an agent's tool call), it leaves
here with the predicate's own name (aliases resolved), its value in the one
canonical form of the predicate's type, and the two parts of a time window
said together ("Monday at 2 pm": a day and a clock time) as one value, so a
re-statement is a confirmation of the same value, never a new version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipelines.vocabulary import Vocabulary, default_vocabulary
from pipelines.vocabulary.values import MONTHS, WEEKDAYS, undated
from schemas.events import DialogueEvent
from schemas.facts import Assertor, ExtractedFact, Span, origin, statement
from schemas.memory import Polarity

_DAY_WORDS = frozenset({*WEEKDAYS, *MONTHS, "weekend", "weekday", "today", "tomorrow", "tonight"})
_DAY_PATTERN = re.compile(r"\d{1,2}(?:st|nd|rd|th)\b|\d{4}-\d{2}-\d{2}")
_CLOCK_PATTERN = re.compile(r"\b\d{1,2}(?::\d{2})?(?:am|pm)?\b|\b(?:noon|midday|midnight)\b")


def stated(
    event: DialogueEvent,
    predicate: str,
    value: str,
    *,
    asserted_by: Assertor,
    confidence: float,
    field: str,
    polarity: Polarity = Polarity.AFFIRMED,
    source_span: Span | None = None,
) -> ExtractedFact:
    """A value a step reads from ``event`` about the user, kind and text from the vocabulary."""
    negated = polarity is Polarity.NEGATED
    return ExtractedFact(
        **origin(event),
        subject="user",
        predicate=predicate,
        object=value,
        polarity=polarity,
        kind=default_vocabulary().spec(predicate).kind_of(value, negated=negated),
        confidence=confidence,
        text=statement(predicate, value, polarity),
        asserted_by=asserted_by,
        source_span=source_span,
        fields={field: value},
    )


def typed(
    facts: Sequence[ExtractedFact], vocabulary: Vocabulary | None = None
) -> list[ExtractedFact]:
    """``facts`` of one turn renamed, normalised, windows joined and repeats dropped."""
    vocab = vocabulary or default_vocabulary()
    renamed = [_normalised(fact, vocab) for fact in facts]
    # A dated predicate's value names something and dates it ("brother's
    # wedding 14 june"): a date alone ("next month") names no event.
    renamed = [f for f in renamed if not vocab.spec(f.predicate).dated or undated(f.object).strip()]
    return distinct(_join_windows(renamed, vocab), vocab)


def distinct(
    facts: Iterable[ExtractedFact], vocabulary: Vocabulary | None = None
) -> list[ExtractedFact]:
    """``facts`` without a repeat: one value in two forms, said by one speaker, is kept once."""
    vocab = vocabulary or default_vocabulary()
    seen: set[tuple[str, str, Polarity, str]] = set()
    unique = []
    for fact in facts:
        spec = vocab.spec(fact.predicate)
        identity = (fact.predicate, spec.key(fact.object), fact.polarity, fact.asserted_by.value)
        if identity not in seen:
            seen.add(identity)
            unique.append(fact)
    return unique


def _normalised(fact: ExtractedFact, vocab: Vocabulary) -> ExtractedFact:
    spec = vocab.spec(fact.predicate)
    predicate = spec.name if vocab.knows(fact.predicate) else fact.predicate
    value = spec.normalise(fact.object)
    if predicate == fact.predicate and value == fact.object:
        return fact
    fields = {name: value if field == fact.object else field for name, field in fact.fields.items()}
    text = statement(predicate, value, fact.polarity)
    return fact.model_copy(
        update={"predicate": predicate, "object": value, "text": text, "fields": fields}
    )


def window_part(value: str) -> str | None:
    """'day' for a day or date, 'clock' for a time of day, None for a whole window."""
    words = set(value.split())
    day = bool(words & _DAY_WORDS) or _DAY_PATTERN.search(value) is not None
    clock = _CLOCK_PATTERN.search(_DAY_PATTERN.sub("", value)) is not None
    clock = clock or bool(words & {"morning", "afternoon", "evening", "night", "lunchtime"})
    if day and not clock:
        return "day"
    if clock and not day:
        return "clock"
    return None


def _join_windows(facts: list[ExtractedFact], vocab: Vocabulary) -> list[ExtractedFact]:
    """Join one day and one clock time of one predicate said in one sentence.

    Only an unambiguous pair joins: "Tuesday at 10 or 3" (one day, two clock
    times) stays three values, as does "Monday or Wednesday".
    """
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, fact in enumerate(facts):
        if vocab.spec(fact.predicate).type != "datetime" or window_part(fact.object) is None:
            continue
        sentence = fact.source_span.start if fact.source_span is not None else None
        key = (fact.predicate, fact.polarity, fact.asserted_by, fact.hedged, sentence)
        groups.setdefault(key, []).append(i)
    drop: set[int] = set()
    replace: dict[int, ExtractedFact] = {}
    for members in groups.values():
        parts = [window_part(facts[i].object) for i in members]
        if len(members) != 2 or sorted(parts, key=str) != ["clock", "day"]:
            continue
        day_i, clock_i = (members[0], members[1]) if parts[0] == "day" else (members[1], members[0])
        day, clock = facts[day_i], facts[clock_i]
        value = f"{day.object} {clock.object}"
        first = min(members)
        replace[first] = facts[first].model_copy(
            update={
                "object": value,
                "text": statement(day.predicate, value, day.polarity),
                "confidence": min(day.confidence, clock.confidence),
                "fields": {**clock.fields, **day.fields, "TIME": value},
            }
        )
        drop.add(max(members))
    return [replace.get(i, fact) for i, fact in enumerate(facts) if i not in drop]
