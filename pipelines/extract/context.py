"""Turn context of one session: what earlier turns say about the current one.

A short answer only has a meaning next to the question before it: "Wednesday
works." after "When should we deliver?" is a delivery time, and "Yes, that
works." after "Would Saturday morning suit you?" is the user's own appointment
time. ``DialogueContext`` holds exactly that much, as plain serialisable data,
so the extractor stays a pure function ``(turns, context) -> (facts, context)``
and the ingest job keeps the context in its per-user keyed state.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import Field

from pipelines.extract import vocabulary as vocab
from pipelines.extract.endings import KnownValue, remember
from schemas._base import Frozen
from schemas.events import DialogueEvent, Role
from schemas.facts import ExtractedFact
from schemas.memory import Polarity

# A topic cue carries over to answers within two exchanges (agent question, user
# answer, agent confirmation, user follow-up); the dev set has no answer further
# than that from its cue, and older topics mislabel the next subject.
TOPIC_TTL_TURNS = 4
# A user turn that opens with one of these accepts what the agent just offered;
# a hedged yes ("Probably.", "I think so") accepts it with a hedge's confidence.
AFFIRMATION = re.compile(
    r"^\s*(?:(?:hmm+|um+|uh+|oh|well|ah|right)\W+)?"
    r"(?:yes|yeah|yep|sure|ok(?:ay)?|fine|perfect|great|sounds good|that works"
    r"|that'?s fine|that suits me|go ahead|please do|deal|probably|possibly|maybe|perhaps"
    r"|go on|(?:that'?s |that would be |that'?d be )?(?:grand|lovely|brilliant|ideal|splendid"
    r"|marvellous|wonderful|excellent)|(?:that |it )?works(?: for me)?"
    r"|i think so|i guess so)\b(?![^.!?]*\b(?:but|not|n't)\b)",
    re.IGNORECASE,
)


# A user turn that opens with one of these declines what the agent just offered
# ("Would you like our newsletter?" - "No thank you."). "No problem" and "no
# worries" accept; "no, Thursday is better" offers another value, and the
# extractor keeps the offer's predicate out when the user states one.
REFUSAL = re.compile(
    r"^\s*(?:(?:hmm+|um+|uh+|oh|ah|erm)\W+)?"
    r"(?:no|nah|nope|naw|no thanks?|no thank you|not for me|not really|not this time"
    r"|not today|not at the moment|i'?ll pass|i'?m (?:ok|okay|good|fine)(?: thanks)?"
    r"|don'?t bother)\b(?!\W*(?:problem|worries|rush|hurry|bother|doubt)\b)",
    re.IGNORECASE,
)


# An agent question asking the user to choose or state a preference: a verbless
# answer to it ("Tulips.", "Aisle, please.") names what the user likes; a verbless
# answer to any other question ("The kitchen sink leaks.") does not.
CHOICE_QUESTION = re.compile(
    r"\b(?:prefer|preference|like|which|or|what kind|what sort|favourite|fancy)\b",
    re.IGNORECASE,
)


# An agent offer made as a statement: a yes accepts it as it accepts a question.
# Someone can do something ("I can offer Thursday at 9am.", "Amira can do
# Thursday at 6:30pm.", "They can start Monday."), someone has a time free ("Dr
# Patel has Friday at 2:30pm.", "I've got Thursday between 8 and 12."), there is
# a slot ("There's a test on Tuesday 23 June."), or the agent is about to book
# it ("I'll pencil in Sunday at 10am."). A plain statement ("Thursday at 11am
# then.") is only acknowledged by a yes.
_DAY_OR_HOUR = r"(?:(?:mon|tues?|wednes|thurs|fri|satur|sun)(?:day)?s?|\d)"
OFFER_STATEMENT = re.compile(
    r"\b(?:can|could) (?:offer|do|come|start|send|book|fit you in|squeeze you in|see you"
    r"|install|deliver|collect|visit|give you)\b|\bcan give\b|\b(?:how|what) about\b"
    r"|\bthe (?:earliest|first|next|soonest)\b[^.!?]{0,25}\b(?:is|would be)\b"
    r"|\b(?:has|have|'ve got|have got|'s got)\s+(?:(?:a|an|the|some)\s+)?"
    r"(?:(?:slot|space|opening|availability)\b|" + _DAY_OR_HOUR + r")"
    r"|\bthere(?:'s| is) (?:a|an) [^.!?]{0,40}\b(?:on|at|for) (?:the\s+)?"
    + _DAY_OR_HOUR
    + r"|\b(?:i|we)(?:'ll| will) (?:put you down|pencil|book you|request|schedule)\b",
    re.IGNORECASE,
)


class OfferedFact(Frozen):
    """One affirmed fact the agent offered in its last turn (before any user answer)."""

    predicate: str
    object: str


def offered_form(
    predicate: str, value: str, offers: list[OfferedFact], same_type: Callable[[str, str], bool]
) -> OfferedFact | None:
    """The offer a value read in the agent's last turn is part of, if any.

    The tagger reads a "yes" with the question before it, and from that
    context it tags pieces ("April 15" and "noon" of "April 15 between 8 am and
    noon", "10:40" of "10:40 am"): the agent's turn read as a turn of its own
    gave the whole value. Every word of the piece must be in the offer's value
    (a word may be the start of one: "10:40" of "10:40am"), and the two
    predicates must hold the same type of value. Of the offers that hold it,
    the shortest is the one meant ("May 11" of "10:40 am on May 11" rather than
    of a longer offer that also names May 11).
    """
    words = [w for w in _VALUE_WORD.findall(value.casefold()) if w not in _LINKING]
    if not words:
        return None
    best: tuple[int, OfferedFact] | None = None
    for offer in offers:
        if not same_type(predicate, offer.predicate):
            continue
        held = _VALUE_WORD.findall(offer.object.casefold())
        if not all(any(h.startswith(w) for h in held) for w in words):
            continue
        if best is None or len(held) < best[0]:
            best = (len(held), offer)
    return None if best is None else best[1]


_VALUE_WORD = re.compile(r"[\w:@.+-]+")
_LINKING = frozenset({"the", "a", "an", "at", "on", "of", "in", "to", "and", "or"})


# The previous turn kept for the learned extractor's context: a question or offer
# fits in a few hundred characters, and the keyed state stays small.
LAST_TEXT_CHARS = 500


class DialogueContext(Frozen):
    """What the extractor remembers between turns of one session."""

    session_id: str
    user_id: str | None = Field(default=None, description="Whose session (None: unknown).")
    turn_index: int = Field(default=-1, description="Index of the last turn seen.")
    topic: str | None = Field(default=None, description="Predicate of the last time-topic cue.")
    topic_turn: int = Field(default=-1, description="Turn index where ``topic`` was cued.")
    standing_topic: str | None = Field(
        default=None,
        description="The predicate of the first time stated in the user's "
        "conversation (carried into the next session); never expires.",
    )
    place_topic: str | None = Field(
        default=None, description="Predicate (travel, address) of the last place fact."
    )
    offers: list[OfferedFact] = Field(default_factory=list)
    agent_asked: bool = Field(
        default=False, description="The last agent turn asked a question or made an offer."
    )
    number_topic: str | None = Field(
        default=None,
        description="What a bare number answers: the last turns asked for or announced "
        "a door code, meter reading or phone number.",
    )
    agent_asked_allergies: bool = Field(
        default=False, description="That question asked about allergies ('Any allergies?')."
    )
    agent_asked_choice: bool = Field(
        default=False, description="That question asked for a choice or preference."
    )
    known: list[KnownValue] = Field(
        default_factory=list,
        description="The user's values a later turn may say have ended "
        "(pipelines/extract/endings.py); carried into the next session.",
    )
    last_predicate: str | None = None
    last_text: str = Field(
        default="",
        max_length=LAST_TEXT_CHARS,
        description="The session's previous turn (its head): what a bare answer answers.",
    )

    def answer_predicate(self) -> str | None:
        """What a verbless user answer names: an allergy, a thing liked, or nothing."""
        if self.agent_asked_allergies:
            return "allergy"
        return "likes" if self.agent_asked_choice else None

    def topic_for(self, turn_index: int) -> str | None:
        """The time topic still in force at ``turn_index`` (None once it expired)."""
        if self.topic is None or turn_index - self.topic_turn > TOPIC_TTL_TURNS:
            return None
        return self.topic


def turn_topic(doc: Any) -> str | None:
    """The first time-topic cue of a turn (lemmas, as ``vocab.TIME_TOPICS`` orders them)."""
    return vocab.time_topic({t.lemma_.lower() for t in doc} | {t.lower_ for t in doc})


def new_session(event: DialogueEvent, previous: DialogueContext | None) -> DialogueContext:
    """The context of a session's first turn: the user's last topic and known values stand."""
    if previous is None:
        return DialogueContext(session_id=event.session_id, user_id=event.user_id)
    return DialogueContext(
        session_id=event.session_id,
        user_id=event.user_id,
        standing_topic=previous.standing_topic,
        known=previous.known,
    )


def number_topic(question: str) -> str | None:
    """The predicate a bare number answering ``question`` has ("The code for your door?")."""
    words = set(re.findall(r"[a-z]+", question.lower()))
    if words & vocab.CODE_CUES:
        return "door_code"
    if words & vocab.METER_CUES:
        return "meter_reading"
    if words & vocab.PHONE_CUES:
        return "phone_number"
    return None


def _number_topic_after(
    context: DialogueContext, event: DialogueEvent, facts: list[ExtractedFact]
) -> str | None:
    """What a bare number in the next turn answers.

    Set by a turn that names a code, meter or phone number without giving one
    (the agent asking "The code for your door?", the user announcing "I want to
    give you a meter reading."); an agent turn without a cue of its own ("Sure,
    go ahead.") keeps it for the user's next turn; anything else ends it.
    """
    if any("NUMBER" in f.fields for f in facts):
        return None
    cued = number_topic(event.text)
    if cued is not None:
        return cued
    return context.number_topic if event.role is Role.AGENT else None


def is_refusal(text: str) -> bool:
    """A plain no to the previous offer ("No thank you.", "nah, I'm good")."""
    return REFUSAL.search(text) is not None


def is_affirmation(text: str) -> bool:
    """A plain yes to the previous offer ("Yes please.", "That works for me.")."""
    return AFFIRMATION.search(text) is not None


def advance(
    context: DialogueContext,
    event: DialogueEvent,
    facts: list[ExtractedFact],
    topic: str | None,
) -> DialogueContext:
    """The context after ``event``, whose own extracted ``facts`` and topic cue are given."""
    update: dict[str, Any] = {
        "turn_index": event.turn_index,
        "last_text": event.text[:LAST_TEXT_CHARS],
        "known": remember(context.known, facts),
    }
    if topic is not None:
        update |= {"topic": topic, "topic_turn": event.turn_index}
    # What the conversation is about is the first time it fixed: later cues are
    # asides ("I'm away that week") far more often than a change of subject, and
    # a cue word without a time ("my router stopped working") fixes nothing yet.
    # Only the user's own times: an agent's remark ("we see a lot of those in
    # January") fixes nothing.
    times = [f.predicate for f in facts if "TIME" in f.fields]
    if context.standing_topic is None and times and event.role is Role.USER:
        update["standing_topic"] = times[0]
    if facts:
        update["last_predicate"] = facts[-1].predicate
    places = [f.predicate for f in facts if "PLACE" in f.fields]
    if places:
        update["place_topic"] = places[-1]
    if event.role is Role.AGENT:
        update["offers"] = [
            OfferedFact(predicate=f.predicate, object=f.object)
            for f in facts
            if f.polarity is Polarity.AFFIRMED
        ]
        update["agent_asked"] = "?" in event.text or bool(OFFER_STATEMENT.search(event.text))
        update["agent_asked_choice"] = "?" in event.text and bool(
            CHOICE_QUESTION.search(event.text)
        )
        update["agent_asked_allergies"] = "?" in event.text and "allerg" in event.text.lower()
        # "Sure, go ahead." keeps the user's own "I want to give you a meter reading".
        update["number_topic"] = _number_topic_after(context, event, facts)
    else:
        # The user answered: an offer is accepted (or not) once.
        update |= {
            "offers": [],
            "agent_asked": False,
            "agent_asked_choice": False,
            "agent_asked_allergies": False,
            "number_topic": _number_topic_after(context, event, facts),
        }
    return context.model_copy(update=update)
