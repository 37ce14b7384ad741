"""One contract: the Kafka decoder and the published JSON Schema agree on every document.

For each input topic the model's verdict (``decode_event``, the path every
Kafka record and ``memstream publish`` line takes) must equal the verdict of
the committed ``schemas/json/<topic>.schema.json`` under a JSON Schema
validator with format checks (jsonschema-rs: ECMA-262 regular expressions, as
the schema's dialect specifies). Three corpora:

- documents generated from the published schema: all must be accepted by
  the model too;
- those documents and the sample events with one field replaced by a drawn
  JSON value (any type, any depth): both accept, or both reject;
- every bundled sample event mutated field by field with boundary values
  (64-bit edges, years 1999/2000/2099/2100, impossible dates, lengths one
  over each limit, nesting one level too deep, wrong types).

The generator is schemathesis's JSON Schema strategy builder (schemathesis is
pinned in requirements.lock for the API fuzz tests). hypothesis-jsonschema
0.23.1 cannot run on the pinned hypothesis 6.170: it calls
``conjecture.utils.many.more()``, which hypothesis no longer has.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from schemathesis.core.jsonschema import CANONICALIZE_DRAFT_BY_VALIDATOR
from schemathesis.generation.jsonschema.builder import build

from memstream.data import sample_dir
from schemas.bounds import INT64_MAX, INT64_MIN
from schemas.export import JSON_DIR
from schemas.topics import INPUT_TOPICS
from schemas.validate import InvalidEvent, decode_event

# Sample events mutated exhaustively per topic (all 403 take 20x longer and add
# no new shapes: the variety is in the values).
SAMPLES_PER_TOPIC = 20


@cache
def published(topic: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((JSON_DIR / f"{topic}.schema.json").read_text("utf-8"))
    return schema


@cache
def validator(topic: str) -> Any:
    return jsonschema_rs.validator_for(published(topic), validate_formats=True)


@cache
def generated(topic: str) -> SearchStrategy[Any]:
    """Documents the published schema admits (formats only annotate: ``ts``'s pattern rules)."""
    draft = CANONICALIZE_DRAFT_BY_VALIDATOR[jsonschema_rs.Draft202012Validator]
    return build(published(topic), draft=draft, formats={})


@cache
def samples(topic: str) -> list[dict[str, Any]]:
    lines = (sample_dir() / f"{topic}.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines[:SAMPLES_PER_TOPIC]]


def encoded(doc: object) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def model_accepts(topic: str, raw: bytes) -> bool:
    try:
        decode_event(topic, raw)
    except InvalidEvent:
        return False
    return True


def schema_accepts(topic: str, raw: bytes) -> bool:
    # The same bytes, decoded as any JSON Schema consumer would decode them.
    return bool(validator(topic).is_valid(json.loads(raw)))


def verdicts(topic: str, doc: object) -> tuple[bool, bool]:
    raw = encoded(doc)
    return model_accepts(topic, raw), schema_accepts(topic, raw)


def nested(depth: int) -> object:
    """An object ``depth`` levels deep (``{"a": {"a": 1}}`` is 2)."""
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


BOUNDARY: list[object] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    3.0,
    3.5,
    -0.0,
    1e300,
    INT64_MAX,
    INT64_MAX + 1,
    INT64_MIN,
    INT64_MIN - 1,
    2**64,
    float(INT64_MAX),
    12345,
    "",
    "3",
    "true",
    "x",
    "has space",
    "acme:eu",
    "x" * 64,
    "x" * 65,
    "x" * 128,
    "x" * 129,
    "x" * 4096,
    "x" * 4097,
    "5" * 4097,  # a lax float would read it
    "2026-03-02T09:00:00Z",
    "2026-03-02T09:00:00.123456+05:30",
    "2026-03-02T09:00:00.1234567Z",
    "2026-03-02T09:00:00",
    "2026-03-02 09:00:00Z",
    "2026-03-02t09:00:00z",
    "2026-03-02T24:00:00Z",
    "2026-03-02T09:00:60Z",
    "2026-03-02T09:00:00+24:00",
    "1999-12-31T23:59:59Z",
    "2000-01-01T00:00:00Z",
    "2099-12-31T23:59:59-12:00",
    "2100-01-01T00:00:00Z",
    "2024-02-29T12:00:00Z",
    "2025-02-29T12:00:00Z",
    "2026-04-31T12:00:00Z",
    "2026-03-02",
    "user",
    "agent",
    "click",
    "store_memory",
    "en",
    "en-US",
    "English",
    [],
    [1, "a"],
    {},
    {"a": 1},
    {"a": "x" * 4097},
    {"a": INT64_MAX + 1},
    {"a": [1, [2, [3]]]},
    {"old": None, "new": "x"},
    {"old": 1, "new": 2**64},
    {"new": {"a": 1}},
    {"k" * 128: 1},
    {"k" * 129: 1},
    {"": 1},
    {str(i): i for i in range(64)},
    {str(i): i for i in range(65)},
    {"a": nested(3)},
    {"a": nested(4)},
    {"a": [1] * 256},
    {"a": [1] * 257},
]


def field_paths(topic: str) -> list[tuple[str, ...]]:
    """Every top-level field, one unknown one, and a key inside each free-form map."""
    top = [(name,) for name in published(topic)["properties"]]
    inner = [
        ("metadata", "a"),
        ("properties", "a"),
        ("changes", "phone"),
        ("changes", "phone", "new"),
    ]
    return top + [("unknown_field",)] + [p for p in inner if (p[0],) in top]


def mutated(doc: dict[str, Any], path: tuple[str, ...], value: object) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    target: Any = out
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    if value is DELETE:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return out


DELETE = object()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
replacements = st.sampled_from(BOUNDARY) | json_values | st.just(DELETE)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("topic", INPUT_TOPICS)
def test_the_sample_events_are_valid_under_both(topic: str) -> None:
    for doc in samples(topic):
        assert verdicts(topic, doc) == (True, True), doc


@pytest.mark.parametrize("topic", INPUT_TOPICS)
def test_documents_generated_from_the_published_schema_are_accepted_by_the_model(
    topic: str,
) -> None:
    @FAST
    @given(doc=generated(topic))
    def check(doc: dict[str, Any]) -> None:
        model, schema = verdicts(topic, doc)
        assert schema, f"generated an invalid document: {doc}"
        assert model, f"the model rejects a document its schema accepts: {doc}"

    check()


@pytest.mark.parametrize("topic", INPUT_TOPICS)
def test_one_field_replaced_by_any_json_value_gets_the_same_verdict(topic: str) -> None:
    @FAST
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        base = data.draw(st.sampled_from(samples(topic)) | generated(topic))
        path = data.draw(st.sampled_from(field_paths(topic)))
        doc = mutated(base, path, data.draw(replacements))
        model, schema = verdicts(topic, doc)
        assert model == schema, f"model {model}, schema {schema}: {'.'.join(path)} in {doc}"

    check()


@pytest.mark.parametrize("topic", INPUT_TOPICS)
def test_sample_events_mutated_field_by_field_get_the_same_verdict(topic: str) -> None:
    disagreements = []
    checked = 0
    for doc in samples(topic):
        for path in field_paths(topic):
            for value in [*BOUNDARY, DELETE]:
                changed = mutated(doc, path, value)
                model, schema = verdicts(topic, changed)
                checked += 1
                if model != schema:
                    disagreements.append(f"{'.'.join(path)} = {value!r:.60}: model {model}")
    assert checked > 1000
    assert not disagreements, f"{len(disagreements)} of {checked}: " + "; ".join(
        sorted(set(disagreements))[:20]
    )
