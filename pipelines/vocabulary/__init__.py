"""The typed predicate vocabulary (predicates.toml), validated at start-up.

``Vocabulary`` answers, for any predicate a fact can carry: its canonical
name (aliases resolved), its value type, its cardinality, what its negation
means and its TTL class; and for any value: its canonical form, whether two
forms are the same value, and why a value does not fit (docs/vocabulary.md).
"""

from __future__ import annotations

import tomllib
from datetime import datetime, timedelta
from enum import StrEnum
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from pipelines.vocabulary.values import (
    VALUE_TYPES,
    ValueType,
    dated_form,
    is_standing_window,
    same_key,
    same_time,
    undated,
)
from schemas.memory import MemoryKind

VOCABULARY_FILE = Path(str(files("pipelines.vocabulary").joinpath("predicates.toml")))


# The value types that name a time: resolved against when they were said.
TIME_TYPES = frozenset({"datetime", "date"})


class Cardinality(StrEnum):
    """Whether a new value supersedes the current one or joins it."""

    SINGLE = "single"
    MULTI = "multi"


class Negation(StrEnum):
    """What "not <value>" means for a predicate (predicates.toml header)."""

    CONSTRAINT = "constraint"
    DISLIKE = "dislike"
    ENDED = "ended"
    DENIED = "denied"


class PredicateSpec(BaseModel):
    """One predicate of the vocabulary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    type: str
    cardinality: Cardinality
    kind: MemoryKind
    negation: Negation
    ttl: str
    aliases: list[str] = Field(default_factory=list)
    negated_aliases: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)
    # The value carries its date, and a new date for the same thing updates it
    # (``chain_key``); set in predicates.toml for events.
    dated: bool = False
    # (Multi-valued only) the value is a kind and a name ("sister ana",
    # "beagle biscuit"); set in predicates.toml for family and pets.
    named: bool = False
    example: str = ""

    @property
    def value_type(self) -> ValueType:
        """The type's normaliser, identity and check."""
        return VALUE_TYPES[self.type]

    @property
    def multi_valued(self) -> bool:
        """Values accumulate, one chain per value."""
        return self.cardinality is Cardinality.MULTI

    def normalise(self, value: str) -> str:
        """The value's one canonical form."""
        value = self.value_type.normalise(value)
        return dated_form(value) if self.dated else value

    def problem(self, value: str) -> str | None:
        """Why a value (in any surface form) does not fit this predicate, or None."""
        value = self.normalise(value)
        if self.type == "enum" and value not in self.values:
            return f"{self.name} is one of {', '.join(self.values)}"
        found = self.value_type.check(value)
        if found is None:
            return None
        article = "an" if self.type[0] in "aeiou" else "a"
        return f"{self.name} takes {article} {self.type} value: {found} ({value!r})"

    def reverses(
        self, head: str, said: str, head_at: datetime | None, said_at: datetime | None
    ) -> bool:
        """Whether ``said``, with the other polarity, reverses ``head``.

        The same value does; a time also reverses a time it narrows or that
        narrows it ("keep Monday at 2pm" ends "not Monday", and back).
        """
        if self.same_value(head, said, head_at, said_at):
            return True
        return self.type in TIME_TYPES and self.same_value(said, head, said_at, head_at)

    def standing(self, value: str) -> bool:
        """Whether an affirmed value is a standing rule, not one occasion of the predicate.

        "Weekdays only" for an installation is a constraint on every booking,
        the affirmed twin of "no weekends": it neither supersedes nor is
        superseded by the booking "Monday at 2pm" (docs/vocabulary.md, Version chains).
        """
        return (
            self.type == "datetime"
            and self.negation is Negation.CONSTRAINT
            and is_standing_window(value)
        )

    def kind_of(self, value: str, *, negated: bool) -> MemoryKind:
        """The kind of a statement of ``value``: a constraint, negated or standing, is a rule."""
        if self.negation is Negation.CONSTRAINT and (negated or self.standing(value)):
            return MemoryKind.RULE
        return self.kind

    def key(self, value: str) -> str:
        """The identity of a value: surface forms of one value share it."""
        return self.value_type.key(self.normalise(value))

    def chain_key(self, value: str) -> str:
        """What names a multi-valued value's version chain.

        The value's identity, except for a dated predicate: there the date is
        the version and the rest names the chain, so "wedding 14 june" then
        "wedding 20 june" is one event moved, not two events.
        """
        if self.dated:
            rest = undated(self.normalise(value))
            if rest:
                return self.value_type.key(rest)
        return self.key(value)

    def names_part_of(self, said: str, held: str) -> bool:
        """Whether ``said`` is ``held`` said by only a part: "sister" or "ana" of "sister ana".

        Only for a ``named`` predicate: once a sister is named, "my sister"
        is her, while "iced coffee" liked does not make "coffee" the same.
        """
        if not self.named:
            return False
        part, whole = set(self.key(said).split()), set(self.key(held).split())
        return bool(part) and part < whole

    def same_value(
        self, a: str, b: str, a_at: datetime | None = None, b_at: datetime | None = None
    ) -> bool:
        """Whether ``b`` states the value ``a`` again, in another surface form.

        With the times each was said, a time naming a day ("monday") is resolved
        to its date, so it matches a CRM's "2026-03-09"; ``b`` may then leave out
        details of ``a`` ("the 15th" re-states "15 april 8am").
        """
        if same_key(self.value_type, self.normalise(a), self.normalise(b)):
            return True
        if self.type in TIME_TYPES and a_at is not None and b_at is not None:
            return same_time(a, a_at, b, b_at)
        return False


# A predicate the vocabulary does not name (an unknown CRM field, an agent's
# own predicate): free text, one value at a time, never expiring.
_OPEN = PredicateSpec(
    type="text",
    cardinality=Cardinality.SINGLE,
    kind=MemoryKind.FACT,
    negation=Negation.DENIED,
    ttl="none",
)


class Vocabulary(BaseModel):
    """The whole predicates.toml, validated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1]
    ttl_classes: dict[str, int]
    predicates: dict[str, PredicateSpec]
    _by_name: dict[str, PredicateSpec] = PrivateAttr()
    _negated: frozenset[str] = PrivateAttr()

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if "none" not in self.ttl_classes or self.ttl_classes["none"] != 0:
            raise ValueError("ttl_classes needs 'none = 0'")
        seen: dict[str, str] = {}
        for name, spec in self.predicates.items():
            if spec.type not in VALUE_TYPES:
                raise ValueError(f"{name}: unknown type {spec.type!r} ({sorted(VALUE_TYPES)})")
            if spec.ttl not in self.ttl_classes:
                raise ValueError(f"{name}: unknown ttl class {spec.ttl!r}")
            if spec.named and not spec.multi_valued:
                raise ValueError(f"{name}: 'named' goes with cardinality 'multi'")
            if (spec.type == "enum") != bool(spec.values):
                raise ValueError(f"{name}: 'values' goes with type 'enum', and only there")
            for alias in [name, *spec.aliases, *spec.negated_aliases]:
                if alias in seen:
                    raise ValueError(f"{alias!r} names both {seen[alias]} and {name}")
                seen[alias] = name
        return self

    def model_post_init(self, context: object, /) -> None:
        """Index every name and alias (case-insensitive)."""
        by_name: dict[str, PredicateSpec] = {}
        negated: set[str] = set()
        for name, spec in self.predicates.items():
            named = spec.model_copy(update={"name": name})
            for alias in [name, *spec.aliases, *spec.negated_aliases]:
                by_name[alias.casefold()] = named
            negated |= {alias.casefold() for alias in spec.negated_aliases}
        self._by_name = by_name
        self._negated = frozenset(negated)

    def spec(self, predicate: str) -> PredicateSpec:
        """The predicate's spec; an unknown predicate is open free text under its own name."""
        found = self._by_name.get(predicate.casefold().strip())
        return found if found is not None else _OPEN.model_copy(update={"name": predicate})

    def knows(self, predicate: str) -> bool:
        """Whether the predicate (or an alias of it) is in the vocabulary."""
        return predicate.casefold().strip() in self._by_name

    def names_negation(self, predicate: str) -> bool:
        """Whether the name means "NOT <its predicate>" ('excluded_ingredients')."""
        return predicate.casefold().strip() in self._negated

    def canonical(self, predicate: str) -> str:
        """The predicate's own name for any alias ('preferred_phone' -> 'phone_number')."""
        return self.spec(predicate).name

    def ttl(self, predicate: str) -> timedelta | None:
        """The base TTL of the predicate's class; None when it never expires."""
        days = self.ttl_classes[self.spec(predicate).ttl]
        return timedelta(days=days) if days else None


def load_vocabulary(path: Path = VOCABULARY_FILE) -> Vocabulary:
    """Read and validate a vocabulary file (the packaged predicates.toml by default)."""
    with path.open("rb") as handle:
        return Vocabulary.model_validate(tomllib.load(handle))


@cache
def default_vocabulary() -> Vocabulary:
    """The packaged vocabulary, loaded once per process."""
    return load_vocabulary()
