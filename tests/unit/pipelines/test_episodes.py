"""Which turns become episodes, and with what context."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.episodes import build_episode, is_empty
from schemas.events import DialogueEvent, Role
from schemas.lineage import SourceLineage

LINEAGE = SourceLineage(topic="dialogue.events", partition=0, offset=1, event_id="ev1")


def turn(text: str, role: Role = Role.USER) -> DialogueEvent:
    return DialogueEvent(
        event_id="ev1",
        tenant_id="t",
        user_id="u",
        session_id="s",
        turn_index=3,
        role=role,
        text=text,
        ts=datetime(2027, 1, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "text", ["hi", "Thanks!", "ok", "Thank you so much, bye", "cheers :)", "lol"]
)
def test_pleasantries_answering_nothing_are_empty(text: str) -> None:
    assert (
        build_episode(turn(text), LINEAGE, previous=(Role.AGENT, "Your order has shipped.")) is None
    )


@pytest.mark.parametrize("text", ["ok", "yes", "sure, thanks"])
def test_an_acknowledgement_of_a_question_is_kept_with_it(text: str) -> None:
    episode = build_episode(turn(text), LINEAGE, previous=(Role.AGENT, "Shall I book Friday at 9?"))
    assert episode is not None
    assert episode.context == "Shall I book Friday at 9?" and episode.context_role is Role.AGENT
    assert "Friday" in episode.search_text()


def test_a_short_answer_carries_the_question_and_a_long_turn_does_not() -> None:
    short = build_episode(turn("07700 900123"), LINEAGE, previous=(Role.AGENT, "Best number?"))
    assert short is not None and short.context == "Best number?"
    long_text = "I moved to Edinburgh in March because my partner got a job at the university there"
    long = build_episode(turn(long_text), LINEAGE, previous=(Role.AGENT, "How are you?"))
    assert long is not None and long.context is None


def test_agent_turns_and_fact_statements_are_part_of_the_episode() -> None:
    episode = build_episode(
        turn("Your reference is KX-4471.", Role.AGENT),
        LINEAGE,
        previous=None,
        fact_ids=["f_1"],
        statements=["user reference KX-4471", "user reference KX-4471"],
    )
    assert episode is not None and episode.role is Role.AGENT
    assert episode.statements == ["user reference KX-4471"]
    assert episode.search_text().endswith("user reference KX-4471")
    assert episode.episode_id.startswith("e_")


def test_is_empty_needs_every_word_to_be_content_free() -> None:
    assert is_empty("hello there", None) is False  # "there" is not in the list: kept
    assert is_empty("good morning", None)
    assert not is_empty("no mornings please", None)
