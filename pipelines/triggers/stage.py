"""The retrieval-trigger stage: does this user turn need memory, and why?

An explicit memory cue fires alone; otherwise ``implicit_min_signals`` (2)
implicit signals must fire together, as the seed paper proposes; chit-chat
never fires. Each decision lists every signal that fired, also when too few
did, so the cost and the misses can be measured.

The stage reads the session state and then updates it with the turn, so the
next turn is compared with the session including this one. A turn already
decided (same event id, or an index at or before the session's last) changes
nothing: redelivery is safe.
"""

from __future__ import annotations

from pipelines.parse.model import Intent
from pipelines.triggers.config import TriggerConfig
from pipelines.triggers.entities import content_terms, references, undefined
from pipelines.triggers.model import (
    EXPLICIT_SIGNALS,
    Signal,
    SignalName,
    TriggerDecision,
    TriggerReason,
    TriggerTurn,
)
from pipelines.triggers.state import SessionTriggerState, TriggerState
from pipelines.triggers.text_signals import constraint_markers, explicit_cues, negative_emotion
from schemas.events import Role

# Dialogue acts grouped by what the user is doing. Drift is a change between
# two goal groups (task, preference, repair) from one user turn to the next: a
# request after a complaint, a cancellation after an order. Questions and plain
# statements (info) go with any goal, mostly answers to the agent's questions,
# so a change to or from them is no drift: counted as drift they fired on 54 of
# the sample stream's 116 user turns. Chit-chat and unknown-language turns
# belong to no group.
INFO = "info"
INTENT_FAMILIES: dict[Intent, str] = {
    Intent.INQUIRY: INFO,
    Intent.INFORM: INFO,
    Intent.REQUEST: "task",
    Intent.ORDER: "task",
    Intent.COMMITMENT: "task",
    Intent.CONFIRM_ACTION: "task",
    Intent.PREFERENCE: "preference",
    Intent.CORRECTION: "repair",
    Intent.CANCEL_REQUEST: "repair",
    Intent.COMPLAINT: "repair",
}


def decide(state: TriggerState, turn: TriggerTurn, config: TriggerConfig) -> TriggerDecision:
    """Decide whether ``turn`` needs memory, and fold the turn into ``state``."""
    session = state.session(turn.session_id, config.max_sessions)
    earlier = session.decision_for(turn.event_id)
    if earlier is not None:
        return earlier
    if turn.turn_index <= session.last_turn_index:
        return _decision(turn, TriggerReason.STALE, ())
    if turn.role is not Role.USER:
        decision = _decision(turn, TriggerReason.NOT_USER, ())
    elif turn.is_chit_chat or turn.intent is Intent.CHIT_CHAT:
        decision = _decision(turn, TriggerReason.CHIT_CHAT, ())
    else:
        decision = _judge(turn, signals(session, turn, config), config)
    _learn(session, turn, config)
    session.remember(decision, config.max_recent_decisions)
    return decision


def signals(
    session: SessionTriggerState, turn: TriggerTurn, config: TriggerConfig
) -> tuple[Signal, ...]:
    """Every signal that fires for ``turn`` against the session so far (state unchanged)."""
    fired: list[Signal] = []
    english = turn.intent is not Intent.UNKNOWN  # the text rules read English only
    cues = sorted({*turn.memory_cues, *(explicit_cues(turn.text) if english else [])})
    if cues:
        fired.append(Signal(SignalName.MEMORY_CUE, ", ".join(cues)))
    if turn.vector is not None and session.content_turns >= config.semantic_min_turns:
        cos = session.centroid_cosine(turn.vector)
        if cos is not None and cos < config.semantic_max_cosine:
            evidence = f"cosine {cos:.3f} to {session.content_turns} turns"
            fired.append(Signal(SignalName.SEMANTIC_SHIFT, evidence, round(cos, 4)))
    family = INTENT_FAMILIES.get(turn.intent)
    if session.last_user_intent is not None and family not in (None, INFO):
        before = Intent(session.last_user_intent)
        if INTENT_FAMILIES.get(before) not in (family, INFO):
            evidence = f"{before.value} -> {turn.intent.value}"
            fired.append(Signal(SignalName.INTENT_DRIFT, evidence))
    if not english:
        return tuple(fired)
    unknown = undefined(references(turn.text), session.known_terms)
    if unknown:
        evidence = "; ".join(ref.phrase for ref in unknown)
        fired.append(Signal(SignalName.UNDEFINED_ENTITY, evidence, float(len(unknown))))
    markers = constraint_markers(turn.text)
    if markers.total >= config.constraint_min_markers:
        fired.append(Signal(SignalName.CONSTRAINTS, markers.describe(), float(markers.total)))
    emotion = negative_emotion(turn.text, complaint=turn.intent is Intent.COMPLAINT)
    if emotion.score >= config.negative_emotion_min_score:
        evidence = ", ".join(emotion.cues)
        fired.append(Signal(SignalName.NEGATIVE_EMOTION, evidence, emotion.score))
    return tuple(fired)


def _judge(turn: TriggerTurn, fired: tuple[Signal, ...], config: TriggerConfig) -> TriggerDecision:
    if any(signal.name in EXPLICIT_SIGNALS for signal in fired):
        return _decision(turn, TriggerReason.EXPLICIT, fired)
    implicit = {signal.name for signal in fired} - EXPLICIT_SIGNALS
    if len(implicit) >= config.implicit_min_signals:
        return _decision(turn, TriggerReason.IMPLICIT, fired)
    return _decision(turn, TriggerReason.TOO_FEW_SIGNALS, fired)


def _decision(
    turn: TriggerTurn, reason: TriggerReason, fired: tuple[Signal, ...]
) -> TriggerDecision:
    return TriggerDecision(
        event_id=turn.event_id,
        session_id=turn.session_id,
        turn_index=turn.turn_index,
        triggered=reason in (TriggerReason.EXPLICIT, TriggerReason.IMPLICIT),
        reason=reason,
        signals=fired,
    )


def _learn(session: SessionTriggerState, turn: TriggerTurn, config: TriggerConfig) -> None:
    """Fold the turn into the session: its index, words, vector and (a user's) act."""
    session.last_turn_index = turn.turn_index
    if turn.is_chit_chat or turn.intent is Intent.CHIT_CHAT:
        return  # greetings define nothing and would pull the centroid towards "hello"
    session.learn_terms(content_terms(turn.text), config.max_known_terms)
    if turn.vector is not None:
        session.add_vector(turn.vector)
    if turn.role is Role.USER and turn.intent in INTENT_FAMILIES:
        session.last_user_intent = turn.intent.value
