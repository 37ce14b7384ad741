"""References to things the session has not defined: "my membership tier", "the usual".

A user who says "my order" or "the same as usual" assumes the listener knows
it. When nothing said earlier in the session mentions it, only memory can
supply it. Rules, no parser: possessive phrases ("my", "our") and a few
definite references to history ("the usual", "the one I ...", "the previous
..."), each checked against the content words the session has used so far.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def _wordset(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``: long word lists stay readable."""
    return frozenset(text.split())


# Function and chat words: never a term, and they end a possessive phrase.
STOPWORDS = _wordset(
    """
    a an the and or but if so as of at by for from in into on onto to up down out off over
    with without about than then too very just also again still even only not no nor
    i me my mine we us our ours you your yours he him his she her hers it its they them their
    this that these those there here what which who whom whose when where why how
    is are was were be been being am do does did done doing have has had having
    will would shall should can could may might must get got gets getting let lets
    please thanks thank yes yeah yep ok okay hi hello hey sure well oh um uh hmm
    some any all each every both either neither much many more most less few lot lots
    one ones thing things something anything nothing everything stuff
    i'm i've i'll i'd it's that's there's don't can't won't didn't isn't
    today tomorrow yesterday now soon later
    like via per since until during near through after before because while
    """
)
# Words that shape a reference but do not name what it refers to.
MODIFIERS = _wordset(
    "new old current usual previous last other same first second own latest regular "
    "normal whole full original former existing standard favourite favorite next"
)
# "my mind", "my fault", "oh my god": possessives that refer to nothing stored.
IDIOM_HEADS = _wordset(
    "mind god gosh goodness fault pleasure apologies apology bad opinion guess word best "
    "self bit part turn end side way honest life day"
)
# "the other day", "the previous week": a time, not a thing.
TIME_WORDS = _wordset("day days week weeks month months year years night time times morning")
MAX_PHRASE_WORDS = 3

_POSSESSIVE = re.compile(r"(?<![\w'’])(?:my|our)\s+", re.IGNORECASE)
# Verbs of something said or done together before: "the hotel you recommended".
_PAST_TOGETHER = (
    r"(?:recommended|suggested|mentioned|sent|showed|offered|quoted|ordered|booked|bought|"
    r"had|used|gave|told|picked|chose|liked|talked|discussed|fixed|installed|delivered|"
    r"tried|saw|got|said|did|paid|rented|returned)"
)
_HISTORY_REFERENCE = re.compile(
    r"(?<![\w'’])(?:"
    r"(?:the|my|our)\s+usual(?:\s+[^\W_]+)?"
    r"|the\s+same(?:\s+[^\W_]+)?"
    rf"|(?:the|that|those)\s+(?:[^\W_]+\s+){{1,2}}?(?:i|we|you)\s+{_PAST_TOGETHER}\b"
    r"|the\s+(?:previous|other|original|old|former|last)\s+[^\W_]+"
    r")",
    re.IGNORECASE,
)
_PRONOUNS = frozenset({"i", "we", "you"})


def normalise(word: str) -> str:
    """A comparable form of a word: case-folded, possessive 's and plural s removed."""
    word = word.casefold().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_terms(text: str) -> list[str]:
    """The normalised content words of ``text``, in order, without repeats."""
    terms = (normalise(w) for w in TOKEN.findall(text) if w.casefold() not in STOPWORDS)
    return list(dict.fromkeys(t for t in terms if len(t) > 1 and not t.isdigit()))


@dataclass(frozen=True)
class Reference:
    """A phrase that assumes the listener knows what it names."""

    phrase: str  # as said, lower-cased: "my membership tier"
    terms: tuple[str, ...]  # the normalised words that name it ("membership", "tier")


def references(text: str) -> list[Reference]:
    """Possessive phrases and references to history in ``text``, in text order."""
    found: list[tuple[int, Reference]] = []
    for match in _POSSESSIVE.finditer(text):
        words = _phrase_after(text[match.end() :])
        if not words or normalise(words[-1]) in IDIOM_HEADS:
            continue
        phrase = " ".join([match.group(0).strip(), *words]).casefold()
        terms = tuple(normalise(w) for w in words if w.casefold() not in MODIFIERS)
        found.append((match.start(), Reference(phrase, terms)))
    for match in _HISTORY_REFERENCE.finditer(text):
        words = TOKEN.findall(match.group(0))
        # The naming words sit between the determiner and any "I/we/you ...":
        # "that restaurant you recommended" is named by "restaurant" alone.
        pronoun = next((i for i, w in enumerate(words) if w.casefold() in _PRONOUNS), len(words))
        terms = tuple(
            normalise(w)
            for w in words[1:pronoun]
            if w.casefold() not in STOPWORDS and w.casefold() not in MODIFIERS
        )
        if terms and all(term in TIME_WORDS for term in terms):
            continue  # "the other day", "at the same time"
        # No naming word ("the usual", "the same again"): only history knows what it is.
        found.append((match.start(), Reference(" ".join(words).casefold(), terms)))
    # "my usual table" is both a possessive and a history reference: said once.
    unique: dict[str, Reference] = {}
    for _, ref in sorted(found, key=lambda item: item[0]):
        unique.setdefault(ref.phrase, ref)
    return list(unique.values())


def _phrase_after(rest: str) -> list[str]:
    """Up to three words after a possessive, ending at a function word or punctuation."""
    words: list[str] = []
    position = 0
    for match in TOKEN.finditer(rest):
        if rest[position : match.start()].strip():  # punctuation ends the phrase
            break
        position = match.end()
        word = match.group(0)
        low = word.casefold()
        if low in STOPWORDS:
            break
        # "my order arrived": a past or -ing form after the first word is the verb;
        # "my daughter's birthday next month": a modifier after the head starts anew.
        if words and (low.endswith(("ed", "ing")) or low in MODIFIERS):
            break
        words.append(word)
        if len(words) == MAX_PHRASE_WORDS:
            break
    return words


def undefined(refs: Iterable[Reference], known: Iterable[str]) -> list[Reference]:
    """The references none of whose naming words the session has used."""
    known_terms = set(known)
    return [ref for ref in refs if not any(term in known_terms for term in ref.terms)]
