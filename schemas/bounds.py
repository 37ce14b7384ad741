"""Bounded, strict field types: every input value fits where it is stored.

One definition serves both write paths. The Kafka input (``schemas.validate``)
and the HTTP API (``jobs.serve.api``) both validate JSON that was already
decoded into Python objects, where pydantic's lax mode would read ``"3"`` or
``true`` as an integer, ``true`` as ``schema_version`` 1 and a number as a
time. The types here refuse all of that, so a document is accepted exactly
when the published JSON Schema (``schemas/json/``) accepts it; the
equivalence test (tests/unit/schemas/test_schema_equivalence.py) checks it.

Why each bound (docs/architecture.md, "Input limits"):

- integers are 64-bit: user states go to the Faust changelog and Flink's
  RocksDB as JSON, whose encoders refuse larger integers (``Integer exceeds
  64-bit range`` stopped a worker once);
- event times are RFC 3339 text with an offset, years 2000 to 2099 as written:
  a time is a fact's validity start, and the review's clock;
- free-form maps (dialogue metadata, action properties, CRM changes) are
  bounded in depth, keys, items and string length, so a state or a store
  record built from them stays small.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    Field,
    Strict,
    StrictBool,
    StringConstraints,
)

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
# Event years as written (the local date of the offset given).
MIN_EVENT_YEAR: Final = 2000
MAX_EVENT_YEAR: Final = 2099
# Free-form maps: objects nest at most this deep (the map itself is level 1).
MAX_MAP_DEPTH: Final = 4
MAX_MAP_KEYS: Final = 64
MAX_LIST_ITEMS: Final = 256
MAX_KEY_CHARS: Final = 128
# The longest text an agent may store (schemas.memory.MemoryRecord.text).
MAX_VALUE_CHARS: Final = 4096
MAX_CRM_FIELDS: Final = 256
# A CRM field's value becomes a fact's object (schemas.facts.ExtractedFact,
# schemas.memory.MemoryRecord), which holds at most this many characters.
MAX_OBJECT_CHARS: Final = 1024


def _json_integer(value: object) -> object:
    """A JSON integer as JSON Schema defines it: a number without a fraction.

    Never a string or a bool (pydantic's lax mode reads ``"3"`` and ``true``
    as integers). ``3.0`` is the integer 3, as the published schema's
    ``"type": "integer"`` says; ``3.5`` is not an integer.
    """
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise ValueError(f"expected a JSON integer, got {_json_type(value)}")


def _json_type(value: object) -> str:
    match value:
        case bool():
            return "a boolean"
        case str():
            return "a string"
        case float():
            return "a number with a fraction"
        case None:
            return "null"
        case _:
            return type(value).__name__


# A 64-bit integer (JSON has no integer size; the stores' encoders have).
# (The bounds come before the validator, so the schema shows them as minimum/maximum.)
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX), BeforeValidator(_json_integer)]
Count64 = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(_json_integer)]
# Literal[1] is lax about 1 == True; JSON Schema's "const": 1 is not.
SchemaVersion1 = Annotated[Literal[1], BeforeValidator(_json_integer)]


# RFC 3339 date-time in the years 2000-2099 with impossible dates left out
# (month lengths, Feb 29 only in leap years: 2000 is one, and no other year
# divisible by 100 is in range). Written as a pattern so the published JSON
# Schema states the same rule that validation applies. [0-9], not \d: Python
# and ECMA disagree on non-ASCII digits.
_D2 = "[0-9]{2}"
_DATE = (
    f"(?:20{_D2}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    "|20(?:0[048]|[2468][048]|[13579][26])-02-29)"
)
_TIME = "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?"
_OFFSET = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
EVENT_TIME_PATTERN: Final = f"^{_DATE}{_TIME}{_OFFSET}$"
_EVENT_TIME = re.compile(EVENT_TIME_PATTERN)


def time_text(value: object) -> object:
    """A JSON time is a string: numbers are refused (pydantic would read epoch seconds)."""
    if value is not None and not isinstance(value, str | datetime):
        raise ValueError("a time is an ISO 8601 string with a UTC offset")
    return value


def _event_time_text(value: object) -> object:
    # Python producers (the SDK, the API's actions) pass datetimes; JSON
    # producers pass text, which must match the pattern as a whole.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or _EVENT_TIME.fullmatch(value) is None:
        raise ValueError(
            "ts must be an RFC 3339 time with an offset in the years "
            f"{MIN_EVENT_YEAR}-{MAX_EVENT_YEAR}, such as 2026-03-02T09:00:00Z"
        )
    return value


def _event_year(value: datetime) -> datetime:
    if not MIN_EVENT_YEAR <= value.year <= MAX_EVENT_YEAR:
        raise ValueError(f"ts must be in the years {MIN_EVENT_YEAR}-{MAX_EVENT_YEAR}")
    return value


EventTime = Annotated[
    AwareDatetime,
    BeforeValidator(_event_time_text),
    AfterValidator(_event_year),
    Field(
        description=(
            f"Event time: RFC 3339 with an offset, years {MIN_EVENT_YEAR}-{MAX_EVENT_YEAR}."
        ),
        json_schema_extra={"pattern": EVENT_TIME_PATTERN},
    ),
]

MapKey = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS)]
MapText = Annotated[str, StringConstraints(max_length=MAX_VALUE_CHARS)]
# Scalar JSON values of free-form maps. An integer beyond 64 bits is read as
# the float it is in JSON's number model (and in the published schema's
# "number"), which every store can hold. Every member is strict: in a union,
# pydantic's lax pass would otherwise read a string that fails its length
# limit as a float ("5555..."). A whole float stays a float (4.0 is not 4).
_MapInt = Annotated[int, Strict(), Field(ge=INT64_MIN, le=INT64_MAX)]
Scalar: TypeAlias = MapText | _MapInt | Annotated[float, Strict()] | StrictBool | None

# Bounded JSON values, one alias per depth (JSON Schema has no depth limit, so
# the depth is spelled out): Value1 holds scalars only, Value2 lists/objects of
# scalars, and so on.
_Value1: TypeAlias = Scalar
_Value2: TypeAlias = (
    Scalar
    | Annotated[list[_Value1], Field(max_length=MAX_LIST_ITEMS)]
    | Annotated[dict[MapKey, _Value1], Field(max_length=MAX_MAP_KEYS)]
)
_Value3: TypeAlias = (
    Scalar
    | Annotated[list[_Value2], Field(max_length=MAX_LIST_ITEMS)]
    | Annotated[dict[MapKey, _Value2], Field(max_length=MAX_MAP_KEYS)]
)
_Value4: TypeAlias = (
    Scalar
    | Annotated[list[_Value3], Field(max_length=MAX_LIST_ITEMS)]
    | Annotated[dict[MapKey, _Value3], Field(max_length=MAX_MAP_KEYS)]
)
# A scalar that can become a fact's object as it is (a CRM field's old or new value).
FactScalar: TypeAlias = (
    Annotated[str, StringConstraints(max_length=MAX_OBJECT_CHARS)]
    | _MapInt
    | Annotated[float, Strict()]
    | StrictBool
    | None
)
ScalarMap = Annotated[dict[MapKey, Scalar], Field(max_length=MAX_MAP_KEYS)]
# MAX_MAP_DEPTH levels of objects or lists: the map, then three below it.
JsonMap = Annotated[dict[MapKey, _Value4], Field(max_length=MAX_MAP_KEYS)]
