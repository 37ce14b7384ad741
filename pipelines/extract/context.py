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
from typing import Any

from pydantic import Field

from pipelines.extract import vocabulary as vocab
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
    r"^\s*(?:yes|yeah|yep|sure|ok(?:ay)?|fine|perfect|great|sounds good|that works"
    r"|that'?s fine|that suits me|go ahead|please do|deal|probably|possibly|maybe|perhaps"
    r"|i think so|i guess so)\b(?![^.!?]*\b(?:but|not|n't)\b)",
    re.IGNORECASE,
)


# An agent question asking the user to choose or state a preference: a verbless
# answer to it ("Tulips.", "Aisle, please.") names what the user likes; a verbless
# answer to any other question ("The kitchen sink leaks.") does not.
CHOICE_QUESTION = re.compile(
    r"\b(?:prefer|preference|like|which|or|what kind|what sort|favourite|fancy)\b",
    re.IGNORECASE,
)


class OfferedFact(Frozen):
    """One affirmed fact the agent offered in its last turn (before any user answer)."""

    predicate: str
    object: str


class DialogueContext(Frozen):
    """What the extractor remembers between turns of one session."""

    session_id: str
    turn_index: int = Field(default=-1, description="Index of the last turn seen.")
    topic: str | None = Field(default=None, description="Predicate of the last time-topic cue.")
    topic_turn: int = Field(default=-1, description="Turn index where ``topic`` was cued.")
    place_topic: str | None = Field(
        default=None, description="Predicate (travel, address) of the last place fact."
    )
    offers: list[OfferedFact] = Field(default_factory=list)
    agent_asked: bool = Field(default=False, description="The last agent turn asked a question.")
    agent_asked_choice: bool = Field(
        default=False, description="That question asked for a choice or preference."
    )
    last_predicate: str | None = None

    def topic_for(self, turn_index: int) -> str | None:
        """The time topic still in force at ``turn_index`` (None once it expired)."""
        if self.topic is None or turn_index - self.topic_turn > TOPIC_TTL_TURNS:
            return None
        return self.topic


def turn_topic(doc: Any) -> str | None:
    """The first time-topic cue of a turn (lemmas, as ``vocab.TIME_TOPICS`` orders them)."""
    return vocab.time_topic({t.lemma_.lower() for t in doc} | {t.lower_ for t in doc})


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
    update: dict[str, Any] = {"turn_index": event.turn_index}
    if topic is not None:
        update |= {"topic": topic, "topic_turn": event.turn_index}
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
        update["agent_asked"] = "?" in event.text
        update["agent_asked_choice"] = "?" in event.text and bool(
            CHOICE_QUESTION.search(event.text)
        )
    else:
        # The user answered: an offer is accepted (or not) once.
        update |= {"offers": [], "agent_asked": False, "agent_asked_choice": False}
    return context.model_copy(update=update)
