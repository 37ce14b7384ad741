"""A tagged free-text value names its thing in the singular: "allergic to cats" is ``cat``.

The labelling guide writes a free-text object with its head noun singular
(benchmarks/devset/LABELLING.md, "Objects": "my two cats" -> ``pet | cat``),
and the rules' phrases already end in their head's lemma
(``candidates.head_word``). The tagger copies its span as written, so "two
gold bangles", "allergic to peanuts" and "no more statins" became plural
values: a different value from the singular one said another day, and a miss
against the guide. The parse knows which word heads the span and whether it
is a plural common noun; only that word changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipelines.extract.candidates import head_word
from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.vocabulary import default_vocabulary

# Value types read as free text, where a head noun is the value's last word.
_NOUN_TYPES = frozenset({"text", "animal", "relative"})
# Predicates whose values are names as their owners write them ("taxis phocéens").
_NAMES_ONLY = frozenset({"employer"})
# Plural-only nouns: their lemma is another word ("glasses" -> "glass").
_PLURAL_ONLY = frozenset(
    {"clothes", "glasses", "sunglasses", "trousers", "jeans", "pants", "shorts", "pyjamas"}
    | {"pajamas", "leggings", "scissors", "binoculars", "goggles", "news", "species", "series"}
    | {"premises", "stairs", "headquarters", "savings", "earnings", "belongings", "outskirts"}
    | {"pilates", "athletics", "gymnastics", "aerobics", "politics", "maths", "physics", "darts"}
    | {"studies", "economics", "electronics", "linguistics", "mathematics", "statistics"}
)
_IRREGULAR = {
    "children": "child", "people": "person", "women": "woman", "men": "man", "teeth": "tooth",
    "feet": "foot", "mice": "mouse", "geese": "goose", "knives": "knife", "wives": "wife",
    "loaves": "loaf", "leaves": "leaf", "shelves": "shelf", "calves": "calf", "wolves": "wolf",
}  # fmt: skip


def singular_head(triple: LearnedTriple, doc: Any) -> LearnedTriple:
    """``triple`` with its value's last word singular when the parse reads it as a plural head."""
    if doc is None or triple.from_context or triple.end <= triple.start:
        return triple
    spec = default_vocabulary().spec(triple.predicate)
    if spec.type not in _NOUN_TYPES or spec.name in _NAMES_ONLY:
        return triple
    span = doc.char_span(triple.start, triple.end, alignment_mode="expand")
    if span is None or not len(span):
        return triple
    head = span.root
    words = triple.obj.split()
    if head.i != span[-1].i or head.tag_ != "NNS" or head.lower_ in _PLURAL_ONLY:
        return triple
    # A name is as it is written: "Taxis Phocéens", "Nando's", "the Perth Shamrocks".
    if head.ent_type_ or any(t.text[:1].isupper() for t in span[1:]) or head.text[:1].isupper():
        return triple
    singular = head_word(head)
    if not words or words[-1] != head.lower_ or not _regular_plural(words[-1], singular):
        return triple
    return replace(triple, obj=" ".join([*words[:-1], singular]))


def _regular_plural(word: str, lemma: str) -> bool:
    """Whether ``word`` is ``lemma`` with an English plural ending, or a common irregular plural.

    The lemmatiser also "singularises" words that are no plural ("ramen" ->
    "raman"): only a change a reader would make is taken.
    """
    if _IRREGULAR.get(word) == lemma:
        return True
    return lemma.isalpha() and (
        word in (f"{lemma}s", f"{lemma}es") or (lemma.endswith("y") and word == f"{lemma[:-1]}ies")
    )
