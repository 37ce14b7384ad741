"""A move still to come is a plan: "we're moving to Porthcawl" is ``plans_to move to porthcawl``.

The vocabulary keeps where the user lives (``lives_in``) apart from where they
are going to live: a move said as still to come is a plan, written as the
guide writes it (benchmarks/devset/LABELLING.md: ``plans_to move to fort
worth``). The tagger reads the place of such a sentence as where the user
lives or travels to ("moving on 15 April" beside "flat in Friedrichshain"), or
as a plan of the words around it ("moving to denmark kez"), or misses it when
the parse is lost in chat spelling ("we're movin to Whitley Bay").

``move_plans`` reads the move word itself, so it holds in any spelling the
parse gets wrong: the place is what follows "to" / "into" after it, or, when
the sentence says where the new home is ("found a house in East Legon, we are
moving in June"), the place of that home. A past move ("moved to") is where
the user lives now and is the tagger's to read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pipelines.extract.events import FIRST_PERSON, dates_in
from pipelines.extract.learned.facts import CONFIDENCE_HEDGED
from pipelines.extract.polarity import is_hedged
from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import undated
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity

# "moving", "movin'", "relocating"; a bare "move" only after a word that puts it
# ahead ("gonna move", "fixin to move", "might move") or beside a date ("we
# move July 15th"). "moved" is a move made.
_MOVING = re.compile(r"^(?:moving|movin'?|relocating|relocatin'?|emigrating)$")
_MOVE = re.compile(r"^(?:move|relocate|emigrate)$")
_AHEAD = frozenset({"to", "will", "'ll", "ll", "gonna", "gon", "might", "may", "could"})
_AHEAD |= frozenset({"would", "'d", "should", "must", "wanna", "gotta", "shall"})
# "since moving here", "before moving in": the move dates something else.
_DATING = frozenset({"since", "after", "before", "when", "while", "until", "till"})
_NEGATORS = frozenset({"not", "n't", "never", "nae", "no"})
# Words between the verb and its preposition: "moving back up to Leeds".
_PARTICLES = frozenset({"back", "down", "up", "over", "out", "across", "home", "away", "all"})
_INTO = frozenset({"to", "into", "tae", "ta", "too"})
# A home a sentence places ("a share house in Suffolk Park", "2 room flat in Friedrichshain").
_HOMES = frozenset({"house", "flat", "apartment", "condo", "bungalow", "place", "cottage"})
_HOMES |= frozenset({"home", "room", "studio", "terrace", "unit", "1-bed", "2-bed", "3-bed"})
_HOMES |= frozenset({"duplex", "townhouse", "semi", "residence", "houseshare", "digs", "farm"})
# Words that end a place's name: a clause, a date, a companion, a reason.
_STOPS = frozenset({"in", "on", "at", "for", "with", "by", "from", "near", "next", "this"})
_STOPS |= frozenset({"end", "early", "late", "mid", "after", "before", "when", "because", "so"})
_STOPS |= frozenset({"and", "or", "but", "then", "soon", "once", "if", "cos", "cause", "till"})
_STOPS |= frozenset({"w", "w/", "wi", "wit", "tbh", "lol", "idk", "though", "tho", "now"})
# The way a plan's value says the move goes: no part of the place.
_WAYS = frozenset({"to", "into", "back"})
_MOVE_WORDS = _WAYS | _PARTICLES | {"move", "moving", "movin", "relocate", "relocating"}
# A destination that names no place.
_NOWHERE = frozenset({"there", "here", "home", "somewhere", "it", "them", "one", "that", "this"})
_NOWHERE |= frozenset({"place", "house", "flat", "bigger", "smaller", "cheaper", "new"})
_ARTICLES = frozenset({"a", "an", "the", "my", "our", "his", "her", "their"})
_MAX_WORDS = 4
# Where the tagger put the place when it missed the move.
_PLACE_PREDICATES = frozenset({"lives_in", "travel", "address", "visited"})
# Above the review gate's commit threshold (0.82): the move word and its place
# were both read as said; a hedged move waits for the user (learned/facts.py).
CONFIDENCE = 0.86


def move_plans(
    event: DialogueEvent, doc: Any, facts: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """``facts`` with each move the user says is still to come stated as a plan to move there.

    The tagger's reading of the same place (a home, a trip, a plan of the
    words around it) gives way to the plan.
    """
    if event.role is not Role.USER or doc is None:
        return list(facts)
    plans: list[ExtractedFact] = []
    for sent in doc.sents:
        if "?" in sent.text:
            continue
        for verb in _moves_ahead(sent):
            place = _destination(sent, verb)
            if place is None or not _users_own(verb):
                continue
            value = default_vocabulary().spec("plans_to").normalise(f"move {place}")
            if not set(value.split()) - _WAYS - {"move"}:
                continue
            negated = _negated(sent, verb)
            # "maybe in 2-3 yrs. we keep talking about moving back. nothing decided"
            hedged = is_hedged(event.text)
            plan = stated(
                event,
                "plans_to",
                value,
                asserted_by=Assertor.USER,
                confidence=CONFIDENCE_HEDGED if hedged else CONFIDENCE,
                field="VALUE",
                polarity=Polarity.NEGATED if negated else Polarity.AFFIRMED,
            )
            plans.append(plan.model_copy(update={"hedged": hedged}))
            break
    if not plans:
        return list(facts)
    places = [set(p.object.split()[1:]) - _WAYS for p in plans]
    kept = [f for f in facts if not _same_place(f, places)]
    return kept + plans


def _moves_ahead(sent: Any) -> list[Any]:
    """The tokens of ``sent`` that say the user is going to move."""
    out = []
    dated = next(dates_in(sent.text), None) is not None
    for token in sent:
        word = token.lower_.replace("’", "'")
        before = [t.lower_ for t in sent.doc[max(sent.start, token.i - 3) : token.i]]
        if any(w in _DATING for w in before[-2:]):
            continue
        if _MOVING.match(word) or (
            _MOVE.match(word)
            and before
            and (before[-1] in _AHEAD or (before[-1] in {"we", "i"} and dated))
        ):
            out.append(token)
    return out


def _destination(sent: Any, verb: Any) -> str | None:
    """Where the move goes, as said after the move word: "back to leeds", "into retirement flat".

    That is what follows "to"/"into" after ``verb``, else the home the
    sentence places ("found a house in East Legon, we are moving in June").
    """
    doc = sent.doc
    i = verb.i + 1
    back = False
    while i < sent.end and doc[i].lower_ in _PARTICLES:
        back = back or doc[i].lower_ == "back"
        i += 1
    way = "back to" if back else "to"
    if i < sent.end and doc[i].lower_ in _INTO:
        place, home = _place(doc, i + 1, sent.end)
        # "into a retirement flat" is kept as said; "into a house on north
        # parade" goes to its street.
        way = "into" if doc[i].lower_ == "into" and not back and home else way
        return f"{way} {place}" if place else None
    for token in sent:
        if token.lower_ in _HOMES and token.i + 2 < sent.end and doc[token.i + 1].lower_ == "in":
            place, _ = _place(doc, token.i + 2, sent.end)
            return f"{way} {place}" if place else None
    return None


def _users_own(verb: Any) -> bool:
    """Whether the move is the user's ("we're moving", "moving to Leeds"), not another's.

    "he's moving to berlin", "Suresh wants us to move to Goa": the subject
    (of the verb, or of the verb it completes) names someone else.
    """
    subjects = [c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass", "expl"}]
    if verb.dep_ in {"xcomp", "ccomp"}:
        # "Suresh wants us to move": whose plan it is, is the wanter's.
        subjects = [c for c in verb.head.children if c.dep_ in {"nsubj", "nsubjpass"}] or subjects
    if not subjects:
        return True  # chat drops it: "moving to a smaller place w 2 mates"
    return any(t.lower_ in FIRST_PERSON for s in subjects for t in s.subtree)


def _place(doc: Any, start: int, end: int) -> tuple[str | None, bool]:
    """The place's name said from ``start`` (its words up to a clause, a date or a stop word).

    With it, whether the name is that of a home ("retirement flat") rather than of a place.
    """
    words: list[str] = []
    i = start
    while i < end and len(words) <= _MAX_WORDS:
        token = doc[i]
        word = token.lower_
        # The parse reads a place it does not know as a verb ("to denmark"):
        # only a later verb ends the name.
        if token.is_punct or word in _STOPS or (words and token.pos_ in {"VERB", "AUX", "PRON"}):
            break
        if not undated(word).strip():
            break
        if not (words or word not in _ARTICLES):
            i += 1
            continue
        words.append(word)
        i += 1
    # "into a house on north parade": the house is placed by its street.
    if words and words[-1] in _HOMES and i + 1 < end and doc[i].lower_ in {"on", "in"}:
        return _place(doc, i + 1, end)[0], False
    if not words or len(words) > _MAX_WORDS or all(w in _NOWHERE for w in words):
        return None, False
    return " ".join(words), words[-1] in _HOMES


def _negated(sent: Any, verb: Any) -> bool:
    """Whether a negator stands just before the move ("not moving", "never moving again")."""
    before = [t.lower_ for t in sent.doc[max(sent.start, verb.i - 3) : verb.i]]
    return any(w in _NEGATORS for w in before)


def _same_place(fact: ExtractedFact, places: list[set[str]]) -> bool:
    """Whether ``fact`` is the tagger's reading of a place the plans name."""
    words = set(fact.object.split())
    if fact.predicate in _PLACE_PREDICATES:
        return any(words <= place or place <= words for place in places)
    if fact.predicate == "plans_to":
        # "moving", "moving back", "india": the tagger's pieces of the move.
        pieces = words - _MOVE_WORDS
        return any(pieces <= place or (words & _MOVE_WORDS and pieces & place) for place in places)
    return False
