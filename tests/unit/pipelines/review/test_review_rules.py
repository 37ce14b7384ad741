"""The rules file: validated on load, matched as documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pipelines.review.rules import RULES_FILE, attribute, load_rules


def test_packaged_rules_load() -> None:
    rules = load_rules()
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


def test_unknown_keys_and_categories_are_errors(tmp_path: Path) -> None:
    base = RULES_FILE.read_text(encoding="utf-8")
    with pytest.raises(ValidationError, match="extra"):
        load_rules(_write(tmp_path, base + "\n[[exclusve]]\npredicates = ['a', 'b']\n"))
    bad_category = base.replace('categories = ["meat", "fish"]', 'categories = ["meta"]')
    with pytest.raises(ValidationError, match="unknown"):
        load_rules(_write(tmp_path, bad_category))
    # Value checks moved to the vocabulary: the old section is now an unknown key.
    with pytest.raises(ValidationError, match="extra"):
        load_rules(_write(tmp_path, base + "\n[[impossible]]\nattributes=['x']\n"))
