"""Clean the tagger's spans before they become objects.

A small tagger trained on a few hundred sentences makes boundary errors
("delivery tonight", "3 Elm Road" without ", Leeds", "234 5678" without its
area code) and the odd wild guess ("the" as TIME). These functions trim a span
to the words that can belong to its label, extend numbers and addresses over
their obvious continuation, and drop spans with no word of the label at all.
"""

from __future__ import annotations

import re
from typing import Any

_MONTHS: tuple[str, ...] = (
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
)
_MONTHS += ("october", "november", "december")
# Words that make a span a time ("may" only as a proper noun: the month).
_TIME_CORE = re.compile(
    r"^(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|weekdays?|mornings?|afternoons?"
    r"|evenings?|nights?|arvo|noon|midnight|tonight|today|tomorrow|week|month|year|hours|lunchtime"
    r"|o'clock|[ap]\.?m\.?|mon|tues?|wed|thurs?|thu|fri|weds|sat|sun|wkends?|"
    + "|".join(_MONTHS)
    + r"|.*\d.*)$"
)
# Words that may open a time span before its core ("before 9", "next week").
_TIME_PREFIX = frozenset({"before", "after", "until", "till", "between", "next", "early", "late"})
_TIME_PREFIX |= frozenset({"half", "quarter", "past", "working", "work", "office", "business"})
_TIME_PREFIX |= frozenset({"school", "b4"})
# Durations are not points in time: "it can take 5 days", "in two hours", "one
# more night" ("working hours" is a time: only a counted unit is a duration).
_DURATION_UNITS = frozenset({"days", "minutes", "hours", "weeks", "months", "years"})
_DURATION_UNITS |= frozenset({"day", "minute", "hour", "week", "month", "year", "night", "nights"})
_DURATION_COUNTS = frozenset({"more", "extra", "another", "few", "couple"})
# Inside one TIME span these words start a second time: "Monday at 10am", "Monday after 3pm";
# "Friday instead of Saturday", "June 3 to June 7", "Friday this week" are split too.
_TIME_SPLIT = frozenset({"at", "and", "or", "nor", "instead", "of", "rather", "than", "to", "this"})
# "2pm today", "5am tomorrow": a clock time and a day are two facts (the dev set's
# convention), and "today" alone is too vague to keep.
_TIME_SPLIT_KEEP = frozenset({"before", "after", "today", "tonight", "tomorrow"})


_GREETING_TIMES = frozenset({"morning", "afternoon", "evening", "night"})


def is_time_core(token: Any) -> bool:
    """Whether the token is a word that makes a span a time ("Monday", "9am", "June")."""
    if token.lower_ == "may":
        return bool(token.pos_ == "PROPN")
    return _TIME_CORE.match(token.lower_) is not None


def _trim_time(part: Any) -> Any | None:
    tokens = list(part)
    cores = [i for i, t in enumerate(tokens) if is_time_core(t)]
    if not cores:
        return None
    start = cores[0]
    while start > 0 and tokens[start - 1].lower_ in _TIME_PREFIX:
        start -= 1
    span = part.doc[tokens[start].i : tokens[cores[-1]].i + 1]
    if span.start > 0 and part.doc[span.start - 1].lower_ == "good":
        return None  # "Good morning" greets, it schedules nothing
    if (
        span.start == span.sent.start
        and len(span) == 1
        and span[0].lower_ in _GREETING_TIMES
        and span.end < span.sent.end
        and part.doc[span.end].text in {",", "!"}
    ):
        return None  # "Morning, I need a new tariff": a greeting too ("Thursday, not ..." is not)
    if len(span) == 1 and span[0].text.isdigit():
        return None  # a bare "10" is a size, a count or an hour nobody can place
    if span.start > 0 and part.doc[span.start - 1].lower_ in {"all", "whole"}:
        return None  # "I have physio all morning": a duration, no arrangement
    return span


# A bound the tagger sometimes leaves outside its span ("come after | 11am").
_TIME_BOUNDS = frozenset({"before", "after", "until", "till", "b4"})


def _counted(unit: Any) -> bool:
    """A number or count before a unit: "5 days", "few weeks", "12-month" (tokenised 12 - month)."""
    if unit.i == 0:
        return False
    before = unit.nbor(-1)
    if before.like_num or before.lower_ in _DURATION_COUNTS:
        return True
    return before.text == "-" and unit.i > 1 and unit.nbor(-2).like_num


def time_parts(span: Any) -> list[Any]:
    """The times inside one TIME span, each trimmed to its time words."""
    if span.start > span.sent.start and span.doc[span.start - 1].lower_ in _TIME_BOUNDS:
        span = span.doc[span.start - 1 : span.end]
    if any(t.lower_ in _DURATION_UNITS and _counted(t) for t in span):
        return []
    parts, start = [], span.start
    for token in span:
        if token.i > start and token.lower_ in _TIME_SPLIT:
            parts.append(span.doc[start : token.i])
            start = token.i + 1
        elif token.i > start and token.lower_ in _TIME_SPLIT_KEEP:
            parts.append(span.doc[start : token.i])
            start = token.i
    parts.append(span.doc[start : span.end])
    trimmed = [_trim_time(part) for part in parts if len(part)]
    return [part for part in trimmed if part is not None]


# "My mum's staying with us so Wednesday evenings don't work": a reason's cue
# words are not the time's topic.
CLAUSE_BREAKS = frozenset({",", ";", "but", ":", "so", "because"})


def clause_of(span: Any) -> Any:
    """The tokens between the clause breaks (",", ";", "but") around ``span``."""
    sent, start, end = span.sent, span.start, span.end
    while start > sent.start and span.doc[start - 1].lower_ not in CLAUSE_BREAKS:
        start -= 1
    while end < sent.end and span.doc[end].lower_ not in CLAUSE_BREAKS:
        end += 1
    return span.doc[start:end]


def _capitalised(token: Any) -> bool:
    return bool(token.text[:1].isupper() or token.text[:1].isdigit())


def place_core(span: Any) -> Any | None:
    """Trim to capitalised words; extend a street address over ', Town'; None if no name."""
    doc = span.doc
    start = span.start
    # "5 Mill Street, York": the house number the tagger left outside.
    if start > span.sent.start and doc[start - 1].text.isdigit():
        start -= 1
    tokens = list(doc[start : span.end])
    if all(is_time_core(t) for t in tokens if t.is_alpha):
        return None  # a weekday or month tagged PLACE
    while tokens and not _capitalised(tokens[0]):
        tokens.pop(0)
    while tokens and not _capitalised(tokens[-1]):
        tokens.pop()
    if not any(t.text[:1].isupper() and t.is_alpha for t in tokens):
        return None
    end = tokens[-1].i + 1
    if tokens[0].text[:1].isdigit():
        while end + 1 < len(doc) and doc[end].text == "," and doc[end + 1].text[:1].isupper():
            end += 2
            while end < len(doc) and doc[end].text[:1].isupper() and doc[end].is_alpha:
                end += 1
    return doc[tokens[0].i : end]


def _digits(token: Any) -> bool:
    return bool(re.fullmatch(r"\+?\d[\d-]*", token.text))


def number_core(span: Any) -> Any:
    """Extend a digit span over neighbouring digit groups: '234 5678' -> '0151 234 5678'."""
    doc, start, end = span.doc, span.start, span.end
    if not all(_digits(t) for t in span):
        return span
    while start > span.sent.start and _digits(doc[start - 1]):
        start -= 1
    while end < span.sent.end and _digits(doc[end]):
        end += 1
    # A last digit group glued to markup ("5678</b>") still ends the number.
    if end < span.sent.end and re.match(r"\d{2,}\D", doc[end].text):
        end += 1
    return doc[start:end]


# Unambiguous time expressions the tagger sometimes misses ("no Thursdays",
# "weekend installation"): a gazetteer backs it up; the tagger's spans win on overlap.
_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
# Chat abbreviations of days ("cant do thurs. fri ok"); "sat", "sun" and "wed" are
# left out: they are words ("I sat", "the sun", "we wed") more often than days.
_DAY_ABBREVIATIONS = (
    r"(?:mon|tues?|thurs?|thu|fri|weds|wkends?)\.?(?!\w)|(?-i:Wed)(?!\w)"
    # "sat morning", "sat, not before 9", "not sat this time, sun" -- never "the sun", "I sat".
    r"|(?<!the )(?<!i )(?<!we )(?<!they )(?<!he )(?<!she )(?:sat|sun)"
    r"(?=\s*(?:[,.]|$|\s+(?:morning|afternoon|evening|night|this|\d)))"
)
_PART = r"(?:mornings?|afternoons?|evenings?|nights?|arvo)"
_CLOCK = r"\d{1,2}(?::\d{2})?\s?[ap]\.?m\.?"
# Month names ("Probably in July"); "May" only capitalised, else it is the verb.
_MONTH = "(?:" + "|".join(_MONTHS) + "|(?-i:May))"
TIME_GAZETTEER = re.compile(
    rf"\b(?:(?:before|after|until|b4)\s+(?:{_CLOCK}|\d{{1,2}}(?!\d)|noon|midnight)"
    rf"|(?:{_DAY}|{_DAY_ABBREVIATIONS})(?:\s+{_PART})?|weekends?|weekdays?|{_CLOCK}|tonight|tomorrow(?:\s+{_PART})?"
    rf"|{_MONTH}(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?"
    rf"|(?<=in the )(?:{_PART})|(?<=at )night|working hours|mornings|afternoons|evenings"
    # "the 26th" is a day of the month; "the 3rd floor" is not.
    rf"|(?<=the )\d{{1,2}}(?:st|nd|rd|th)(?!\s+(?:floor|time|row|place|edition)))\b",
    re.IGNORECASE,
)


def _gazetteer_spans(sent: Any, taken: list[Any], regex: re.Pattern[str], label: str) -> list[Any]:
    found: list[Any] = []
    for match in regex.finditer(sent.text):
        span = sent.doc.char_span(
            sent.start_char + match.start(), sent.start_char + match.end(), label=label
        )
        if span is not None and not any(
            span.start < other.end and other.start < span.end for other in taken + found
        ):
            found.append(span)
    return found


def with_gazetteer_times(sent: Any, spans: list[Any]) -> list[Any]:
    """``spans`` with the gazetteer's times, in text order.

    A gazetteer time is added where it overlaps no tagger span but a COMMITMENT
    ("Never mornings though"), and replaces tagger TIME spans it strictly
    contains ("December" inside "December 3").
    """
    times = _gazetteer_spans(sent, [], TIME_GAZETTEER, "TIME")
    kept, added = list(spans), []
    for time in times:
        overlapping = [s for s in kept if s.start < time.end and time.start < s.end]
        if all(s.label_ == "COMMITMENT" for s in overlapping):
            added.append(time)
        elif all(
            s.label_ == "TIME"
            and time.start <= s.start
            and s.end <= time.end
            and len(s) < len(time)
            for s in overlapping
        ):
            kept = [s for s in kept if s not in overlapping]
            added.append(time)
    return sorted(kept + added, key=lambda span: span.start)


# A street address the tagger missed ("5 Mill Street, York."): a house number, one
# to three capitalised words ending in a street-type word, and optionally ", Town".
# Street types: the common British/US ones; anything else is left to the tagger.
_STREET_TYPES = (
    r"(?:Street|St|Road|Rd|Lane|Avenue|Ave|Close|Way|Drive|Place|Square|Crescent|Terrace"
    r"|Court|Gardens|Grove|Hill|Row|Walk|Park|Mews|Boulevard|View|Parade|Rise|Green|Quay)"
)
ADDRESS_GAZETTEER = re.compile(
    rf"\b(?:(?:Flat|Apartment|Apt|Unit) \d{{1,4}}[A-Za-z]?, )?"
    rf"\d{{1,4}}[A-Za-z]? (?:[A-Z][a-z]+ ){{1,3}}{_STREET_TYPES}\b"
    rf"(?:, (?:Flat|Apartment|Apt|Unit|Suite) \w+)?(?:, [A-Z][a-z]+)?"
)


def with_gazetteer_places(sent: Any, spans: list[Any]) -> list[Any]:
    """``spans`` with street addresses from the gazetteer, in text order.

    The address pattern is stricter than the tagger, so on overlap it wins: the
    tagger cuts unseen addresses into odd pieces ("5 Mill Street" as COMMITMENT).
    """
    places = _gazetteer_spans(sent, [], ADDRESS_GAZETTEER, "PLACE")
    kept = [s for s in spans if not any(s.start < p.end and p.start < s.end for p in places)]
    return sorted(kept + places, key=lambda span: span.start)


# A phone number the tagger cut into pieces ("07700 900 553"): digit groups with
# spaces or dashes, 9 digits or more in all (shorter numbers are codes, readings).
PHONE_GAZETTEER = re.compile(r"(?<![\w+])\+?\d{2,5}(?:[ -]\d{2,4}){1,3}(?![\w])")
# A code read out digit by digit: "code's 2 8 1 9", "It is 0 4 7 2 3 1".
SPACED_DIGITS = re.compile(r"(?<![\w.:])\d(?: \d){3,}(?![\w.:]\d)")
_PHONE_DIGITS = 9


def with_gazetteer_phones(sent: Any, spans: list[Any]) -> list[Any]:
    """``spans`` with grouped phone numbers and spelt-out codes as NUMBER spans (they win)."""
    phones = [
        s
        for s in _gazetteer_spans(sent, [], PHONE_GAZETTEER, "NUMBER")
        if sum(c.isdigit() for c in s.text) >= _PHONE_DIGITS
    ]
    phones += _gazetteer_spans(sent, phones, SPACED_DIGITS, "NUMBER")
    kept = [s for s in spans if not any(s.start < p.end and p.start < s.end for p in phones)]
    return sorted(kept + phones, key=lambda span: span.start)


def clean_tagger_spans(spans: list[Any]) -> list[Any]:
    """The tagger's spans without its wild guesses, before any rule reads them.

    A month or weekday tagged PLACE ("Probably in July") becomes a TIME, a long
    bare number tagged TIME ("it says 047719") a NUMBER; a TIME without any time
    word ("no onions" -> "onions") and a PLACE without a capitalised word are
    dropped, so they neither become facts nor hide the words they cover from the
    other rules.
    """
    kept = []
    for span in spans:
        words = [t for t in span if t.is_alpha or t.like_num]
        if span.label_ == "PLACE" and words and all(is_time_core(t) for t in words):
            span.label_ = "TIME"
        # No clock reads like "047719": four digits or more with no colon or am/pm.
        cores = [t for t in span if is_time_core(t)]
        if span.label_ == "TIME" and cores and all(t.is_digit and len(t) >= 4 for t in cores):
            span = span.doc[cores[0].i : cores[-1].i + 1]
            span.label_ = "NUMBER"
        if span.label_ == "TIME" and not any(is_time_core(t) for t in span):
            continue
        if span.label_ == "PLACE" and not any(
            t.text[:1].isupper() and t.pos_ in {"PROPN", "NOUN", "NUM"} for t in words
        ):
            continue  # "Go ahead": a capitalised verb is no place
        kept.append(span)
    return kept
