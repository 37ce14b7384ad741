"""Where the user grew up: "I grew up in Obuasi", "Kandy, that's where I grew up", "I'm from Ennis".

The vocabulary keeps the place one comes from (``hometown``) apart from where
one lives now (``lives_in``) and places one has lived (``lived_in``). People say
it in a few set ways, in any domain, and the tagger, which saw few of them,
reads the place as where the user lives or travels, or not at all (in the
seen friends' chats it found 1 of 12 hometowns; benchmarks/devset/README.md,
stop 40). ``hometowns`` reads those ways:

- the place **after** the cue: "grew up in", "grow up on", "born and bred in",
  "born in", "I'm (originally) from", "originally from", "my home town is";
- the place **before** it, in the same sentence: "X, that's where I grew up",
  "X, the house I grew up in", "I grew up there", "X born and bred",
  "X originally", "X, my home town".

The place is a name the parse or the tagger found there, or capitalised words
("Bodø", "Porto Alegre"). A cue about someone else ("Kwame grew up in
Ejisu") is not the user's; the other speaker saying it of the user ("you're
from Cardiff, right?") states it in their voice. A place the tagger read as
where the user lives, in a sentence that does not speak of living there, is
the hometown instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact

# The cues after which the place is said: "grew up (right here) in", "born and bred in".
_GREW = re.compile(
    r"\b(?:grew|grow|grown|growing)\s+up\s+(?:\w+\s+){0,3}?(?:in|on|at|near|around|outside)\s+"
    r"|\bborn\s+and\s+(?:bred|raised)\s+(?:in|on|at|near)\s+|\bborn\s+(?:in|at)\s+",
    re.IGNORECASE,
)
# "I'm from", "we're originally from", "you're from" (the other speaker); not "a card from".
_FROM = re.compile(
    r"\b(?P<who>i|we|you|u)(?:'?m|'?re|\s+am|\s+are)\s+(?:originally\s+)?from\s+"
    r"|\b(?P<who2>im|youre|ur)\s+(?:originally\s+)?from\s+"
    r"|\boriginally\s+from\s+|\bhome\s*town\s+(?:is|was)\s+"
    # "back home in Madurai": where one is from is home ("flying home to" is
    # as often where one lives now).
    r"|\bback\s+home\s+in\s+",
    re.IGNORECASE,
)
# The cues after the place: "..., that's where I grew up", "I grew up there", "... born and bred".
_BEFORE = re.compile(
    r"(?<!near\s)(?<!to\s)\bwhere\s+(?P<who>\w+)\s+(?:grew|grow)\s+up\b"
    r"|\b(?:house|town|place|village|city)\s+(?P<who2>\w+)\s+(?:grew|grow)\s+up\s+in\b"
    r"|\b(?P<who3>\w+)\s+(?:grew|grow)\s+up\s+there\b"
    r"|\b(?P<who4>\w+)\s+(?:was\s+)?born\s+there\b"
    r"|\bborn\s+and\s+(?:bred|raised)\b|\boriginally\b(?=\s*(?:[,.!?;)]|$))|\bmy\s+home\s*town\b",
    re.IGNORECASE,
)
_OWN = frozenset({"i", "we", "me", "i've", "we've", "im", "my", "our"})
_ADDRESSED = frozenset({"you", "u", "you've", "youre", "ur", "your"})
# Words between a subject and its cue: "I was born", "we both grew up", "I actually grew up".
_BETWEEN = frozenset({"was", "were", "both", "all", "actually", "really", "originally", "kinda"})
# A place's name: capitalised words, with the small words some names hold.
_CAPITALISED = re.compile(
    r"(?:(?:St|San|Santa|Porto|Port|Fort|Mount|Lake|New|El|La|Le)\.?\s+)?"
    r"[A-Z][^\W\d_]+(?:[\s-][A-Z][^\W\d_]+){0,2}"
)
_PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
_PLACE_PREDICATES = frozenset({"lives_in", "travel", "visited", "lived_in", "hometown"})
_LIVING = re.compile(r"\bliv(?:e|es|ed|ing)\b|\bstill\s+(?:there|here)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;]")
# A cue that opens its sentence ("... my mum. that's where I grew up") points back.
_OPENS = re.compile(r"[.!?;]\s*(?:that'?s|thats|that\s+is|it'?s|its|it\s+is)?\s*$", re.IGNORECASE)
# "I'm from British Gas about the meter": the caller's firm, not a home.
_ON_BEHALF = re.compile(
    r"\s*,?\s*(?:about|calling|regarding|re\b|here\s+to|ltd|limited|plc|inc)", re.IGNORECASE
)
# The place is this close to its cue: a few words.
_NEAR_CHARS = 40
# Above the review gate's commit threshold (0.82): the words that say it are set ones.
CONFIDENCE = 0.86
_NO_PLACE = frozenset({"i", "im", "the", "my", "our", "there", "here", "home", "scratch", "mum"})


def hometowns(
    event: DialogueEvent, doc: Any, facts: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """``facts`` with the place the user says they grew up in or come from as their hometown."""
    if doc is None or event.role not in {Role.USER, Role.AGENT}:
        return list(facts)
    vocabulary = default_vocabulary()
    spec = vocabulary.spec("hometown")
    tagged = [f.object for f in facts if vocabulary.canonical(f.predicate) in _PLACE_PREDICATES]
    held = {f.object for f in facts if vocabulary.canonical(f.predicate) == "hometown"}
    found: dict[str, ExtractedFact] = {}
    # The whole turn at once: a cue can point back across a sentence end.
    turn = doc[:]
    for place in _said(turn.text, _places(turn, tagged), event.role):
        value = spec.normalise(place)
        if not value or value in _NO_PLACE or value in found or value in held:
            continue
        found[value] = stated(
            event,
            "hometown",
            value,
            asserted_by=Assertor.AGENT if event.role is Role.AGENT else Assertor.USER,
            confidence=CONFIDENCE,
            field="VALUE",
        )
    living = bool(_LIVING.search(turn.text))
    if not found:
        return list(facts)
    # The tagger's "lives in" of the same place, in a turn that says nothing of living there.
    kept = [
        f
        for f in facts
        if living or vocabulary.canonical(f.predicate) != "lives_in" or f.object not in found
    ]
    return [*kept, *found.values()]


def _places(sent: Any, tagged: Sequence[str]) -> list[tuple[int, int, str]]:
    """The places named in the span ``sent``: (start, end, name), offsets in its text."""
    text = sent.text
    out = [
        (ent.start_char - sent.start_char, ent.end_char - sent.start_char, ent.text)
        for ent in sent.ents
        if ent.label_ in _PLACE_LABELS
    ]
    # "I'm from British Gas": a company is where one works, not where one is from.
    firms = [
        (ent.start_char - sent.start_char, ent.end_char - sent.start_char)
        for ent in sent.ents
        if ent.label_ == "ORG"
    ]
    for value in tagged:
        for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE):
            out.append((m.start(), m.end(), m.group(0)))
    # A sentence's first word is capitalised whatever it is.
    out += [
        (m.start(), m.end(), m.group(0))
        for m in _CAPITALISED.finditer(text)
        if m.start() and not any(a <= m.start() < b for a, b in firms)
    ]
    return sorted(out)


def _said(text: str, places: list[tuple[int, int, str]], role: Role) -> list[str]:
    """The places ``text`` says the speaker (or, from the agent, the user) comes from."""
    out = []
    cues = [(m, _subject(text[: m.start()])) for m in _GREW.finditer(text)]
    cues += [
        (m, m.group("who") or m.group("who2") or _subject(text[: m.start()]))
        for m in _FROM.finditer(text)
    ]
    for m, who in cues:
        if not _whose(who, role):
            continue
        after = [
            p
            for p in places
            if m.end() <= p[0] <= m.end() + _NEAR_CHARS
            and not _SENTENCE_END.search(text[m.end() : p[0]])
        ]
        if after:
            first = min(p[0] for p in after)
            place = max((p for p in after if p[0] == first), key=lambda p: p[1])
            if not _ON_BEHALF.match(text[place[1] :]):
                out.append(place[2])
    for m in _BEFORE.finditer(text):
        who = m.group("who") or m.group("who2") or m.group("who3") or m.group("who4") or ""
        if not _whose(who, role):
            continue
        # "... up to Eldoret to see my mum. that's where I grew up": a sentence
        # that opens with the cue points back into the one before.
        opens = _OPENS.search(text[: m.start()]) is not None
        before = [
            p
            for p in places
            if m.start() - _NEAR_CHARS <= p[1] <= m.start()
            and p[2].lower() not in _NO_PLACE
            and (opens or not _SENTENCE_END.search(text[p[1] : m.start()]))
        ]
        if before:
            last = max(p[1] for p in before)
            out.append(max((p for p in before if p[1] == last), key=lambda p: -p[0])[2])
    return out


def _subject(before: str) -> str:
    """The word that is the subject of a cue said after ``before``, or "" when none is said."""
    words = re.findall(r"[\w']+|[^\w\s]", before.lower())
    while words and words[-1] in _BETWEEN:
        words.pop()
    return words[-1] if words and words[-1][0].isalnum() else ""


def _whose(who: str, role: Role) -> bool:
    """Whether a cue with subject ``who`` is about the user: I or we, or "you" from the agent."""
    word = who.lower().replace("’", "'")
    if not word or word in {"and", "but", "so", "then", "just"}:
        return True
    return word in (_ADDRESSED if role is Role.AGENT else _OWN)
