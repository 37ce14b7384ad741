"""A tagged free-text value's plural head noun is singular, over real parses."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.extract.heads import singular_head
from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.parse import DialogueParser


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def tagged(predicate: str, text: str, words: str) -> LearnedTriple:
    start = text.lower().index(words.lower())
    return LearnedTriple(
        predicate, words.lower(), False, False, 0.9, False, start, start + len(words)
    )


@pytest.mark.parametrize(
    ("predicate", "text", "words", "value"),
    [
        ("allergy", "also i'm allergic to dogs so. logistics", "dogs", "dog"),
        (
            "medication",
            "Cortisone injections now, two so far. Better.",
            "Cortisone injections",
            "cortisone injection",
        ),
        (
            "owns",
            "Two gold bangles and a gold necklace, all 22 carat.",
            "gold bangles",
            "gold bangle",
        ),
        ("family_member", "My two brothers still live in Casa.", "brothers", "brother"),
        ("family_member", "the children are all grown up now", "children", "child"),
        # Not plurals, or not a common noun's: as written.
        ("likes", "ramen is the only thing I eat after a shift", "ramen", "ramen"),
        ("hobby", "way better. pilates once a week now", "pilates", "pilates"),
        ("owns", "I need new glasses, these are scratched", "glasses", "glasses"),
        ("employer", "you still work for taxis phocéens?", "taxis phocéens", "taxis phocéens"),
        (
            "hobby",
            "i joined the Perth Shamrocks, gaelic football",
            "Perth Shamrocks",
            "perth shamrocks",
        ),
        # A value whose type is not free text is left to its own normal form.
        ("appointment_time", "Tuesdays and Thursdays suit me", "Tuesdays", "tuesdays"),
    ],
)
def test_a_plural_head_is_singular(
    nlp: Any, predicate: str, text: str, words: str, value: str
) -> None:
    assert singular_head(tagged(predicate, text, words), nlp(text)).obj == value


def test_a_value_read_from_the_turn_before_or_without_a_parse_is_kept(nlp: Any) -> None:
    triple = tagged("allergy", "allergic to cats", "cats")
    assert singular_head(triple, None) == triple
    from_context = LearnedTriple("allergy", "cats", False, False, 0.9, True, 12, 16)
    assert singular_head(from_context, nlp("allergic to cats")) == from_context
