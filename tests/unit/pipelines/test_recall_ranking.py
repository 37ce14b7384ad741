"""Around the ranking: hits in words (negations kept), filters, weights (tests of the
ranking itself: test_recall_index.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from pipelines.recall import RecallWeights, passes, render_statement, to_hit
from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.query import RecallFilters, RecallHit

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def hit(
    fact_id: str,
    predicate: str,
    obj: str,
    *,
    text: str = "",
    subject: str = "user",
    days_old: float = 0.0,
    tier: Tier = Tier.EPISODIC,
    polarity: Polarity = Polarity.AFFIRMED,
    kind: MemoryKind = MemoryKind.FACT,
    valid_until: datetime | None = None,
    expires_at: datetime | None = None,
    session_id: str | None = "s1",
) -> SearchHit:
    return SearchHit(
        tier=tier,
        fact_id=fact_id,
        chain_id=f"c-{predicate}",
        tenant_id="t",
        user_id="u",
        session_id=session_id,
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        kind=kind,
        text=text,
        version=1,
        valid_from=NOW - timedelta(days=days_old),
        valid_until=valid_until,
        expires_at=expires_at,
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=7, event_id="e7"),
    )


def ids(hits: list[RecallHit]) -> list[str]:
    return [h.fact_id for h in hits]


def test_negated_facts_read_as_negations_never_as_the_positive() -> None:
    positive_text = hit("n1", "accept", "weekend installation", text="", polarity=Polarity.NEGATED)
    assert render_statement(positive_text) == "user does not accept weekend installation"
    wrong_text = hit(
        "n2",
        "accepts",
        "weekend installation",
        text="accepts weekend installation",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(wrong_text) == "user does not accept weekend installation"
    relation = hit("n3", "NOT_IN", "weekend", subject="installation_time")
    assert render_statement(relation) == "installation time not in weekend"
    attribute = hit("n4", "installation_time", "weekend", polarity=Polarity.NEGATED)
    assert render_statement(attribute) == "user not installation time weekend"
    own = hit(
        "n5",
        "installation_time",
        "weekend",
        text="No weekend installation please",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(own) == "No weekend installation please"
    # A store's stand-in document for a record without text reads in words too.
    stand_in = hit(
        "n6",
        "accept",
        "weekend installation",
        text="user NOT accept weekend installation",
        polarity=Polarity.NEGATED,
    )
    assert render_statement(stand_in) == "user does not accept weekend installation"
    plain = hit("a1", "phone_number", "555-0100", text="user phone_number 555-0100")
    assert render_statement(plain) == "user phone number 555-0100"
    found = to_hit(positive_text)
    assert found.statement == "user does not accept weekend installation"
    assert found.polarity is Polarity.NEGATED


def test_filters_narrow_by_tags_kinds_session_and_time() -> None:
    rule = hit("rule", "contact_time", "before 9", kind=MemoryKind.RULE)
    pref = hit("pref", "likes", "tea", kind=MemoryKind.PREFERENCE, session_id="s2", days_old=5)

    def kept(filters: RecallFilters) -> list[str]:
        return [f.fact_id for f in (rule, pref) if passes(f, filters)]

    assert kept(RecallFilters(kinds=[MemoryKind.RULE])) == ["rule"]
    assert kept(RecallFilters(session_id="s2")) == ["pref"]
    assert kept(RecallFilters(tags={"predicate": "likes", "object": "tea"})) == ["pref"]
    assert kept(RecallFilters(since=NOW - timedelta(days=1))) == ["rule"]
    assert kept(RecallFilters(until=NOW - timedelta(days=1))) == ["pref"]
    assert passes(rule, None)
    with pytest.raises(ValidationError):
        RecallFilters.model_validate({"tags": {"tenant": "other"}})


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ValidationError):
        RecallWeights(vector=0.5, keyword=0.3, time=0.1)
    assert RecallWeights() == RecallWeights(vector=0.6, keyword=0.3, time=0.1)
