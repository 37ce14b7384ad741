"""Who the user wants to be seen by: ``preferred_staff``.

"We'd like Anna Kowalczyk if at all possible", "could Dr Keane do it?", "I'd
rather wait for Niamh" name the person the user asks for; the agent's "Would
you like to see Tunde again?" or "Saturday at 2pm with Niamh?" offers one, and
the user's yes takes the offer (``DialogueContext.offers``). The tagger seldom
reads these: a person's name is a ``name`` to it, or a title alone ("dr").

A name here is a title and a surname ("Dr Keane", "Ms Brennan") or one or two
capitalised words in a frame that asks for a person: "with …", "see …
again", "… if possible", "rather … ". A day or a month is no name.
"""

from __future__ import annotations

import re

from pipelines.extract.naming import is_name
from pipelines.extract.typed import stated
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact

# As sure as a stated value; an agent's offer stays the agent's until a yes.
CONFIDENCE_ASKED = 0.86

_TITLE = r"(?:Dr|Mr|Mrs|Ms|Miss|Prof|Doctor|Nurse)\.?\s+"
_NAME = rf"(?P<name>{_TITLE}[A-Z][\w'’-]+|[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)?)"
# After the name: what makes the phrase a request for that person.
_SOFT = r"(?:\s+again|\s+if\s+(?:at\s+all\s+)?poss(?:ible)?|\s+please|\s+do\s+it)"
# Asking for a person by a verb that takes anything ("I'd like Premium if
# possible") needs a title or a first name and surname.
_FULL = rf"(?P<name>{_TITLE}[A-Z][\w'’-]+|[A-Z][a-z'’-]+\s+[A-Z][a-z'’-]+)"
_USER_ASKS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\b(?:with|see|ask\s+for)\s+{_NAME}(?={_SOFT})"),
    re.compile(rf"\brather\s+(?:wait\s+for|see|have)\s+{_NAME}\b"),
    re.compile(rf"\b(?:'d\s+like|would\s+like|have)\s+{_FULL}(?={_SOFT})"),
    re.compile(rf"\b(?:could|can)\s+{_NAME}\s+do\s+it\b"),
)
_AGENT_OFFERS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"\b(?:see|want|like|with)\s+{_NAME}\s+again\?"),
    # "Saturday at 2pm with Niamh?": a time offered with its person. A friend's
    # "Still doing Zumba with Lupe?" offers nobody.
    re.compile(rf"(?:\d|day\b|morning|afternoon|evening)[^.!?]*\bwith\s+{_NAME}(?:,?\s+then)?\?"),
)


def with_staff(event: DialogueEvent, facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """``facts`` with the person the user asks to be seen by, or the agent offers.

    A title the tagger read alone ("dr" of "Dr. Moreno") is no person: it goes
    when the name it stands before is found.
    """
    if event.role is Role.USER:
        patterns, voice = _USER_ASKS, Assertor.USER
    elif event.role is Role.AGENT:
        patterns, voice = _AGENT_OFFERS, Assertor.AGENT
    else:
        return facts
    held = {f.object for f in facts if f.predicate == "preferred_staff"}
    found: list[ExtractedFact] = []
    for pattern in patterns:
        for match in pattern.finditer(event.text):
            person = _person(match.group("name"))
            if person is None or person in held:
                continue
            held.add(person)
            found.append(
                stated(
                    event,
                    "preferred_staff",
                    person,
                    asserted_by=voice,
                    confidence=CONFIDENCE_ASKED,
                    field="PERSON",
                )
            )
    if not found:
        return facts
    words = {w for f in found for w in f.object.split()}
    kept = [
        f
        for f in facts
        if not (f.predicate in {"preferred_staff", "name"} and set(f.object.split()) <= words)
    ]
    return [*kept, *found]


def _person(said: str) -> str | None:
    """The person's one form ("Dr. Keane" -> "dr keane"), or None for no name."""
    words = re.findall(r"[\w'’-]+", said)
    if not all(is_name(w) for w in words):
        return None
    return " ".join(w.casefold() for w in words)
