"""The other speaker asking after a value of the user's restates it.

"Still at Korle Bu?", "Lisbon still happening?", "Still singing in the
choir?": a friend (or an agent) who asks whether something the user told them
still holds states that value about the user, in their voice
(benchmarks/devset/LABELLING.md: a friend saying "you're vegan now, right?"
is an ``agent`` fact). The value is the one the user said, as held in the
dialogue context, so the user's yes keeps it (``DialogueContext.offers``) and
"nah, left." ends that same value (pipelines/extract/endings.py).

"So no more Supermalt for you?" restates the value as ended: negated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.extract.endings import KnownValue, named_in
from pipelines.extract.typed import stated
from pipelines.parse.parser import SENTENCE_END
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity

# A restatement the user has not confirmed yet.
CONFIDENCE_RESTATED = 0.8

# Asking whether a value still holds.
_STILL = re.compile(
    r"\bstill\b|\bany ?more\b|\bkeep(?:ing)? (?:it |that |them )?up\b|\bgoing ahead\b"
    r"|\bstill on\b|\bhappening\b|\bback (?:on|at|to|in)\b",
    re.IGNORECASE,
)
# Asking whether it has ended.
_NO_MORE = re.compile(r"\bno (?:more|longer)\b|\bso no\b|\bnot \w+ any ?more\b", re.IGNORECASE)


def asked_after(
    event: DialogueEvent, facts: Sequence[ExtractedFact], known: Sequence[KnownValue]
) -> list[ExtractedFact]:
    """The user's held values the other speaker asks after in ``event``, in their voice."""
    if event.role is not Role.AGENT or not known:
        return []
    vocabulary = default_vocabulary()
    said = {(vocabulary.canonical(f.predicate), f.object) for f in facts}
    out: list[ExtractedFact] = []
    for sentence in SENTENCE_END.split(event.text):
        ended = bool(_NO_MORE.search(sentence))
        if not (ended or (_STILL.search(sentence) and "?" in sentence)):
            continue
        # The cue's own words name nothing: "Back on the gigs?" is not "back operation".
        asked = _NO_MORE.sub(" ", _STILL.sub(" ", sentence))
        for value in named_in(asked, known):
            if (value.predicate, value.object) in said:
                continue
            said.add((value.predicate, value.object))
            out.append(
                stated(
                    event,
                    value.predicate,
                    value.object,
                    asserted_by=Assertor.AGENT,
                    confidence=CONFIDENCE_RESTATED,
                    field="RESTATED",
                    polarity=Polarity.NEGATED if ended else Polarity.AFFIRMED,
                )
            )
    return out
