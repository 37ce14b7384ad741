"""The kind of value a recall query asks for, and whether a text carries one.

"When are the fitters starting?" asks for a time, "what's it costing us now?"
for an amount of money, "how many are coming?" for a count. Two turns of a
conversation that both carry a value of the asked kind, and both match the
question, are most often two versions of one answer ("we can start on Monday
4th October" ... "the 1st of November, yes please"), though they share few
words: recall then takes the later one as the update of the earlier when the
two are only loosely alike (pipelines/recall_index.py, ``KIND_TOPIC``).

Pure and rule-based: English question words and value shapes. A question this
does not recognise asks for no kind, and recall links updates by topic alone.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pipelines.vocabulary.values import HOURS, MONTHS, WEEKDAYS


class ValueKind(StrEnum):
    """A kind of value a question can ask for."""

    TIME = "time"
    MONEY = "money"
    COUNT = "count"


_ASKS = {
    ValueKind.TIME: re.compile(
        r"\bwhen\b|\b(?:what|which)\s+(?:dates?|days?|times?|months?|years?|weekends?|weeks?|hour)\b"
        r"|\bhow\s+long\b|\bhow\s+soon\b|\bwhat\s+time\b"
    ),
    ValueKind.MONEY: re.compile(
        r"\bhow\s+much\b|\bcost(?:s|ing)?\b|\bprices?\b|\bfees?\b|\bcharg(?:e|es|ed|ing)\b"
        r"|\bdeposit\b|\bbudget\b|\bquote[ds]?\b|\bpay(?:ing)?\b|\bspen[dt]\b|\bsalary\b|\brent\b"
    ),
    ValueKind.COUNT: re.compile(r"\bhow\s+many\b|\bhow\s+often\b|\bwhat\s+number\b"),
}
# Abbreviations that are not also everyday words ("sat", "sun" and "may" the
# modal are; "may" the month is in MONTHS and counted, as it was measured).
CALENDAR_ABBREVIATIONS = (
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "mon", "tue", "tues", "wed", "weds", "thu", "thur", "thurs", "fri",
)  # fmt: skip
_CARRIES = {
    ValueKind.TIME: re.compile(
        r"\b(?:" + "|".join((*MONTHS, *WEEKDAYS, *CALENDAR_ABBREVIATIONS)) + r")\b"
        r"|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}(?:[:.]\d\d)?\s*[ap]\.?m\b|\bo'?clock\b"
        r"|\b(?:today|tomorrow|tonight|yesterday|weekend|noon|midday|midnight)\b"
        r"|\b(?:next|this|last)\s+(?:week|month|year|spring|summer|autumn|fall|winter)\b"
        r"|\b(?:19|20)\d\d\b|\b\d{1,2}[/-]\d{1,2}\b"
        r"|\b(?:\d+|a|an|" + "|".join(HOURS) + r")\s+(?:days?|weeks?|months?|years?|hours?)\b",
        re.IGNORECASE,
    ),
    ValueKind.MONEY: re.compile(
        r"[£$€¥₹]\s?\d|\d\s?(?:k\b|grand\b|quid\b|pounds?\b|dollars?\b|bucks\b|euros?\b"
        r"|rand\b|rupees?\b|naira\b|pesos?\b|cedis?\b|p\b|cents?\b)"
        r"|\b(?:usd|gbp|eur|cad|aud|zar|inr|ngn|php)\s?\d",
        re.IGNORECASE,
    ),
    ValueKind.COUNT: re.compile(
        r"\b\d+\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty"
        r"|thirty|forty|fifty|hundred|dozen|couple|once|twice)\b",
        re.IGNORECASE,
    ),
}


def asked_kind(query: str) -> ValueKind | None:
    """The one kind of value ``query`` asks for, or None (none, or several)."""
    text = query.lower()
    kinds = [kind for kind, pattern in _ASKS.items() if pattern.search(text)]
    return kinds[0] if len(kinds) == 1 else None


def carries(kind: ValueKind, text: str) -> bool:
    """Whether ``text`` holds a value of ``kind`` (a date or clock, an amount, a number)."""
    return _CARRIES[kind].search(text) is not None
