"""One definition of a fact version: validity and the statement, for records and hits alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import (
    MemoryKind,
    MemoryRecord,
    Polarity,
    Tier,
    label,
    spoken,
    valid_at,
)

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
HOUR = timedelta(hours=1)
LINEAGE = SourceLineage(topic="dialogue.events", partition=0, offset=1, event_id="e1")


def _record(**fields: object) -> MemoryRecord:
    base: dict[str, object] = {
        "fact_id": "f_1",
        "chain_id": "c_1",
        "tenant_id": "t1",
        "user_id": "u1",
        "subject": "user",
        "predicate": "accept",
        "object": "weekend installation",
        "confidence": 0.9,
        "valid_from": T0,
        "recorded_at": T0,
        "lineage": LINEAGE,
    }
    return MemoryRecord.model_validate(base | fields)


@pytest.mark.parametrize(
    ("at", "until", "expires", "holds"),
    [
        (T0 - HOUR, None, None, False),  # before valid_from
        (T0, None, None, True),  # valid_from itself is inside
        (T0 + 100 * HOUR, None, None, True),  # open-ended
        (T0 + HOUR - timedelta(microseconds=1), T0 + HOUR, None, True),
        (T0 + HOUR, T0 + HOUR, None, False),  # valid_until is outside
        (T0 + HOUR, None, T0 + HOUR, False),  # expired at expires_at
        (T0 + HOUR, None, T0 + 2 * HOUR, True),
        (T0 + HOUR, T0 + 3 * HOUR, T0 + 2 * HOUR, True),
        (T0 + 2 * HOUR, T0 + 3 * HOUR, T0 + 2 * HOUR, False),  # the earlier end wins
    ],
)
def test_validity_edges(
    at: datetime, until: datetime | None, expires: datetime | None, holds: bool
) -> None:
    assert valid_at(at, T0, until, expires) is holds
    record = _record(valid_until=until, expires_at=expires)
    assert record.is_current(at) is holds
    assert SearchHit.from_record(record, Tier.EPISODIC).is_current(at) is holds


def test_label_is_the_text_else_the_triple_with_the_negation_in_capitals() -> None:
    assert label("user", "accept", "tea", Polarity.AFFIRMED) == "user accept tea"
    assert label("installation_time", "in", "weekend", Polarity.NEGATED) == (
        "installation_time NOT in weekend"
    )
    assert label("user", "accept", "tea", Polarity.NEGATED, "no tea") == "no tea"
    negated = _record(polarity=Polarity.NEGATED)
    assert negated.statement() == "user NOT accept weekend installation"


@pytest.mark.parametrize(
    ("subject", "predicate", "obj", "polarity", "text", "said"),
    [
        ("user", "phone_number", "555-0100", Polarity.AFFIRMED, "", "user phone number 555-0100"),
        ("user", "accept", "weekend", Polarity.AFFIRMED, "I do weekends", "I do weekends"),
        ("user", "accepts", "weekend", Polarity.NEGATED, "", "user does not accept weekend"),
        (
            "user",
            "accept",
            "weekend",
            Polarity.NEGATED,
            "I love weekends",
            "user does not accept weekend",
        ),
        ("user", "accept", "weekend", Polarity.NEGATED, "No weekends!", "No weekends!"),
        (
            "installation_time",
            "in",
            "weekend",
            Polarity.NEGATED,
            "",
            "installation time not in weekend",
        ),
        (
            "installation_time",
            "NOT_IN",
            "weekend",
            Polarity.AFFIRMED,
            "",
            "installation time not in weekend",
        ),
        (
            "user",
            "installation_time",
            "weekend",
            Polarity.NEGATED,
            "",
            "user not installation time weekend",
        ),
        ("user", "class", "x", Polarity.NEGATED, "", "user does not class x"),
    ],
)
def test_spoken(
    subject: str, predicate: str, obj: str, polarity: Polarity, text: str, said: str
) -> None:
    assert spoken(subject, predicate, obj, polarity, text) == said


def test_the_stores_label_reads_back_as_no_text() -> None:
    for polarity in Polarity:
        record = _record(polarity=polarity, kind=MemoryKind.PREFERENCE)
        as_stored = SearchHit.from_record(record, Tier.EPISODIC).model_copy(
            update={"text": record.statement()}  # the episodic store's document
        )
        from_triple = SearchHit.from_record(record, Tier.SEMANTIC)
        assert as_stored.statement() == from_triple.statement()
    assert _hit_statement(Polarity.NEGATED) == "user does not accept weekend installation"


def _hit_statement(polarity: Polarity) -> str:
    return SearchHit.from_record(_record(polarity=polarity), Tier.SEMANTIC).statement()
