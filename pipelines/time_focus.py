"""Time words in a recall query: the window or the order they ask for.

"What did I book last week?", "the trip in May", "what did I first order?",
"where do I live now?": the words name a window relative to the recall moment
(``as_of``), or ask for the earliest or the latest of several matches. Recall
boosts items inside the window and, for an order, ranks the time component
by age instead of by recency (docs/recall.md).

Pure and rule-based: English calendar words and a few ordering cues. An
expression it does not know leaves the query without a time focus, which is
the recall of a query without time words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

# Outside a window the time score falls to half at one window width (at least this).
MIN_WIDTH_DAYS = 7.0


class Order(StrEnum):
    """Which end of the timeline a query asks for."""

    ANY = "any"
    EARLIEST = "earliest"
    LATEST = "latest"


@dataclass(frozen=True)
class TimeFocus:
    """A half-open window [start, end) and/or an order; None bounds are open."""

    start: datetime | None = None
    end: datetime | None = None
    order: Order = Order.ANY

    @property
    def has_window(self) -> bool:
        return self.start is not None or self.end is not None

    def contains(self, at: datetime) -> bool:
        """Whether ``at`` falls inside the window (always, without one)."""
        return (self.start is None or at >= self.start) and (self.end is None or at < self.end)

    def closeness(self, at: datetime) -> float:
        """1 inside the window, falling off outside it: ``1 / (1 + gap / width)``.

        A window read from words is approximate ("two months ago", a dated
        issue read days later), so a moment just outside it is nearly as
        likely as one inside; the width is the window's own (at least a week).
        """
        if self.contains(at):
            return 1.0
        if self.start is not None and at < self.start:
            gap = self.start - at
        else:
            gap = at - self.end if self.end is not None else timedelta(0)
        width = (
            self.end - self.start
            if self.start is not None and self.end is not None
            else timedelta(days=MIN_WIDTH_DAYS)
        )
        width = max(width, timedelta(days=MIN_WIDTH_DAYS))
        return 1.0 / (1.0 + gap / width)


_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NUMBERS |= {"a couple of": 2, "a few": 3, "several": 4, "couple of": 2, "few": 3}
_NUMBER = r"(\d+|a couple of|couple of|a few|few|several|a|an|one|two|three|four|five|six)"
_UNIT = r"(day|week|month|year)s?"
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"

_AGO = re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+ago\b")
_PAST_N = re.compile(rf"\b(?:last|past|previous)\s+{_NUMBER}\s+{_UNIT}\b")
_LAST_UNIT = re.compile(r"\b(last|this|past|previous)\s+(week|month|year|weekend)\b")
# "in May", "in May 2023", "May 14th", "14 May", "on the 3rd of June": the month
# (the latest one at or before the recall moment unless a year is given).
_IN_MONTH = re.compile(rf"\b(?:in|during|since|early|late|mid|of|on|by)\s+(?:the\s+)?{_MONTH}")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}")
_ANY_MONTH = re.compile(rf"\b{_MONTH}")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
# "before I changed it", "until we moved", "used to": the state a change ended,
# so the earlier turns, though the question also says "changed" or "new". "The
# day before I ..." names a day by an event, no end of the timeline.
_EARLIEST = re.compile(
    r"\b(?:first|originally|original|initially|at first|earliest|to begin with|initial)\b"
    r"|(?<!day )(?<!night )(?<!week )\b(?:before|until|till) (?:i|we)\b|\bused to\b"
)
_LATEST = re.compile(
    r"\b(?:now|currently|current|latest|most recent|recently|these days|nowadays|anymore"
    r"|any more|still|at the moment|new|newest|updated|changed|in the end|ended up|eventually"
    r"|finally|actually)\b"
)


# Questions that relate two events or measure a span between them ("which did I
# buy first, the bed or the pads?", "how many days passed between ...", "how
# long had I used the rug when ..."): their evidence is every event they name,
# so an order word in them asks for no end of the timeline.
_COMPARES = re.compile(
    r"\bhow (?:long|many (?:days|weeks|months|years|times))\b"
    r"|\bbetween\b.+\band\b"
    r"|\b(?:first|earliest|latest|last|before|after)\b[^?]*\bor\b"
    r"|\bor\b[^?]*\b(?:first|earlier|later|before|after)\b"
    r"|\bwhich (?:came|happened|did i \w+) (?:first|earlier|later)\b"
    # Asking for the order of several ("the order of the three trips, from
    # earliest to latest") wants them all, not one end.
    r"|\border (?:of|in which)\b|\bin (?:what|which|chronological) order\b"
    r"|\bearliest to latest\b|\blatest to earliest\b|\bchronologically\b"
)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _month_window(month: int, year: int | None, at: datetime) -> tuple[datetime, datetime]:
    if year is None:
        year = at.year if month <= at.month else at.year - 1
    start = at.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return start, end


def _day_window(day: datetime) -> tuple[datetime, datetime]:
    start = day.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def _window(text: str, at: datetime) -> tuple[datetime | None, datetime | None]:
    if re.search(r"\byesterday\b", text):
        return _day_window(at - timedelta(days=1))
    if re.search(r"\b(?:today|this morning|tonight|this evening)\b", text):
        return _day_window(at)
    if match := _AGO.search(text):
        days = _number(match.group(1)) * _UNITS[match.group(2)]
        # "three weeks ago" is about a moment: a window of half the span around it.
        centre, half = at - timedelta(days=days), timedelta(days=max(1.0, days / 2))
        return centre - half, centre + half
    if match := _PAST_N.search(text):
        return at - timedelta(days=_number(match.group(1)) * _UNITS[match.group(2)]), None
    if match := _LAST_UNIT.search(text):
        which, unit = match.groups()
        days = {"weekend": 7, **_UNITS}[unit]
        if which == "this":
            return at - timedelta(days=days), None
        return at - timedelta(days=2 * days), at
    year_match = _YEAR.search(text)
    year = int(year_match.group(1)) if year_match else None
    for pattern in (_MONTH_DAY, _DAY_MONTH):
        if match := pattern.search(text):
            month_word, day_word = (
                (match.group(1), match.group(2))
                if pattern is _MONTH_DAY
                else (match.group(2), match.group(1))
            )
            start, _ = _month_window(_MONTHS[month_word.rstrip(".")], year, at)
            if 1 <= int(day_word) <= 31:
                try:
                    day = start.replace(day=int(day_word))
                except ValueError:
                    return None, None
                # A dated event is often mentioned a few days before or after it.
                return day - timedelta(days=3), day + timedelta(days=4)
    if match := _IN_MONTH.search(text):
        # "in March and April", "between March and May": every month named.
        tail = text[match.start(1) :]
        months = [_MONTHS[m.group(1).rstrip(".")] for m in _ANY_MONTH.finditer(tail)]
        windows = [_month_window(month, year, at) for month in months]
        return min(w[0] for w in windows), max(w[1] for w in windows)
    if year is not None:
        start = at.replace(year=year, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        return start, start.replace(year=year + 1)
    return None, None


def time_focus(query: str, at: datetime) -> TimeFocus | None:
    """The time focus of ``query`` at the recall moment ``at``, or None."""
    text = query.casefold()
    start, end = _window(text, at)
    order = (
        Order.ANY
        if _COMPARES.search(text)
        else Order.EARLIEST
        if _EARLIEST.search(text)
        else Order.LATEST
        if _LATEST.search(text)
        else Order.ANY
    )
    if start is None and end is None and order is Order.ANY:
        return None
    return TimeFocus(start=start, end=end, order=order)
