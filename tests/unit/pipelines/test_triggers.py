"""Retrieval triggers: each signal alone, two together, explicit cues, chit-chat, state."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from pipelines.parse.acts import is_filler, memory_cues, sentence_act
from pipelines.parse.model import Intent, ParsedTurn
from pipelines.triggers import (
    SignalName,
    TriggerConfig,
    TriggerDecision,
    TriggerReason,
    TriggerState,
    TriggerTurn,
    decide,
)
from pipelines.triggers.entities import references
from pipelines.triggers.text_signals import constraint_markers, explicit_cues, negative_emotion
from schemas.events import Role

CONFIG = TriggerConfig()
# Hand-made unit vectors: the session talks along NEAR, a far turn points along FAR.
NEAR = (1.0, 0.0, 0.0)
NEAR_TOO = (0.9, 0.1, 0.0)
FAR = (0.0, 1.0, 0.0)


class Session:
    """Feeds one session's turns through the stage, with intents from the parser's rules."""

    def __init__(self, state: TriggerState | None = None, session_id: str = "s1") -> None:
        self.state = state or TriggerState()
        self.session_id = session_id
        self.index = 0

    def say(
        self,
        text: str,
        role: Role = Role.USER,
        vector: Sequence[float] | None = None,
        intent: Intent | None = None,
        event_id: str | None = None,
        index: int | None = None,
    ) -> TriggerTurn:
        turn = TriggerTurn(
            event_id=event_id or f"{self.session_id}-e{self.index}",
            session_id=self.session_id,
            turn_index=self.index if index is None else index,
            role=role,
            text=text,
            intent=intent or sentence_act(text, role),
            memory_cues=tuple(memory_cues(text)),
            is_chit_chat=is_filler(text),
            vector=tuple(vector) if vector is not None else None,
        )
        if index is None:
            self.index += 1
        return turn

    def decide(self, text: str, **kw: Any) -> TriggerDecision:
        return decide(self.state, self.say(text, **kw), CONFIG)


def context(session: Session) -> None:
    """Two on-topic content turns, so the centroid exists (semantic_min_turns = 2)."""
    session.decide("Which broadband plans do you offer", role=Role.AGENT, vector=NEAR)
    session.decide("Tell me about the fibre plans", vector=NEAR_TOO, intent=Intent.INQUIRY)


# --- each implicit signal fires on its own example, and alone does not trigger ---


def test_semantic_shift_fires_alone_and_does_not_trigger() -> None:
    session = Session()
    context(session)
    decision = session.decide("How tall is the tower in the harbour", vector=FAR)
    assert decision.fired == (SignalName.SEMANTIC_SHIFT,)
    assert decision.signals[0].value == pytest.approx(0.0553, abs=0.001)
    assert not decision.triggered
    assert decision.reason is TriggerReason.TOO_FEW_SIGNALS


def test_near_turn_is_no_semantic_shift() -> None:
    session = Session()
    context(session)
    assert session.decide("How fast is the fibre plan", vector=NEAR).fired == ()


def test_semantic_shift_needs_enough_session() -> None:
    session = Session()
    session.decide("Tell me about the fibre plans", vector=NEAR, intent=Intent.INQUIRY)
    assert session.decide("How tall is the tower", vector=FAR).fired == ()


def test_intent_drift_fires_alone_and_does_not_trigger() -> None:
    session = Session()
    assert session.decide("Please send the brochure by post").fired == ()
    decision = session.decide("Actually, email it instead")
    assert decision.fired == (SignalName.INTENT_DRIFT,)
    assert decision.signals[0].evidence == "request -> correction"
    assert not decision.triggered


def test_questions_and_statements_are_no_drift() -> None:
    session = Session()
    session.decide("Please send the brochure by post")
    assert session.decide("What does it cost?").fired == ()  # request -> inquiry
    assert session.decide("I live in Leeds.").fired == ()  # inquiry -> inform


def test_undefined_entity_fires_alone_and_does_not_trigger() -> None:
    # A statement: asked as a question ("What is my membership tier?") it is an
    # explicit reference to what memory holds.
    decision = Session().decide("I'd like to upgrade my membership tier.")
    assert decision.fired == (SignalName.UNDEFINED_ENTITY,)
    assert decision.signals[0].evidence == "my membership tier"
    assert not decision.triggered


def test_entity_the_session_defined_is_not_undefined() -> None:
    session = Session()
    session.decide("Your membership tier is Gold since March.", role=Role.AGENT)
    assert SignalName.UNDEFINED_ENTITY not in session.decide("What does my tier include?").fired


@pytest.mark.parametrize(
    "text", ["I'll have the usual.", "The same as usual, thanks", "Send the one I ordered."]
)
def test_references_to_history_are_undefined(text: str) -> None:
    assert SignalName.UNDEFINED_ENTITY in Session().decide(text).fired


@pytest.mark.parametrize(
    "text", ["I changed my mind.", "Oh my god.", "It was my fault.", "I did my best."]
)
def test_idioms_are_not_entities(text: str) -> None:
    assert references(text) == []


def test_constraints_fire_alone_and_do_not_trigger() -> None:
    decision = Session().decide("Only vegetarian dishes, nothing with nuts, under 20 euros.")
    assert decision.fired == (SignalName.CONSTRAINTS,)
    assert decision.signals[0].value == 4.0
    assert not decision.triggered


def test_few_constraints_do_not_fire() -> None:
    assert Session().decide("See you on Monday.").fired == ()


def test_negative_emotion_fires_alone_and_does_not_trigger() -> None:
    decision = Session().decide("This is absolutely unacceptable!!")
    assert decision.fired == (SignalName.NEGATIVE_EMOTION,)
    assert decision.signals[0].value == 3.0  # word 1 + intensifier 0.5 + "!!" 1 + complaint 0.5
    assert not decision.triggered


@pytest.mark.parametrize(
    "text",
    [
        "Sadly the parcel is late.",  # politeness, no lexicon word
        "That's a bit annoying.",  # one mild word: 1 < 2
        "Not bad at all, really!!",  # negated
        "Great news!!! WE LOVE IT",  # excitement, shouting without a negative word
    ],
)
def test_mild_or_positive_emotion_does_not_fire(text: str) -> None:
    assert negative_emotion(text).score < CONFIG.negative_emotion_min_score


# --- explicit cues fire alone; two implicit signals together trigger ---


@pytest.mark.parametrize(
    "text",
    [
        "Same delivery slot as last time.",
        "As I said, weekdays work best.",
        "Remember what we agreed?",
        "Like before, leave it at the door.",
        "You told me it would be free.",
        "Could you book what I ordered before?",
        "We talked about a discount.",
        "How many weddings did I attend this year?",
        "Which hotel did we stay at in Lisbon?",
        "What's my account number again?",
        "When was my last delivery?",
        "What was my first car?",
        "What is my membership tier?",
        # Any question about the user's own life, in the present too.
        "How many bikes do I currently own?",
        "What time do I usually go to the gym?",
        "Did I finish reading The Nightingale?",
        "Where do we usually park when we visit?",
        "How often do I see my therapist, Dr. Smith?",
        "oh and is my mom still on the medical list?",
        "How much did the emergency callout cost me in the end?",
    ],
)
def test_explicit_cue_triggers_alone(text: str) -> None:
    decision = Session().decide(text)
    assert decision.triggered
    assert decision.reason is TriggerReason.EXPLICIT
    assert SignalName.MEMORY_CUE in decision.fired


def test_parser_cue_counts_as_explicit() -> None:
    turn = Session().say("Same again please.")
    assert turn.memory_cues == ("same again",)
    decision = decide(TriggerState(), turn, CONFIG)
    assert decision.reason is TriggerReason.EXPLICIT


@pytest.mark.parametrize(
    "text",
    [
        "Can you come earlier?",
        "I have never been there before.",
        # Questions that ask nothing of the user's past or details.
        "What time do you open on Sundays?",
        "How do you reset a router?",
        "Which plan is cheapest?",
        "I was wondering what the weather is like.",
        # Requests, questions about the other speaker, statements.
        "Can I pay by card?",
        "Could we move it to Friday?",
        "How was your weekend? Mine was fun.",
        "I wonder what I should cook tonight",
        "We went to Paris. Was it fun? Very.",
        "Do you want me to call you back?",
    ],
)
def test_earlier_and_before_alone_are_no_cue(text: str) -> None:
    assert explicit_cues(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My usual order, but without onions and only two portions.",
            {SignalName.UNDEFINED_ENTITY, SignalName.CONSTRAINTS},
        ),
        (
            "My parcel is a joke, I'm so fed up!!",
            {SignalName.UNDEFINED_ENTITY, SignalName.NEGATIVE_EMOTION},
        ),
        (
            "Never before 9 am, not on Fridays, and no more than 2 calls. Totally unacceptable!!",
            {SignalName.CONSTRAINTS, SignalName.NEGATIVE_EMOTION},
        ),
    ],
)
def test_two_implicit_signals_trigger(text: str, expected: set[SignalName]) -> None:
    decision = Session().decide(text)
    assert set(decision.fired) == expected
    assert decision.triggered
    assert decision.reason is TriggerReason.IMPLICIT


def test_semantic_shift_and_drift_trigger() -> None:
    session = Session()
    session.decide("Which plans do you offer", role=Role.AGENT, vector=NEAR)
    session.decide("Please upgrade me to the fibre plan", vector=NEAR_TOO)
    decision = session.decide("Cancel the gym visit", vector=FAR)
    assert set(decision.fired) == {SignalName.SEMANTIC_SHIFT, SignalName.INTENT_DRIFT}
    assert decision.triggered


def test_one_signal_is_enough_when_configured() -> None:
    config = TriggerConfig(implicit_min_signals=1)
    turn = Session().say("What is my membership tier?")
    assert decide(TriggerState(), turn, config).triggered


# --- chit-chat, other roles, other languages ---


@pytest.mark.parametrize("text", ["Hi!", "Thanks so much!", "ok cool thanks", "Bye, cheers"])
def test_chit_chat_never_triggers(text: str) -> None:
    session = Session()
    context(session)
    decision = session.decide(text, vector=FAR)
    assert not decision.triggered
    assert decision.reason is TriggerReason.CHIT_CHAT
    assert decision.signals == ()


def test_chit_chat_with_a_forced_cue_still_never_triggers() -> None:
    turn = TriggerTurn("e1", "s1", 0, Role.USER, "hi", Intent.CHIT_CHAT, ("last time",), True)
    assert decide(TriggerState(), turn, CONFIG).reason is TriggerReason.CHIT_CHAT


def test_agent_turns_never_trigger() -> None:
    decision = Session().decide("As I said, your order ships on Monday.", role=Role.AGENT)
    assert decision.reason is TriggerReason.NOT_USER
    assert not decision.triggered


def test_unknown_language_reads_only_vectors() -> None:
    session = Session()
    context(session)
    decision = session.decide("我的会员等级是什么？上次说过", vector=FAR, intent=Intent.UNKNOWN)
    assert decision.fired == (SignalName.SEMANTIC_SHIFT,)


# --- decisions, redelivery, state ---


def test_decision_records_signals_and_serialises() -> None:
    decision = Session().decide("My usual order, but without onions and only two portions.")
    data = json.loads(json.dumps(decision.to_dict()))
    assert data["triggered"] is True
    assert [s["name"] for s in data["signals"]] == ["undefined_entity", "constraints"]
    assert type(decision).from_dict(data) == decision


def test_redelivered_turn_gets_its_first_decision_and_changes_nothing() -> None:
    session = Session()
    context(session)
    turn = session.say("What is my membership tier?", vector=FAR)
    first = decide(session.state, turn, CONFIG)
    before = session.state.to_dict()
    assert decide(session.state, turn, CONFIG) == first
    assert session.state.to_dict() == before


def test_stale_turn_changes_nothing() -> None:
    session = Session()
    context(session)
    before = session.state.to_dict()
    old = session.say("Something new about my account", index=0, event_id="other-id")
    decision = decide(session.state, old, CONFIG)
    assert decision.reason is TriggerReason.STALE
    assert not decision.triggered
    assert session.state.to_dict() == before


def test_state_round_trips_through_json_and_decides_alike() -> None:
    session = Session()
    context(session)
    session.decide("Please upgrade me, my contract ends in May", vector=NEAR)
    restored = TriggerState.from_dict(json.loads(json.dumps(session.state.to_dict())))
    assert restored.to_dict() == session.state.to_dict()
    nxt = session.say("Cancel the gym visit, it's a joke!!", vector=FAR)
    assert decide(restored, nxt, CONFIG) == decide(session.state, nxt, CONFIG)


def test_state_stays_bounded() -> None:
    config = TriggerConfig(max_sessions=3, max_known_terms=20, max_recent_decisions=5)
    state = TriggerState()
    for s in range(10):
        session = Session(state, session_id=f"s{s}")
        for i in range(50):
            turn = session.say(f"word{i} term{i} thing{s}x{i} about plans", vector=(1.0, i, s))
            decide(state, turn, config)
    assert len(state.sessions) == 3
    assert state.sessions_evicted == 7
    for kept in state.sessions.values():
        assert len(kept.known_terms) == 20
        assert len(kept.recent) == 5
        assert len(kept.centroid_sum) == 3
        assert kept.content_turns == 50
    assert len(json.dumps(state.to_dict())) < 20_000


def test_new_vector_size_restarts_the_centroid() -> None:
    session = Session()
    context(session)
    session.decide("Tell me more about the fibre plan", vector=(1.0, 0.0))
    kept = session.state.sessions["s1"]
    assert (len(kept.centroid_sum), kept.content_turns) == (2, 1)


def test_sessions_are_separate() -> None:
    state = TriggerState()
    Session(state, "a").decide("Your membership tier is Gold.", role=Role.AGENT)
    assert SignalName.UNDEFINED_ENTITY in Session(state, "b").decide("my membership tier?").fired


def test_from_parsed_takes_the_parser_view() -> None:
    parsed = ParsedTurn(
        event_id="e9",
        role=Role.USER,
        session_id="s1",
        turn_index=4,
        lang="en",
        intent=Intent.REQUEST,
        memory_cues=["last time"],
    )
    turn = TriggerTurn.from_parsed(parsed, "Same as last time please", [0.5, 0.5])
    assert (turn.event_id, turn.turn_index, turn.intent) == ("e9", 4, Intent.REQUEST)
    assert turn.memory_cues == ("last time",) and turn.vector == (0.5, 0.5)


def test_constraint_markers_name_their_kinds() -> None:
    found = constraint_markers("No later than 5 pm on Friday, at most £40.")
    assert [kind for kind, _ in found.markers] == ["limit", "time", "time", "limit", "quantity"]


def test_settings_carry_the_trigger_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstream.settings import Settings

    assert Settings(_env_file=None).triggers == TriggerConfig()
    monkeypatch.setenv("MEMSTREAM_TRIGGERS__SEMANTIC_MAX_COSINE", "0.2")
    assert Settings(_env_file=None).triggers.semantic_max_cosine == 0.2


@pytest.mark.parametrize(
    ("text", "markers"),
    [
        ("May I ask something?", 0),  # a modal, not the month
        ("Let's keep Monday after all.", 1),  # an idiom: only Monday counts
        ("Sometime in May or by June 3.", 3),
    ],
)
def test_ambiguous_constraint_words(text: str, markers: int) -> None:
    assert constraint_markers(text).total == markers


def test_a_time_is_no_entity_and_a_phrase_is_named_once() -> None:
    assert references("I saw it the other day.") == []
    assert [r.phrase for r in references("Can I have my usual table?")] == ["my usual table"]


def test_state_of_minilm_sized_sessions_stays_small() -> None:
    state = TriggerState()
    for s in range(CONFIG.max_sessions + 4):
        session = Session(state, session_id=f"s{s}")
        for i in range(60):
            vector = [((i * 7 + k * 13 + s) % 17) / 17 - 0.5 for k in range(384)]
            session.decide(f"Topic {i} words w{s}x{i} and plan{i} for my thing{i}", vector=vector)
    assert len(state.sessions) == CONFIG.max_sessions
    size = len(json.dumps(state.to_dict()))
    assert size < 250_000, size


@pytest.mark.parametrize(
    ("text", "phrase", "terms"),
    [
        (
            "What was that restaurant you recommended?",
            "that restaurant you recommended",
            ("restaurant",),
        ),
        ("Book the same hotel as in March.", "the same hotel", ("hotel",)),
        ("Is the last order on its way?", "the last order", ("order",)),
        ("Send it to my work address like before.", "my work address", ("work", "address")),
    ],
)
def test_references_name_their_thing(text: str, phrase: str, terms: tuple[str, ...]) -> None:
    (ref,) = references(text)
    assert (ref.phrase, ref.terms) == (phrase, terms)


def test_a_reference_to_what_the_session_said_is_defined() -> None:
    session = Session()
    session.decide("I recommend the Lotus restaurant on Elm Street.", role=Role.AGENT)
    later = session.decide("What was that restaurant you recommended?")
    assert SignalName.UNDEFINED_ENTITY not in later.fired


def test_ordinal_dates_are_constraints() -> None:
    found = constraint_markers("Away from the 3rd to the 10th, so don't deliver then.")
    assert found.total == 3
