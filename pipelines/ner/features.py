"""Word features the tagger embeds instead of a character LSTM.

Flair's ``CharacterEmbeddings`` runs one LSTM call per sentence in Python and
was ~60 % of the tagger's time (bench_stage_speed, profiled). What the tagger
needed from characters is cheap to compute up front: the lower-cased word, its
shape ("Monday" -> "Xx", "0151" -> "ddd", "9am" -> "dx") and its last letters
("-day", "-eet", "-ing"). Each becomes a token label that a ``OneHotEmbeddings``
of that field embeds, so an unseen town or phone number still looks like one.
Training (``pipelines.ner.training``) and prediction (``NerTagger.predict``)
call ``add_features`` on every flair ``Sentence``: the same features both ways.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# The label types, in the (alphabetical) order their embeddings are stacked:
# flair re-sorts stacked embeddings by name on reload (docs/dependencies.md), so any other
# order would reload into a different input layout.
FEATURE_FIELDS = ("lower", "shape", "suffix")
# Digit runs keep up to three "d": an hour (1-2 digits) and a phone-number group
# (3+) look different; letter runs collapse to one or two marks ("Xx", "x").
MAX_DIGIT_RUN = 3
MAX_LETTER_RUN = 1
# Three letters tell weekdays ("day"), streets ("eet", "oad") and -ing verbs apart
# while the suffix vocabulary stays a few hundred entries on memstream/data/ner.
SUFFIX_CHARS = 3


def _char_class(char: str) -> str:
    if char.isdigit():
        return "d"
    if char.isalpha():
        return "X" if char.isupper() else "x"
    return char


def word_shape(text: str) -> str:
    """The collapsed shape of a word: "Monday" -> "Xx", "0151" -> "ddd", "+44" -> "+dd"."""
    shape: list[str] = []
    run = 0
    for char in text:
        mark = _char_class(char)
        run = run + 1 if shape and shape[-1] == mark else 1
        limit = MAX_DIGIT_RUN if mark == "d" else MAX_LETTER_RUN if mark in "Xx" else 1
        if run <= limit:
            shape.append(mark)
    return "".join(shape)


# Chat vocabulary repeats: caching the features of the last words seen makes
# them nearly free; 2**16 entries are a few MB.
@lru_cache(maxsize=2**16)
def token_features(text: str) -> tuple[tuple[str, str], ...]:
    """The (field, value) pairs of one token text, in ``FEATURE_FIELDS`` order."""
    lower = text.lower()
    return (("lower", lower), ("shape", word_shape(text)), ("suffix", lower[-SUFFIX_CHARS:]))


def add_features(sentences: Iterable[Any]) -> None:
    """Label every token of each flair ``Sentence`` with its ``FEATURE_FIELDS`` values."""
    for sentence in sentences:
        for token in sentence:
            for field, value in token_features(token.text):
                token.add_label(field, value)
