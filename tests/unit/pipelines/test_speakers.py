"""The names the two speakers go by, and the episodes keyed with them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipelines.encode import Encoder
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import Reviewer, UserMemoryState
from pipelines.speakers import (
    MAX_NAMES_PER_ROLE,
    keyed,
    name_of,
    names_said,
    observe,
    speaker_key,
)
from schemas.events import DialogueEvent, Role
from schemas.ops import OpType
from schemas.topics import DIALOGUE_EVENTS

USER, AGENT = Role.USER, Role.AGENT


@pytest.mark.parametrize(
    ("role", "text", "said"),
    [
        # Addressing the other side names it.
        (USER, "Hannah! Sorry I went quiet after New Year.", [(AGENT, "Hannah")]),
        (USER, "Hi Priya, how was the interview?", [(AGENT, "Priya")]),
        (AGENT, "Don't worry, same here. How are you, Priya?", [(USER, "Priya")]),
        (AGENT, "Well Dermot, are you alive at all?", [(USER, "Dermot")]),
        (USER, "Happy new year Jess!!! Sorry I've been rubbish", [(AGENT, "Jess")]),
        (USER, "Thanks Sarah!", [(AGENT, "Sarah")]),
        (AGENT, "KENJI! It's been ages", [(USER, "Kenji")]),
        # Introducing oneself names one's own side.
        (USER, "Hi, my name is John Smith and my router is down", [(USER, "John")]),
        (AGENT, "Hello, I'm Sarah from the bookings team.", [(AGENT, "Sarah")]),
        # Capitalised words that name nobody.
        (USER, "Impressive! You actually did it", []),
        (USER, "Respect. I'd last about two hours.", []),
        (USER, "Stop!! Photos immediately.", []),
        (USER, "NOOO, poor plant", []),
        (AGENT, "We found a flat in Headingley, Leeds.", []),
        (USER, "Tuesday, if that works?", []),
        (USER, "I'm Fine with that", []),
        (Role.SYSTEM, "Hannah! Hello", []),
    ],
)
def test_names_said(role: Role, text: str, said: list[tuple[Role, str]]) -> None:
    assert list(names_said(role, text)) == said


def test_a_side_goes_by_the_name_heard_most_often() -> None:
    counts: dict[str, dict[str, int]] = {}
    observe(counts, USER, "Brilliant, Gordon!")  # a stray word at first
    assert name_of(counts, AGENT) == "Gordon"
    observe(counts, USER, "Hannah! How's Biscuit?")
    assert name_of(counts, AGENT) == "Gordon"  # a tie keeps the first heard
    observe(counts, USER, "Night, Hannah!")
    assert name_of(counts, AGENT) == "Hannah"
    assert name_of(counts, USER) is None


def test_names_per_side_are_capped_least_heard_first() -> None:
    counts: dict[str, dict[str, int]] = {}
    observe(counts, USER, "Hannah! hi")
    observe(counts, USER, "Hannah! hi")
    for i in range(MAX_NAMES_PER_ROLE + 3):
        observe(counts, USER, f"Thanks {'ABCDEFGHIJKLM'[i]}ax!")
    heard = counts[AGENT.value]
    assert len(heard) == MAX_NAMES_PER_ROLE
    assert name_of(counts, AGENT) == "Hannah"


def test_a_turn_is_keyed_only_once_both_sides_are_named() -> None:
    counts: dict[str, dict[str, int]] = {}
    observe(counts, USER, "Hi, my name is Priya Shah, I'm asking about my locker")
    assert name_of(counts, USER) == "Priya"
    # A customer named to an unnamed agent: the name tells no two speakers apart.
    assert speaker_key(counts, USER) is None
    assert speaker_key(counts, AGENT) is None
    observe(counts, USER, "Thanks Sarah!")
    assert speaker_key(counts, USER) == "Priya"
    assert speaker_key(counts, AGENT) == "Sarah"


def test_keyed_puts_the_name_first_only_when_known() -> None:
    assert keyed("Hannah", "we got a dog") == "Hannah: we got a dog"
    assert keyed(None, "we got a dog") == "we got a dog"


CHAT = [
    (USER, "Hannah! Sorry I went quiet, January ate me alive."),
    (AGENT, "Same here. How are you, Priya?"),
    (USER, "Knackered. I've got an interview at the rugby club next Thursday."),
    (AGENT, "We got a dog! He's called Biscuit, a cocker spaniel."),
]


def _records() -> list[SourceRecord]:
    start = datetime(2027, 2, 7, 19, tzinfo=UTC)
    records = []
    for index, (role, text) in enumerate(CHAT):
        event = DialogueEvent(
            event_id=f"e{index}",
            tenant_id="friends",
            user_id="priya",
            session_id="s1",
            turn_index=index,
            role=role,
            text=text,
            ts=start + timedelta(minutes=index),
        )
        value = event.model_dump_json().encode()
        records.append(SourceRecord(DIALOGUE_EVENTS, 0, index, event.key.encode(), value))
    return records


def _run(
    pipeline: IngestPipeline, batch: int
) -> tuple[list[tuple[str | None, str, list[float] | None]], UserMemoryState]:
    reviewer, states = Reviewer(), dict[str, UserMemoryState]()

    def state_for(key: str) -> UserMemoryState:
        return states.setdefault(key, reviewer.new_state())

    records = _records()
    episodes = []
    for at in range(0, len(records), batch):
        for result in pipeline.process(records[at : at + batch], state_for):
            for op in result.ops:
                if op.op_type is OpType.UPSERT_EPISODE and op.episode is not None:
                    e = op.episode
                    episodes.append((e.speaker, e.search_text(), e.vector))
    return episodes, states["friends:priya"]


def test_episodes_are_keyed_with_their_speakers_name(pipeline: IngestPipeline) -> None:
    episodes, state = _run(pipeline, batch=len(CHAT))
    speakers = [speaker for speaker, _, _ in episodes]
    # The first turn names Hannah (the other side); Priya is named by the
    # second turn, and no turn is keyed until both sides have a name.
    assert speakers == [None, "Hannah", "Priya", "Hannah"]
    assert episodes[3][1].startswith("Hannah: We got a dog!")
    assert UserMemoryState.restore(state.snapshot()).speakers == state.speakers


def test_the_vector_carries_the_name_and_not_the_batching(pipeline: IngestPipeline) -> None:
    together, _ = _run(pipeline, batch=len(CHAT))
    one_by_one, _ = _run(pipeline, batch=1)
    # Batches pad differently, so vectors agree to float noise, not bit for bit.
    assert [e[:2] for e in together] == [e[:2] for e in one_by_one]
    for (_, _, a), (_, _, b) in zip(together, one_by_one, strict=True):
        assert a is not None and b is not None
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    assert isinstance(pipeline.encoder, Encoder)
    named, bare = pipeline.encoder.embed_texts(["Hannah: " + CHAT[3][1], CHAT[3][1]])
    vector = together[3][2]
    assert vector is not None
    assert max(abs(a - b) for a, b in zip(vector, named, strict=True)) < 1e-4
    assert max(abs(a - b) for a, b in zip(vector, bare, strict=True)) > 1e-3
