"""A user's pick among the times the agent offered, stored as the whole offer.

"A: I can do Friday the 27th at 11 or Monday the 23rd at 9." - "U: Monday at
9." The user names just enough of one offer to choose it; what they booked is
that offer, "monday 23rd 9am", not the piece "monday 9". The labelling guide
(benchmarks/devset/LABELLING.md) stores a plain yes to an offer as the offer's
value; a pick is a yes to one of several. In the seen customer-service splits
a piece stood alone where its offer was meant ("sat" for "saturday 17th
10am", "8.20 please" for "saturday 10th 8:20am"), and the agent's confirmation
then read as a second version of another value.

A piece completes only when exactly one offered time holds every word of it,
so "Tuesday" among "tuesday 9am" and "tuesday 2pm" stays as said, and a word
said beside it that no offer holds ("the 19th, in the morning") keeps the
user's own value. A refused time ("not Friday") is never completed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.extract.context import OfferedFact
from pipelines.extract.typed import distinct
from pipelines.vocabulary import TIME_TYPES, default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import ExtractedFact, statement
from schemas.memory import Polarity

_WORD = re.compile(r"[\w:.]+")
# Words a time is said with that pick nothing: "at 9", "on the 23rd".
_LINKING = frozenset({"the", "a", "at", "on", "of", "in", "for", "and", "please", "pls"})


def _holds(offer: str, piece: str) -> bool:
    """Whether every word of ``piece`` is a word of ``offer`` or its start ("8" of "8am").

    A number is the start of a clock time only before a non-digit: "1" is not
    the start of "10am".
    """
    held = _WORD.findall(offer)
    words = [w for w in _WORD.findall(piece) if w not in _LINKING]
    return bool(words) and all(
        any(h == w or (h.startswith(w) and not h[len(w)].isdigit()) for h in held) for w in words
    )


def picked_offers(
    event: DialogueEvent, facts: Sequence[ExtractedFact], offers: Sequence[OfferedFact]
) -> list[ExtractedFact]:
    """``facts`` with each time the user picked from one offer in that offer's form."""
    if event.role is not Role.USER:
        return list(facts)
    vocabulary = default_vocabulary()
    times = [o for o in offers if vocabulary.spec(o.predicate).type in TIME_TYPES]
    if not times:
        return list(facts)
    out: list[ExtractedFact] = []
    for fact in facts:
        if vocabulary.spec(fact.predicate).type in TIME_TYPES and (
            fact.polarity is Polarity.AFFIRMED
        ):
            holding = {(o.predicate, o.object) for o in times if _holds(o.object, fact.object)}
            if len(holding) == 1:
                predicate, value = holding.pop()
                fields = {**fact.fields, "TIME": value} if "TIME" in fact.fields else fact.fields
                fact = fact.model_copy(
                    update={
                        "predicate": predicate,
                        "object": value,
                        "text": statement(predicate, value, fact.polarity),
                        "fields": fields,
                    }
                )
        out.append(fact)
    # The piece and the whole offer, when the turn said both, are one fact.
    return distinct(out)
