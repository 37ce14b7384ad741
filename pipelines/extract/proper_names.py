"""A place or an organisation is its whole proper name: "Saskatoon Blades", not "Saskatoon".

The tagger often marks one word of a name of several ("Hoi" of "Hoi An",
"Roasters" of "Cobble Roasters", "Harbour Commissioners" of "Newlyn Harbour
Commissioners"). Stored that way, the value is a fragment: it matches neither
what the user said nor the same name said whole in another turn. The parse
knows the name's extent: the run of capitalised proper nouns around the
tagged words, with "&" inside it ("Khalid & Partners"). A value that is part
of such a run becomes the whole run.

Only capitalised proper nouns extend a value, and never over a sentence's
first word: "Joined" of "Joined Careem" is capitalised as every opening word
is (the parse may still call it a proper noun). A lower-case name ("hugh owen
library") gives no extent to trust.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipelines.vocabulary import default_vocabulary
from schemas.facts import ExtractedFact, statement

# Predicates whose value is a place or an organisation's name.
NAMED_PLACES = frozenset(
    {"employer", "travel", "lives_in", "hometown", "visited", "lived_in", "studies"}
)
# A proper name of more words than this is a list or a title, not one name.
MAX_NAME_WORDS = 5


def whole_names(facts: Sequence[ExtractedFact], doc: Any) -> list[ExtractedFact]:
    """``facts`` with each place or organisation that is part of a proper name given it whole."""
    vocabulary = default_vocabulary()
    out: list[ExtractedFact] = []
    for fact in facts:
        name = vocabulary.canonical(fact.predicate)
        whole = _whole(fact.object, doc) if name in NAMED_PLACES else None
        if whole is not None:
            value = vocabulary.spec(name).normalise(whole)
            text = statement(fact.predicate, value, fact.polarity)
            fact = fact.model_copy(update={"object": value, "text": text})
        # "Hoi" and "Hoi An", both tagged, are one value once whole.
        if not any(_same(fact, other) for other in out):
            out.append(fact)
    return out


def _same(a: ExtractedFact, b: ExtractedFact) -> bool:
    return (a.predicate, a.object, a.polarity) == (b.predicate, b.object, b.polarity)


def _whole(value: str, doc: Any) -> str | None:
    """The proper name ``value``'s words are a part of in ``doc``, if longer."""
    words = value.casefold().split()
    if not words or doc is None:
        return None
    tokens = [t for t in doc if not t.is_space]
    lowered = [t.lower_ for t in tokens]
    for start in range(len(tokens) - len(words) + 1):
        if lowered[start : start + len(words)] != words:
            continue
        if not all(_proper(t) for t in tokens[start : start + len(words)]):
            continue
        first, last = start, start + len(words) - 1
        while first > 0 and _joins(tokens, first - 1):
            first -= 1
        while last + 1 < len(tokens) and _joins(tokens, last + 1):
            last += 1
        span = tokens[first : last + 1]
        if (first, last) == (start, start + len(words) - 1) or len(span) > MAX_NAME_WORDS:
            return None
        return " ".join(t.text for t in span)
    return None


def _proper(token: Any) -> bool:
    return bool(token.pos_ == "PROPN" and token.text[:1].isupper())


def _joins(tokens: Sequence[Any], i: int) -> bool:
    """Whether ``tokens[i]`` belongs to the name beside it: a proper noun, or "&" between two."""
    token = tokens[i]
    if token.text == "&":
        return 0 < i < len(tokens) - 1 and _proper(tokens[i - 1]) and _proper(tokens[i + 1])
    return _proper(token) and not token.is_sent_start
