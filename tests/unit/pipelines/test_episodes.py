"""Which turns become episodes, and with what context."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.episodes import (
    answer_links,
    build_episode,
    is_empty,
    is_short_question,
    session_openings,
)
from schemas.episodes import Episode
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


def _stored(index: int, role: Role, text: str, session: str = "s") -> Episode:
    event = turn(text, role).model_copy(
        update={"turn_index": index, "session_id": session, "event_id": f"ev{session}{index}"}
    )
    made = build_episode(event, LINEAGE, previous=None)
    assert made is not None
    return made


def test_a_short_question_is_answered_by_the_other_speakers_next_turn() -> None:
    asked = _stored(0, Role.AGENT, "Kitchen done? 🙂")
    answer = _stored(1, Role.USER, "done July 3, final bill came to $35,200 with the extras")
    said_more = _stored(2, Role.USER, "Is it bigger than the old one?")  # same speaker next
    after = _stored(3, Role.USER, "and the oven works")
    elsewhere = _stored(4, Role.AGENT, "Iceland still October?", session="other")
    links = answer_links([asked, answer, said_more, after, elsewhere])
    assert links == {asked.episode_id: answer.episode_id}


def test_a_session_is_opened_by_the_agents_first_turn_at_its_start() -> None:
    greets = _stored(0, Role.AGENT, "SoftPure Water, Jenny speaking, how can I help?")
    later = _stored(2, Role.AGENT, "We can fit it on Tuesday")
    after_hello = _stored(1, Role.AGENT, "Morning, you're through to Fellside", session="b")
    hello = _stored(0, Role.USER, "Now then. Got a wall down", session="b")
    # The agent's first turn deep in a session (a greeting skipped as empty) opens nothing.
    deep = _stored(4, Role.AGENT, "The fitter is Gary", session="c")
    users = _stored(0, Role.USER, "hiya, the boiler again", session="d")
    # An assistant's full answer to the user's first request is no greeting.
    answers = _stored(1, Role.AGENT, " ".join(["Here is a packing list for Peru:"] * 12), "e")
    opened = session_openings([later, greets, hello, after_hello, deep, users, answers])
    assert opened == {greets.episode_id, after_hello.episode_id}


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("Kitchen done?", True),
        ("So Ireland, September confirmed? 😀", True),
        ("I booked it.", False),
        (
            "Could you tell me whether the new kitchen, the one we ordered in May, is done?",
            False,
        ),
    ],
)
def test_short_questions(text: str, short: bool) -> None:
    assert is_short_question(text) is short
