"""Stage 1 of the review, the fact check: declarative rules from rules.toml.

The rules file is data (mutually exclusive predicates, object categories and
their conflicts); this module validates it into pydantic models and answers
one question about a candidate fact: which current facts does it contradict.
Whether a value fits its predicate at all is the vocabulary's type check
(pipelines/vocabulary).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from schemas.memory import MemoryRecord, Polarity

# Package data, read through importlib.resources (an installed package finds it too).
RULES_FILE = Path(str(files("pipelines.review").joinpath("rules.toml")))
# The extract stage names the user "user" as a subject (pipelines/encode/
# seed_triples.jsonl): (user, likes, tea), but (phone_number, is, +44 ...).
USER_SUBJECT = "user"


def attribute(subject: str, predicate: str) -> str:
    """The attribute a fact sets: "phone_number" for both forms below.

    The predicate of (user, phone_number, X), the subject of (phone_number,
    is, X). TTLs, value types, category conflicts and status keys are keyed by
    it, so both forms behave alike.
    """
    subj = subject.casefold().strip()
    return predicate.casefold().strip() if subj == USER_SUBJECT else subj


def _casefold_all(values: list[str]) -> list[str]:
    return [value.casefold().strip() for value in values]


class _Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExclusiveRule(_Rule):
    """Predicates that cannot all be affirmed for one subject and object."""

    predicates: list[str] = Field(min_length=2)
    reason: str = Field(min_length=1)
    _casefold = field_validator("predicates")(_casefold_all)


class Category(_Rule):
    """Terms that put an object in a category, and qualifiers that cancel it."""

    terms: list[str] = Field(min_length=1)
    unless: list[str] = Field(default_factory=list)
    _casefold = field_validator("terms", "unless")(_casefold_all)
    _terms_re: re.Pattern[str] = PrivateAttr()
    _unless_re: re.Pattern[str] | None = PrivateAttr(default=None)

    def model_post_init(self, context: object, /) -> None:
        """Compile the word matchers once (a plural "s"/"es" is allowed)."""
        self._terms_re = re.compile(_alternation(self.terms, plural=True))
        if self.unless:
            self._unless_re = re.compile(_alternation(self.unless, plural=False))

    def matches(self, obj: str) -> bool:
        """Whether ``obj`` names something of this category."""
        text = obj.casefold()
        if self._unless_re is not None and self._unless_re.search(text):
            return False
        return self._terms_re.search(text) is not None


def _alternation(words: Iterable[str], *, plural: bool) -> str:
    body = "|".join(re.escape(word) for word in words)
    suffix = "(?:e?s)?" if plural else ""
    return rf"(?<![\w-])(?:{body}){suffix}(?![\w-])"


class StandingFact(_Rule):
    """Which current facts a category conflict guards (e.g. diet = vegan)."""

    attributes: list[str] = Field(min_length=1)
    objects: list[str] = Field(min_length=1)
    _casefold = field_validator("attributes", "objects")(_casefold_all)


class CategoryConflict(_Rule):
    """A standing fact that makes new facts of some categories suspicious."""

    name: str = Field(min_length=1)
    when: StandingFact
    attributes: list[str] = Field(min_length=1)
    categories: list[str] = Field(min_length=1)
    reason: str = Field(min_length=1)
    _casefold = field_validator("attributes")(_casefold_all)


@dataclass(frozen=True)
class Contradiction:
    """A current fact that a candidate contradicts, and what to do on strong evidence.

    ``closes`` is True for mutually exclusive facts (the contradicted one
    stops being current when the candidate is committed) and False for
    category conflicts (both stay current; see rules.toml).
    """

    head: MemoryRecord
    rule: str
    reason: str
    closes: bool


class ReviewRules(_Rule):
    """The whole rules file, validated."""

    version: Literal[1]
    exclusive: list[ExclusiveRule] = Field(default_factory=list)
    categories: dict[str, Category] = Field(default_factory=dict)
    category_conflict: list[CategoryConflict] = Field(default_factory=list)
    # Which candidates any contradiction rule can concern: most facts (a phone
    # number, a city) concern none and skip the scan of the current facts.
    _guarded: frozenset[str] = PrivateAttr()

    def model_post_init(self, context: object, /) -> None:
        """Collect the predicates and attributes named by contradiction rules."""
        names = {p for rule in self.exclusive for p in rule.predicates}
        names |= {a for rule in self.category_conflict for a in rule.attributes}
        self._guarded = frozenset(names)

    @model_validator(mode="after")
    def _categories_exist(self) -> Self:
        for conflict in self.category_conflict:
            unknown = sorted(set(conflict.categories) - set(self.categories))
            if unknown:
                raise ValueError(f"category_conflict {conflict.name!r}: unknown {unknown}")
        return self

    def contradictions(
        self,
        subject: str,
        predicate: str,
        obj: str,
        polarity: Polarity,
        current: Iterable[MemoryRecord],
    ) -> list[Contradiction]:
        """The current facts that an affirmed candidate contradicts."""
        attr = attribute(subject, predicate)
        if polarity is not Polarity.AFFIRMED or not {attr, predicate.casefold()} & self._guarded:
            return []
        found = []
        for head in current:
            if head.polarity is not Polarity.AFFIRMED:
                continue
            hit = self._exclusive(subject, predicate, obj, head) or self._category(attr, obj, head)
            if hit is not None:
                found.append(hit)
        return found

    def _exclusive(
        self, subject: str, predicate: str, obj: str, head: MemoryRecord
    ) -> Contradiction | None:
        # Same subject and object, two predicates of one exclusive rule.
        pred, head_pred = predicate.casefold(), head.predicate.casefold()
        if (
            head_pred == pred
            or head.subject.casefold() != subject.casefold()
            or head.object.casefold().strip() != obj.casefold().strip()
        ):
            return None
        for rule in self.exclusive:
            if pred in rule.predicates and head_pred in rule.predicates:
                return Contradiction(head, f"exclusive:{head_pred}/{pred}", rule.reason, True)
        return None

    def _category(self, attr: str, obj: str, head: MemoryRecord) -> Contradiction | None:
        # Any subject: (diet, is, vegan) and (user, ordered, bacon) are both the user's.
        for rule in self.category_conflict:
            standing = (
                attribute(head.subject, head.predicate) in rule.when.attributes
                and head.object.casefold().strip() in rule.when.objects
            )
            if not standing or attr not in rule.attributes:
                continue
            if any(self.categories[name].matches(obj) for name in rule.categories):
                return Contradiction(head, f"category:{rule.name}", rule.reason, False)
        return None


def load_rules(path: Path = RULES_FILE) -> ReviewRules:
    """Read and validate a rules file (the packaged rules.toml by default)."""
    with path.open("rb") as handle:
        return ReviewRules.model_validate(tomllib.load(handle))
