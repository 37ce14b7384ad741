"""A relative or pet is its kind and its name, in one value.

The vocabulary keeps a relative or a pet as one value, kind and name together
(``family_member sister ana``, ``pet beagle biscuit``; docs/vocabulary.md,
"named" predicates). People rarely say both in one span:

- the name stands apart from the kind: "a young collie working now, Mot",
  "we got her a cat instead, Pickles", "Bella the staffie", "Ekow, my boy";
- or only one part is said, once the whole is known: "my husband" after
  "my husband Kwame", "mochi is so fat now" after "our cat Mochi".

The tagger finds the part it sees. ``named_beside`` joins a kind to the name
said beside it in the same sentence; ``named_as_held`` gives a part the one
held value it names, so the turn states that value in its one form, as the
version chain already reads it (``PredicateSpec.names_part_of``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.extract.endings import KnownValue
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import MONTHS, WEEKDAYS, kin_forms
from schemas.facts import ExtractedFact, statement

# A name: one capitalised word ("Mot", "Pickles", "O'Neill"); after "called" or
# "named" also a lower-case one ("a little vira-lata called farofa").
_CAPITAL = r"[A-Z][^\W\d_]*(?:['’-][^\W\d_]+)?"
_ANY_CASE = r"[^\W\d_]+(?:['’-][^\W\d_]+)?"
# Capitalised words that are no name: the pronoun, days and months, and the
# words that open a new clause after a comma.
_NOT_NAMES = frozenset(
    {"i", "im", "i'm", "i'd", "i've", "i'll", "ok", "okay", "oh", "ah", "aye", "yeah", "yes"}
    | {"no", "nah", "but", "and", "so", "then", "he", "she", "they", "we", "it", "its", "his"}
    | {"her", "my", "our", "the", "a", "an", "this", "that", "there", "just", "well", "anyway"}
    | {"lol", "haha", "mate", "love", "dear", "god", "christmas", "easter", "mum", "dad"}
    | {*WEEKDAYS, *MONTHS}
)
# Between a kind and its name after a comma: a few words that describe it
# ("a young collie working now, Mot"), none that opens a clause of its own.
_BETWEEN = r"(?:\s+(?!and\b|but\b|who\b|which\b|that\b)[^\W\d_]+){0,3}?"
# What ends a name said after its kind: punctuation, the end, or a clause.
_AFTER = r"(?=\s*(?:[,.!?;:)]|$|\s(?:and|who|is|was|has|had)\b))"


def named_beside(facts: Sequence[ExtractedFact], text: str) -> list[ExtractedFact]:
    """``facts`` with a relative or pet said only by its kind joined to the name beside it."""
    vocabulary = default_vocabulary()
    out = []
    for fact in facts:
        spec = vocabulary.spec(fact.predicate)
        name = _name_beside(fact.object, text) if spec.named else None
        if name is None or any(name.casefold() in other.object.split() for other in facts):
            out.append(fact)
            continue
        value = spec.normalise(f"{fact.object} {name}")
        out.append(_as(fact, value))
    return out


def named_as_held(
    facts: Sequence[ExtractedFact], known: Sequence[KnownValue]
) -> list[ExtractedFact]:
    """``facts`` with a part of a held relative or pet ("my husband") stated as the whole.

    Only when one held value of the predicate has that part, and the turn does
    not name another with it ("my sister" of two sisters stays as said).
    """
    vocabulary = default_vocabulary()
    out = []
    for fact in facts:
        predicate = vocabulary.canonical(fact.predicate)
        spec = vocabulary.spec(predicate)
        if not spec.named:
            out.append(fact)
            continue
        wholes = {
            k.object
            for k in known
            if k.predicate == predicate and spec.names_part_of(fact.object, k.object)
        }
        in_turn = any(
            other is not fact and spec.names_part_of(fact.object, other.object) for other in facts
        )
        out.append(_as(fact, wholes.pop()) if len(wholes) == 1 and not in_turn else fact)
    return out


def _as(fact: ExtractedFact, value: str) -> ExtractedFact:
    text = statement(fact.predicate, value, fact.polarity)
    return fact.model_copy(update={"object": value, "text": text})


def _name_beside(value: str, text: str) -> str | None:
    """The name said beside ``value``'s words in ``text``, if the value has none."""
    words = value.split()
    if not words:
        return None
    said = r"[\s,]+(?:the\s+)?".join(
        "(?:" + "|".join(re.escape(form) for form in kin_forms(w)) + ")" for w in words
    )
    for match in re.finditer(rf"(?<!\w){said}(?!\w)", text, re.IGNORECASE):
        if any(w[0].isupper() and is_name(w) for w in match.group(0).split()[1:]):
            return None  # it is named in its own words ("my sister Ana")
        after = text[match.end() :]
        before = text[: match.start()]
        found = (
            re.match(rf"{_BETWEEN}\s+(?:called|named)\s+({_ANY_CASE}){_AFTER}", after)
            or re.match(rf"{_BETWEEN},\s+({_CAPITAL}){_AFTER}", after)
            or (
                # "Ekow, my boy, ..." is an apposition only with the comma after
                # it: "Haan, my parents are in ..." names nobody.
                re.search(rf"(?<!\w)({_CAPITAL})(?:,\s+(?:my|our|me|mi)|\s+the)\s+$", before)
                if re.match(r"\s*(?:[,.!?;:)]|$)", after) or before.rstrip().endswith(" the")
                else None
            )
        )
        if found is not None and is_name(found.group(1)):
            return found.group(1)
    return None


def is_name(word: str) -> bool:
    """Whether a capitalised word can be a name: no pronoun, day, month or opener."""
    plain = word.strip(",.!?;:")
    return bool(plain) and plain.casefold() not in _NOT_NAMES
