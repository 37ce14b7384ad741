"""The rules file: validated on load, matched as documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pipelines.review.rules import RULES_FILE, attribute, load_rules
from schemas.memory import Polarity


def test_packaged_rules_load() -> None:
    rules = load_rules()
    assert rules.is_multi_valued("LIKES") and not rules.is_multi_valued("phone_number")
    assert {"meat", "fish", "dairy", "egg"} <= set(rules.categories)


@pytest.mark.parametrize(
    ("obj", "meat"),
    [
        ("bacon burger", True),
        ("Two Beef Burgers", True),
        ("hot dog", True),
        ("veggie burger", False),
        ("plant-based sausage", False),
        ("hamster food", False),
        ("hamburger bun", False),  # whole words only: "hamburger" is not listed
    ],
)
def test_category_terms_match_whole_words_and_respect_qualifiers(obj: str, meat: bool) -> None:
    assert load_rules().categories["meat"].matches(obj) is meat


@pytest.mark.parametrize(
    ("subject", "predicate", "obj", "possible"),
    [
        ("user", "phone_number", "+33 (0)1 42 68 53 00", True),
        ("user", "phone_number", "ask my assistant", False),
        ("phone_number", "is", "ask my assistant", False),  # the extract stage's form
        ("user", "email", "ana@example.com", True),
        ("email", "is", "ana at example", False),
        ("age", "is", "42", True),
        ("user", "age", "130", False),
        ("user", "city", "anything at all", True),
    ],
)
def test_impossible_values(subject: str, predicate: str, obj: str, possible: bool) -> None:
    reason = load_rules().impossible_reason(subject, predicate, obj, Polarity.AFFIRMED)
    assert (reason is None) is possible


def test_a_negated_value_is_never_impossible() -> None:
    rules = load_rules()
    assert rules.impossible_reason("user", "phone_number", "a fax", Polarity.NEGATED) is None


@pytest.mark.parametrize(
    ("subject", "predicate", "expected"),
    [("user", "Phone_Number", "phone_number"), ("Diet", "is", "diet"), ("USER", "likes", "likes")],
)
def test_attribute_is_the_predicate_of_the_user_else_the_subject(
    subject: str, predicate: str, expected: str
) -> None:
    assert attribute(subject, predicate) == expected


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_keys_and_categories_and_bad_patterns_are_errors(tmp_path: Path) -> None:
    base = RULES_FILE.read_text(encoding="utf-8")
    with pytest.raises(ValidationError, match="extra"):
        load_rules(_write(tmp_path, base + "\n[[exclusve]]\npredicates = ['a', 'b']\n"))
    bad_category = base.replace('categories = ["meat", "fish"]', 'categories = ["meta"]')
    with pytest.raises(ValidationError, match="unknown"):
        load_rules(_write(tmp_path, bad_category))
    with pytest.raises(ValidationError):
        load_rules(
            _write(tmp_path, base + "\n[[impossible]]\npredicates=['x']\npattern='('\nreason='r'\n")
        )
