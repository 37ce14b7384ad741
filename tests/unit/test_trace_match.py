"""Which recomputed candidate produced a stored fact (jobs.ops.trace_decisions.match_fact)."""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.ops.trace_decisions import Match, match_fact
from schemas.facts import ExtractedFact
from schemas.hits import SearchHit
from schemas.ids import chain_id, fact_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, Polarity, Tier

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
EVENT = "e-1"


def candidate(predicate: str, obj: str, polarity: Polarity = Polarity.AFFIRMED) -> ExtractedFact:
    return ExtractedFact(
        tenant_id="t",
        user_id="u",
        event_id=EVENT,
        event_ts=T0,
        subject="user",
        predicate=predicate,
        object=obj,
        polarity=polarity,
        confidence=0.9,
    )


def stored(predicate: str, obj: str, polarity: Polarity, *, event_id: str = EVENT) -> SearchHit:
    chain = chain_id("t", "u", "user", predicate)
    return SearchHit(
        tier=Tier.EPISODIC,
        fact_id=fact_id(chain, event_id, obj, polarity.value),
        chain_id=chain,
        tenant_id="t",
        user_id="u",
        subject="user",
        predicate=predicate,
        object=obj,
        polarity=polarity,
        kind=MemoryKind.FACT,
        version=1,
        valid_from=T0,
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=3, event_id=event_id),
    )


def test_the_deterministic_id_picks_the_candidate_even_among_near_twins() -> None:
    found = [
        candidate("contact_time", "before 9am", Polarity.AFFIRMED),
        candidate("contact_time", "before 9am", Polarity.NEGATED),
    ]
    fact = stored("contact_time", "before 9am", Polarity.NEGATED)
    assert match_fact(fact, found) == (1, Match.EXACT)


def test_a_fact_first_stated_by_another_event_matches_by_its_triple() -> None:
    # A merge or a confirmation keeps the id of the version first stated elsewhere.
    fact = stored("phone_number", "07700900123", Polarity.AFFIRMED, event_id="e-0")
    found = [candidate("address", "glasgow"), candidate("Phone_Number", "07700900123")]
    assert match_fact(fact, found) == (1, Match.TRIPLE)


def test_another_value_of_the_same_chain_is_only_a_chain_match() -> None:
    fact = stored("phone_number", "07700900123", Polarity.AFFIRMED)
    assert match_fact(fact, [candidate("phone_number", "07700900999")]) == (0, Match.CHAIN)


def test_nothing_alike_is_no_match() -> None:
    fact = stored("phone_number", "07700900123", Polarity.AFFIRMED)
    assert match_fact(fact, [candidate("address", "glasgow")]) == (None, Match.NONE)
    assert match_fact(fact, []) == (None, Match.NONE)
