"""Hashed exact fields: same value -> same indices, different value -> different ones."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.encode import hash_query
from pipelines.encode.hashing import N_FEATURES, hash_facts
from schemas.facts import ExtractedFact
from schemas.memory import Polarity


def fact(obj: str, fields: dict[str, str] | None = None, **extra: object) -> ExtractedFact:
    values: dict[str, object] = {
        "tenant_id": "acme",
        "user_id": "u1",
        "event_id": "e1",
        "event_ts": datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        "subject": "phone_number",
        "predicate": "is",
        "object": obj,
        "confidence": 0.9,
        "fields": fields or {},
    }
    return ExtractedFact.model_validate(values | extra)


def test_same_value_maps_to_the_same_indices_in_every_fact() -> None:
    first, second = hash_facts(
        [fact("555-0142", {"NUMBER": "555-0142"}), fact("555-0142", {"NUMBER": "555-0142"})]
    )
    assert first == second
    assert first  # not trivially equal because empty
    assert all(0 <= index < N_FEATURES and value == 1.0 for index, value in first.items())


def test_different_values_map_to_different_indices() -> None:
    first, second = hash_facts(
        [fact("555-0142", {"NUMBER": "555-0142"}), fact("555-0178", {"NUMBER": "555-0178"})]
    )
    # subject and relation features are shared; every value feature differs
    shared = first.keys() & second.keys()
    assert len(shared) == 2
    assert hash_query(["555-0142"]).keys() <= first.keys() - shared
    assert not hash_query(["555-0142"]).keys() & second.keys()


def test_values_are_normalised_before_hashing() -> None:
    assert hash_query(["  Weekend "]) == hash_query(["weekend"])
    assert hash_query(fields={"Place": "New  York"}) == hash_query(fields={"place": "new york"})


def test_query_value_matches_any_field_and_a_named_field_only_its_own() -> None:
    (item,) = hash_facts([fact("monday", {"TIME": "monday 9am", "PLACE": "berlin"})])
    assert hash_query(["monday 9am"]).keys() <= item.keys()
    assert hash_query(fields={"TIME": "monday 9am"}).keys() <= item.keys()
    assert not hash_query(fields={"PLACE": "monday 9am"}).keys() & item.keys()
    two_hits = hash_query(["berlin"], fields={"time": "monday 9am"})
    assert len(two_hits.keys() & item.keys()) == 2


def test_negation_is_part_of_the_exact_relation_feature() -> None:
    affirmed, negated = hash_facts(
        [
            fact("weekend", subject="installation_time", predicate="in"),
            fact("weekend", subject="installation_time", predicate="in", polarity=Polarity.NEGATED),
        ]
    )
    assert affirmed != negated
    assert hash_query(["weekend"]).keys() <= affirmed.keys() & negated.keys()


def test_empty_inputs() -> None:
    assert hash_facts([]) == []
    assert hash_query([]) == {}
    assert hash_query(["   "], fields={"TIME": ""}) == {}
