"""When two free-text spans of one turn are one value ("my cat ... called Pickle").

The labelling guide (benchmarks/devset/LABELLING.md, "Objects") writes some
free-text values from words that are not side by side: a pet's kind and name
(``cat pickle`` from "a cat, her name is Pickle"), a relation and a name
(``sister kayla`` from "my sister, Kayla,"), an event and its date
(``brother's wedding 14 june`` from "my brother's wedding is on 14 June").
Alignment tags both parts with the value's label, and decoding joins two
tagged parts back into one value. One rule decides both, as
pipelines/extract/learned/windows.py does for time windows, so what the tagger
learns to mark is what decodes to the gold object.

Two parts compose when they complement each other (one is a date or time and
the other is not, or one is a name and the other is not) and stand close
within one sentence. Two parts of the same kind stay two values: "cats and
dogs" are two likes, "Tom and Ellie" two family members.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.extract.learned.windows import time_kinds

# "my sister, who you met at the wedding, Kayla" is rare; "cat ... called Pickle",
# "wedding is on the 14th" sit within a few tokens.
MAX_GAP_TOKENS = 5
# Tokens that end a clause or join alternatives: parts either side are separate.
_SEPARATORS = frozenset({".", "!", "?", ";", ":", "and", "or", "but", "/", "&", "+", "("})
# A name: every word capitalised ("Pickle", "St Mary's", "Kayla").
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*")


def is_name(text: str) -> bool:
    """Whether ``text`` reads as a proper name (every word capitalised)."""
    return _NAME.fullmatch(text.strip()) is not None


def _kind(text: str) -> str:
    if time_kinds(text):
        return "time"
    return "name" if is_name(text) else "thing"


def composes(first: str, second: str, gap: Sequence[str]) -> bool:
    """Whether ``first`` and ``second`` (in text order, ``gap`` between) are one value."""
    if len(gap) > MAX_GAP_TOKENS or any(t.casefold() in _SEPARATORS for t in gap):
        return False
    kinds = {_kind(first), _kind(second)}
    # A thing with a time or a name; a name with a time ("Kayla's wedding ... 14 June").
    return len(kinds) == 2 and kinds != {"name", "time"}
