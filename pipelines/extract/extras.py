"""What an agent offers to sell or sign the user up for, as a value a yes or no answers.

"Would you like our packing service the day before as well?" offers
``ordered = packing service``; "Fancy our Friends of the Limelight scheme?"
offers ``plan = friends of the limelight``. The offer is the agent's
(benchmarks/devset/LABELLING.md: an agent offering a value), and the user's
plain yes or no to it becomes the user's own fact through the offers the
dialogue context keeps (``DialogueContext.offers``): "god yes please" is
``ordered packing service``, "No thanks." is ``ordered NOT packing service``.

A friend's "Fancy a pint?" offers nothing to buy. An offer is read only when
the agent sells it: the thing is theirs ("our lead climbing course"), it has
a price in the turn, or the agent offers to add, book or upgrade it.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span

# An offer the agent could not state for sure: the user has not taken it yet.
CONFIDENCE_OFFERED = 0.8

_ASK = (
    r"would you like(?: (?:me|us) to add| to (?:add|join|try|take|upgrade to))?"
    r"|do you want(?: (?:me|us) to add| to (?:add|join|upgrade to))?"
    r"|(?:do you )?fancy|want(?: me to add| to (?:add|join))?|(?:are you )?interested in"
    r"|(?:shall|should|can|could) (?:i|we) (?:add|include|book you (?:on|in|onto)"
    r"|put you (?:down )?(?:for|on)|sign you up (?:for|to)|go ahead with|throw in)"
    r"|how about|what about"
)
_OFFER = re.compile(rf"(?:^|[\s,.!])(?:{_ASK})\s+(?P<rest>[^?]*)\?", re.IGNORECASE)
_SELLING = re.compile(r"\badd|\bbook|\bsign you up|\bupgrade|\bjoin|\bgo ahead with", re.I)
_PRICE = re.compile(
    r"[£$€]\s?\d|\b\d+(?:\.\d+)?\s?(?:pounds|quid|dollars|euros?|p|cents?|rand|r)\b"
    r"|\bR\d|\bfree\b|\b(?:a|per) (?:month|week|year|night|day|session)\b|\bextra\b",
    re.IGNORECASE,
)
# Where the offered thing's name ends: its price, when or how it comes.
_TAIL = re.compile(
    r"\s+(?:for|at|as well|too|on top|while|which|that|from|starting|this|next|today"
    r"|tomorrow|the day|on (?:your|the)|with (?:your|the)|to (?:your|the))\b.*$"
    r"|\s+(?:now|then|before|after|first|instead|the week before)\b.*$"
    r"|\s*[,;:(].*$|\s+(?:[£$€]|\d).*$",
    re.IGNORECASE,
)
_DETERMINER = re.compile(r"^(?:our|the|a|an|your|some|any|one of our|one of the)\s+", re.I)
# Words that offer no thing of their own: a pronoun ("want one?"), a time
# ("how about Tuesday?"), a plain verb ("would you like to go ahead?").
_NO_THING = re.compile(
    r"^(?:it|one|that|this|them|those|these|something|anything|me|us|her|him|to\b|go\b|more\b"
    r"|a (?:call|callback|reminder|receipt|copy|confirmation)\b)",
    re.IGNORECASE,
)
# A way to reach the user ("text alerts", "our reminder emails") is a contact
# channel the user is offered, not a thing bought (pipelines/extract/candidates.py).
_CHANNEL = re.compile(
    r"\b(?:texts?|sms|e-?mails?|calls?|alerts?|reminders?|newsletters?|notifications?|whatsapp)\b",
    re.IGNORECASE,
)
# What a subscription's or a cover's name ends in: such an offer is a ``plan``.
_PLAN_HEADS = frozenset(
    {"plan", "package", "tier", "membership", "scheme", "subscription", "tariff", "bundle"}
    | {"cover", "waiver", "warranty", "protection"}
)


def offered_extras(
    event: DialogueEvent, doc: Any, facts: list[ExtractedFact]
) -> list[ExtractedFact]:
    """The agent's offers of a product, service or plan in ``event``, as agent facts."""
    if event.role is not Role.AGENT:
        return []
    vocabulary = default_vocabulary()
    out = []
    for sent in doc.sents:
        match = _OFFER.search(sent.text)
        if match is None:
            continue
        # "Would you like single lessons at £38 or a block of 10?" offers a
        # choice, which a yes does not settle.
        if re.search(r"\bor\b", match.group(0), re.IGNORECASE):
            continue
        thing = _thing(match["rest"])
        if thing is None or _CHANNEL.search(thing) or not _sold(match.group(0), thing, event.text):
            continue
        # "How about Tuesday at 10?" offers a time, which the turn's facts hold.
        if vocabulary.spec("appointment_time").problem(thing) is None or any(
            set(f.object.split()) <= set(thing.split()) for f in facts
        ):
            continue
        predicate = "plan" if thing.split()[-1] in _PLAN_HEADS else "ordered"
        value = vocabulary.spec(predicate).normalise(thing)
        if not value or vocabulary.spec(predicate).problem(value) is not None:
            continue
        sentence = Span(label="SENTENCE", text=sent.text, start=sent.start_char, end=sent.end_char)
        out.append(
            stated(
                event,
                predicate,
                value,
                asserted_by=Assertor.AGENT,
                confidence=CONFIDENCE_OFFERED,
                field="OFFERED",
                source_span=sentence,
            )
        )
    return out


def _thing(rest: str) -> str | None:
    """The offered thing's name, from the words after the question's cue."""
    name = _TAIL.sub("", _DETERMINER.sub("", rest.strip())).strip(" .!")
    if not name or _NO_THING.match(name) or len(name.split()) > 6:
        return None
    return name.casefold()


def _sold(question: str, thing: str, text: str) -> bool:
    """Whether the agent sells ``thing``: theirs, priced, or to be added or booked."""
    theirs = re.search(rf"\bour\s+{re.escape(thing.split()[0])}", question, re.IGNORECASE)
    return bool(theirs or _PRICE.search(text) or _SELLING.search(question))
