"""The prompt-ready context block: groups by relevance, sources, negations."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.context import EMPTY, group, render_context, source_of
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryState, Polarity, Tier
from schemas.query import RecallHit, ScoreBreakdown

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T1 = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)


def hit(
    fact_id: str,
    statement: str,
    total: float,
    *,
    offset: int = 3,
    turn_id: str | None = None,
    state: MemoryState = MemoryState.COMMITTED,
    valid_until: datetime | None = None,
    polarity: Polarity = Polarity.AFFIRMED,
) -> RecallHit:
    return RecallHit(
        fact_id=fact_id,
        chain_id="c",
        statement=statement,
        subject="user",
        predicate="p",
        object="o",
        polarity=polarity,
        kind=MemoryKind.FACT,
        state=state,
        tier=Tier.EPISODIC,
        score=ScoreBreakdown(vector=total, keyword=total, time=total, total=total),
        version=1,
        valid_from=T0,
        valid_until=valid_until,
        lineage=SourceLineage(
            topic="dialogue.events",
            partition=2,
            offset=offset,
            event_id=f"e-{fact_id}",
            turn_id=turn_id,
        ),
    )


def test_groups_are_relative_to_the_best_hit() -> None:
    hits = [hit("a", "A", 0.5), hit("b", "B", 0.41), hit("c", "C", 0.3), hit("d", "D", 0.1)]
    groups = group(hits)
    assert [h.fact_id for h in groups["Key"]] == ["a", "b"]  # >= 0.8 x 0.5
    assert [h.fact_id for h in groups["Background"]] == ["c"]  # >= 0.5 x 0.5
    assert [h.fact_id for h in groups["Reference"]] == ["d"]


def test_block_lists_groups_in_order_each_line_with_its_source() -> None:
    hits = [
        hit(
            "neg",
            "user does not accept weekend installation",
            0.6,
            turn_id="t-9",
            polarity=Polarity.NEGATED,
        ),
        hit("old", "user phone number 555-0100", 0.1, offset=8, valid_until=T1),
    ]
    block = render_context("  weekend   install ", hits)
    lines = block.splitlines()
    assert lines[0] == 'Memory about this user relevant to "weekend install":'
    assert lines[1] == "Key:"
    assert lines[2] == (
        "- user does not accept weekend installation (since 2026-01-05) "
        "[episodic: dialogue.events/2/3 event e-neg turn t-9]"
    )
    assert lines[3] == "Reference:"
    assert lines[4] == (
        "- user phone number 555-0100 (valid 2026-01-05 to 2026-01-15) "
        "[episodic: dialogue.events/2/8 event e-old]"
    )
    assert "Background:" not in block  # empty groups are left out
    assert "accepts weekend" not in block


def test_pending_items_are_marked_unconfirmed() -> None:
    block = render_context("tea", [hit("p", "user likes tea", 0.4, state=MemoryState.PENDING)])
    assert "- user likes tea (unconfirmed; since 2026-01-05)" in block


def test_no_hits_say_so() -> None:
    assert render_context("anything", []).endswith(EMPTY)


def test_source_names_topic_partition_offset_and_event() -> None:
    assert source_of(hit("x", "X", 0.2)) == "dialogue.events/2/3 event e-x"


def test_facts_come_first_then_the_turns_said() -> None:
    said = hit("e1", "agent: your ticket number is GOA-7781", 0.9).model_copy(
        update={"hit_kind": "episode"}
    )
    fact = hit("f1", "user phone number 07700900123", 0.5)
    block = render_context("ticket", [said, fact])
    lines = block.splitlines()
    assert lines.index("Key:") < lines.index("From the conversations:")
    assert lines[-1].startswith("- 2026-01-05: agent: your ticket number is GOA-7781 (said)")
    assert "phone number" in lines[lines.index("Key:") + 1]


def test_a_facts_source_turn_is_shown_with_the_turns_said_once() -> None:
    # The fact stood for its turn in the ranking; the turn holds the answer.
    source = SourceLineage(topic="dialogue.events", partition=2, offset=9, event_id="e-9")
    turn = "user: For my sister's birthday I got her a yellow dress."
    fact = hit("f1", "user has family member sister", 0.9).model_copy(
        update={"source": turn, "source_lineage": source, "source_at": T1}
    )
    again = hit("f2", "user bought yellow dress", 0.8).model_copy(update={"source": turn})
    said = hit("e1", "user: The earrings match it.", 0.7).model_copy(update={"hit_kind": "episode"})
    lines = render_context("sister birthday gift", [fact, said, again]).splitlines()
    turns = lines[lines.index("From the conversations:") + 1 :]
    assert turns == [
        f"- 2026-01-15: {turn} (said; holds: user has family member sister)"
        " [dialogue.events/2/9 event e-9]",
        "- 2026-01-05: user: The earrings match it. (said) [dialogue.events/2/3 event e-e1]",
    ]
