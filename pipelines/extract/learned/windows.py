"""When time spans of one turn are one window ("Monday" + "at 10am" -> ``monday 10am``).

The labelling guide (benchmarks/devset/LABELLING.md, "Objects") writes a
window said together as one value; older files wrote its parts as separate
facts. One rule decides both readings, so alignment (old labels merged into
windows) and decoding (predicted parts joined) never disagree: each part
adds a kind the window lacks (a day, a date, a time of day), with at most a
few filler tokens between parts and no word that separates alternatives or
clauses. "Monday or Wednesday" stays two facts (same kind, and "or").

A range is the exception to "a new kind": "between 8 am and noon", "from 9
to 5", "between Monday and Wednesday" name one window by its two ends, so a
part of the same kind joins when a range word opened the window and one range
connective stands between them (``closes_range``, decoding only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from pipelines.vocabulary.values import HOURS, MONTHS, WEEKDAYS

# A window's parts sit close: "Monday at 10am", "the Friday, the 28th".
MAX_GAP_TOKENS = 3
# Words that keep two times apart: alternatives ("Monday or 10am"), contrasts
# and sentence ends ("Monday. 10am is taken").
_SEPARATORS = frozenset(
    {"or", "and", "but", "not", "no", "nor", "either", "neither", "instead", "than", "except"}
    | {"unless", "then", "also", ".", "?", "!", ";", "/", "&", "+"}
)
_DAY_WORDS = frozenset(
    {*WEEKDAYS, *(f"{day}s" for day in WEEKDAYS), "weekend", "weekends", "weekday", "weekdays"}
    | {"today", "tomorrow", "tonight", "mon", "tue", "tues", "wed", "weds", "thu", "thur"}
    | {"thurs", "fri", "sat", "sun", "tmrw", "tmr", "tomoz", "2moro"}
)
_DATE_WORDS = frozenset({*MONTHS, *(m[:3] for m in MONTHS), "sept"})
_CLOCK_WORDS = frozenset(
    {"morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "night", "nights"}
    | {"noon", "midday", "midnight", "lunchtime", "lunch", "teatime", "arvo", "eve", "o'clock"}
)
_DATE = re.compile(r"\d{1,2}(?:st|nd|rd|th)|\d{1,4}[-/.]\d{1,2}(?:[-/.]\d{1,4})?")
_CLOCK = re.compile(r"\d{1,2}(?::\d{2})?(?:am|pm|h)|\d{1,2}:\d{2}")
_BARE_NUMBER = re.compile(r"\d{1,2}")


class TimeKind(StrEnum):
    """What a part of a time window names."""

    DAY = "day"  # a weekday or a day relative to today
    DATE = "date"  # a day of the month, a month
    CLOCK = "clock"  # a clock time or a part of the day


def time_kinds(text: str) -> frozenset[TimeKind]:
    """The kinds a time expression names ("Thursday afternoon": a day and a clock)."""
    kinds: set[TimeKind] = set()
    bare = False
    for word in re.findall(r"[a-z0-9:./'-]+", text.casefold()):
        word = word.strip(".'")
        if word in _DAY_WORDS:
            kinds.add(TimeKind.DAY)
        elif word in _DATE_WORDS or _DATE.fullmatch(word):
            kinds.add(TimeKind.DATE)
        elif word in _CLOCK_WORDS or _CLOCK.fullmatch(word):
            kinds.add(TimeKind.CLOCK)
        bare = bare or bool(_BARE_NUMBER.fullmatch(word))
    # A bare number is a clock ("before 9") unless it is a date's day ("4 June").
    if bare and not kinds:
        kinds.add(TimeKind.CLOCK)
    return frozenset(kinds)


def gap_joins(gap: Sequence[str]) -> bool:
    """Whether the tokens between two time parts let them be one window."""
    if len(gap) > MAX_GAP_TOKENS:
        return False
    return not any(t.casefold() in _SEPARATORS or t.casefold().endswith("n't") for t in gap)


def joins(window: frozenset[TimeKind], part: str, gap: Sequence[str]) -> bool:
    """Whether ``part`` extends a window of kinds ``window``: a new kind, a joining gap."""
    kinds = time_kinds(part)
    return bool(window) and bool(kinds) and not kinds & window and gap_joins(gap)


def one_window(first: str, second: str, gap: Sequence[str]) -> bool:
    """Whether two time spans, ``gap`` being the tokens between them, form one window."""
    return joins(time_kinds(first), second, gap)


_RANGE_OPENERS = frozenset({"between", "from"})
_RANGE_LINKS = frozenset({"and", "to", "-", "–", "until", "till", "til", "through", "thru"})


def closes_range(opening: Sequence[str], part: str, gap: Sequence[str]) -> bool:
    """Whether ``part`` is the far end of a range ``opening`` began.

    ``opening`` is the window's words so far with the word just before it
    ("between", "april 15 between 8am"); ``gap`` the tokens up to ``part``.
    """
    if len(gap) != 1 or gap[0].casefold() not in _RANGE_LINKS or not time_kinds(part):
        return False
    return any(word.casefold() in _RANGE_OPENERS for word in opening)


# What a time expression is made of, word by word (``widen``): its parts, and
# the words that link them ("the 8th of December at two o'clock in the afternoon").
_PART_WORDS = (
    _DAY_WORDS
    | _DATE_WORDS
    | _CLOCK_WORDS
    | {"oclock", "half", "quarter", "past", "am", "pm", "a.m.", "p.m."}
)
_LINK_WORDS = frozenset({"of", "the", "at", "in"})
_HOUR_WORDS = frozenset(HOURS)
_NUMBER_PART = re.compile(
    r"\d{1,2}(?:st|nd|rd|th)?|\d{1,2}[:.]\d{2}(?:am|pm)?|\d{1,2}(?:am|pm)|(?:19|20)\d{2}"
)
# A time expression spans a few words; a longer run is several values said in a row.
MAX_WIDENED_TOKENS = 10


def _is_part(words: Sequence[str], i: int) -> bool:
    word = words[i].casefold()
    if word in _PART_WORDS or _NUMBER_PART.fullmatch(word):
        return True
    # "two o'clock", "half past nine": an hour in words only beside its clock word.
    before = words[i - 1].casefold() if i else ""
    after = words[i + 1].casefold() if i + 1 < len(words) else ""
    return word in _HOUR_WORDS and (after in {"o'clock", "oclock"} or before in {"past", "to"})


def widen(words: Sequence[str], first: int, last: int) -> tuple[int, int]:
    """The whole time expression around the tagged part ``words[first:last]``.

    The tagger often marks one part of a date or time and leaves the rest as
    ``O``: "April" of "flying out 3 April", "December" of "the 8th of December
    at two o'clock in the afternoon". Each such part became a value of its own
    ("a contact time of just the month"). The expression grows over the words
    it is made of and their links, and never over a separator, so "Monday or
    Wednesday" and "from 9 to 5" keep their parts apart.
    """
    start, end = first, last
    # Only from an edge that is part of the time (or links to one): a span cut
    # after "between" ("April 15 between") is cut there, and grows no further.
    head, tail = first, last - 1
    while head < tail and words[head].casefold() in _LINK_WORDS:
        head += 1
    while tail > head and words[tail].casefold() in _LINK_WORDS:
        tail -= 1
    while start > 0 and end - start < MAX_WIDENED_TOKENS and _is_part(words, head):
        word = words[start - 1].casefold()
        if _is_part(words, start - 1):
            start -= 1
        elif word in _LINK_WORDS and start > 1 and _is_part(words, start - 2):
            start -= 2
        else:
            break
    while end < len(words) and end - start < MAX_WIDENED_TOKENS and _is_part(words, tail):
        if _is_part(words, end):
            end += 1
            continue
        link = end
        while link < len(words) and words[link].casefold() in _LINK_WORDS:
            link += 1
        if link == end or link >= len(words) or not _is_part(words, link):
            break
        end = link + 1
    return start, end
