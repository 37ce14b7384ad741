"""A place the speaker has (or has never) been to is a visit, not a trip.

"Never been to Scotland", "finally been to Scotland!!", "been to Bali twice",
"we visited Kyoto": the perfect "been to" and the past "visited" tell of a
place once reached. The vocabulary files that as ``visited`` (multi-valued:
places accumulate, and "never been" denies one), not as ``travel``
(single-valued: the one trip ahead, which the next trip supersedes). The
tagger saw "been to" in few training turns and reads the place as a trip;
the words right before the value decide instead.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipelines.extract.learned.tagging import LearnedTriple

# What comes right before the place: "been to", "been to the", "visited".
# "been in" is left out: "I've been in Leeds five years" is where one lives.
_VISITED = re.compile(r"\b(?:been\s+to|visited)(?:\s+(?:the|a|an))?\s+$", re.IGNORECASE)
# Enough text before a value to hold the cue.
_LOOK_BACK = 24
# "Have you been to Rome?", "she's been to Peru": someone else's visit.
_OTHER_SUBJECT = re.compile(r"\b(?:you|u|ya|ye|he|she|they)\b[^.!?]*$", re.IGNORECASE)


def as_visits(triples: list[LearnedTriple], text: str) -> list[LearnedTriple]:
    """``triples`` with each trip whose place follows "been to" or "visited" filed as a visit."""
    return [
        replace(t, predicate="visited")
        if t.predicate == "travel"
        and not t.from_context
        and t.end > t.start
        and _VISITED.search(text[max(0, t.start - _LOOK_BACK) : t.start])
        and not _OTHER_SUBJECT.search(_clause_before(text, t.start))
        else t
        for t in triples
    ]


def _clause_before(text: str, start: int) -> str:
    """The text from the last sentence end before ``start`` up to it."""
    cut = max(text.rfind(mark, 0, start) for mark in ".!?")
    return text[cut + 1 : start]
