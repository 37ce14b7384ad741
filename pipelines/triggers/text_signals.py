"""Rules over a turn's text: explicit memory cues, constraint markers, negative emotion.

Everyday English phrasing, matched on whole words and case-insensitively;
none of the lists names a product, a tenant or a sample sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _phrases(*items: str) -> str:
    """A whole-word alternation of phrases (spaces match any whitespace)."""
    return "|".join(re.escape(item).replace(r"\ ", r"\s+") for item in items)


def _words(body: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w'’])(?:{body})(?![\w'’])", re.IGNORECASE)


# References to something said or done before. The parser's own cues (pipelines/
# parse/acts.py MEMORY_CUES) are taken as given; these add the phrasings it does
# not list, including "earlier"/"before" only after a verb of saying or doing,
# because "can you come earlier?" refers to nothing.
EXPLICIT_CUES = _words(
    _phrases(
        "last time",
        "as i said",
        "as i mentioned",
        "as mentioned",
        "as discussed",
        "as agreed",
        "as i told you",
        "i told you",
        "already told you",
        "told you before",
        "remember",
        "remind me",
        "do you recall",
        "same as last time",
        "same as before",
        "same again",
        "like last time",
        "like before",
        "as before",
        "as usual",
        "as always",
        "previously",
        "we discussed",
        "we talked about",
        "we spoke about",
        "you said",
        "you told me",
        "you mentioned",
        "you promised",
        "i mentioned",
        "did i tell you",
        "have i told you",
        "what did i",
        "the other day",
    )
    + r"|(?:said|mentioned|told\s+you|asked|discussed|agreed|ordered|booked)"
    + r"\s+(?:it\s+|that\s+|this\s+)?(?:earlier|before)"
    # A question about the user's own past or details is a reference to what
    # the memory holds, however it is worded: "How many trips did I take?",
    # "Which hotel did I stay at?", "What's my account number?", "When was my
    # last delivery?". Without it the trigger fired on none of the LongMemEval
    # multi-session and knowledge-update questions asked as the next turn
    # (docs/predictive.md, "Measured").
    + r"|(?:what|when|where|which|who|whom|whose|why|how(?:\s+(?:many|much|long|often|old))?)"
    + r"\b[^.?!]{0,80}?\b(?:did|have|had|was|were)\s+(?:i|we)"
    + r"|(?:what|when|where|which|who|how)(?:'s|’s|\s+is|\s+was|\s+were|\s+are)"
    + r"\s+(?:my|our)"
)


# Any question about the user's own life, however it is worded ("How many
# bikes do I currently own?", "What time do I usually go to the gym?", "Did I
# finish reading The Nightingale?"): a question word or an auxiliary opening a
# clause, then "I", "my", "we" or "our" (or "me", "us" in a question not
# about the other speaker) before the clause's question mark.
# The forms above need a past tense or "what's my"; half of the LongMemEval
# multi-session and knowledge-update questions asked as the next turn matched
# none of them (docs/predictive.md, "Measured"). "Can I ...?" and "Could we
# ...?" are requests, not questions about the past, and are left out.
OWN_QUESTION = re.compile(
    r"(?:^|(?<=[.!?,;:(]))\s*(?:(?:and|so|but|also|then|oh|ok|okay)\s+)*"
    r"((?:what|when|where|which|who|whose|why|how|do|does|did|am|is|are|was|were|have|has|had)"
    r"\b(?:[^.?!]{0,120}?\b(?:i|my|mine|we|our|ours)"
    # "me" and "us" only where the question is not about the other speaker:
    # "what did the callout cost me?", not "do you want me to call back?".
    r"|(?:(?!\byou\b|\byour\b)[^.?!]){0,120}?\b(?:me|us)))\b(?=[^?!\n]{0,120}\?)",
    re.IGNORECASE,
)


def explicit_cues(text: str) -> list[str]:
    """The explicit memory cues of ``text``, lower-cased, whitespace collapsed, sorted."""
    found = [m.group(0) for m in EXPLICIT_CUES.finditer(text)]
    found += [m.group(1) for m in OWN_QUESTION.finditer(text)]
    return sorted({" ".join(cue.casefold().split()) for cue in found})


_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekends?|weekdays?"
# "May I ask" is no month: "may" counts only next to a day number or after "in", "by", ...
_MONTHS = (
    r"january|february|march|april|june|july|august|september|october|november|december|"
    r"(?:in|of|since|until|from|by|mid|early|late)\s+may|may\s+\d{1,2}(?:st|nd|rd|th)?\b"
)
# Ordered alternatives, longest first, so "no later than 5 pm" is one limit and
# one time rather than a negation, a limit and a number.
_CONSTRAINT_KINDS: tuple[tuple[str, str], ...] = (
    (
        "limit",
        _phrases(
            "no later than",
            "no earlier than",
            "no more than",
            "no less than",
            "at least",
            "at most",
            "at the latest",
            "less than",
            "more than",
            "fewer than",
            "up to",
            "only",
            "except",
            "unless",
            "without",
            "within",
            "between",
            "until",
            "till",
            "before",
            "maximum",
            "minimum",
            "max",
            "min",
            "must",
            "have to",
            "has to",
            "need it by",
            "by then",
            "exactly",
        )
        # "after all" is an idiom; "under"/"over" limit only an amount ("under 20").
        + r"|after(?!\s+all\b)|(?:under|over|below|above)(?=\s*[$£€]?\d)",
    ),
    (
        "negation",
        r"not|no|never|none|nothing|neither|nor|cannot|can't|won't|don't|doesn't|didn't|"
        r"isn't|aren't|wasn't|shouldn't|mustn't|[a-z]+n't",
    ),
    (
        "time",
        rf"(?:{_WEEKDAYS})|(?:{_MONTHS})|today|tonight|tomorrow|yesterday|"
        r"(?:next|this|last)\s+(?:week|month|year|morning|afternoon|evening)|"
        r"\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}|o'clock|noon|midnight|"
        r"\d{1,2}(?:st|nd|rd|th)",
    ),
    (
        "quantity",
        r"[$£€]\s*\d(?:[\d,.]*\d)?|\d(?:[\d,.\-/]*\d)?\s*(?:%|percent|euros?|dollars?|pounds?|kg|km|gb|mb|mbps|"
        r"minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)?|"
        r"two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|dozen|half",
    ),
)
_CONSTRAINT_MARKERS = re.compile(
    "|".join(rf"(?P<{kind}>(?<![\w'’])(?:{body})(?![\w'’]))" for kind, body in _CONSTRAINT_KINDS),
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ConstraintCount:
    """Constraint markers found in a turn, per kind (limit, negation, time, quantity)."""

    markers: tuple[tuple[str, str], ...]  # (kind, matched text), in text order

    @property
    def total(self) -> int:
        return len(self.markers)

    def describe(self) -> str:
        """``"negation: not; time: friday, 2 pm"``: what the signal records as evidence."""
        kinds: dict[str, list[str]] = {}
        for kind, text in self.markers:
            kinds.setdefault(kind, []).append(text)
        return "; ".join(f"{kind}: {', '.join(found)}" for kind, found in kinds.items())


def constraint_markers(text: str) -> ConstraintCount:
    """Every constraint marker of ``text`` (non-overlapping, leftmost-longest by kind order)."""
    found = []
    for match in _CONSTRAINT_MARKERS.finditer(text):
        kind = match.lastgroup or "limit"
        found.append((kind, " ".join(match.group(0).casefold().split())))
    return ConstraintCount(tuple(found))


# Words of strong displeasure in support and everyday chat. Mild words
# ("sadly", "unfortunately") are left out on purpose: they are politeness.
_NEGATIVE_WORDS = _words(
    _phrases(
        "angry",
        "furious",
        "livid",
        "outraged",
        "outrageous",
        "fuming",
        "frustrated",
        "frustrating",
        "annoyed",
        "annoying",
        "irritated",
        "upset",
        "disappointed",
        "disappointing",
        "disgusted",
        "disgusting",
        "unacceptable",
        "ridiculous",
        "absurd",
        "appalling",
        "appalled",
        "terrible",
        "horrible",
        "awful",
        "dreadful",
        "worst",
        "useless",
        "pathetic",
        "hopeless",
        "incompetent",
        "rubbish",
        "a joke",
        "a nightmare",
        "hate",
        "sick of",
        "fed up",
        "had enough",
        "tired of",
        "not happy",
        "not ok",
        "not okay",
        "scam",
        "stressed",
        "miserable",
        "heartbroken",
        "devastated",
        "gutted",
        "wtf",
    )
)
_INTENSIFIER_BEFORE = re.compile(
    r"(?:so|very|really|extremely|absolutely|totally|completely|utterly|incredibly|"
    r"beyond|seriously|truly|deeply|properly)\s+$",
    re.IGNORECASE,
)
# A lexicon word right after a negator is the opposite ("not bad", "never upset").
_NEGATED_BEFORE = re.compile(r"(?:not|never|n't|no)\s+(?:\w+\s+)?$", re.IGNORECASE)
_EXCLAIM_RUN = re.compile(r"[!?]*![!?]*!")  # "!!", "?!!", "!?!"
_SHOUT = re.compile(r"\b[A-Z]{3,}\b")
# Capitalised words that are names, not shouting.
_ACRONYMS = frozenset({"USA", "UK", "EU", "CEO", "FAQ", "PIN", "SMS", "URL", "ETA", "ASAP", "TV"})


@dataclass(frozen=True)
class EmotionScore:
    """How strongly a turn reads as negative, and the cues that said so."""

    score: float
    cues: tuple[str, ...]


def negative_emotion(text: str, complaint: bool = False) -> EmotionScore:
    """Score strong negative emotion: lexicon words, intensifiers, "!!", shouting, complaint.

    A turn without a lexicon word scores 0 whatever its punctuation, so an
    excited "Great news!!" or an acronym in capitals never fires.
    """
    score = 0.0
    cues: list[str] = []
    for match in _NEGATIVE_WORDS.finditer(text):
        before = text[: match.start()]
        word = " ".join(match.group(0).casefold().split())
        if not word.startswith("not ") and _NEGATED_BEFORE.search(before):
            continue
        score += 1.0
        cues.append(word)
        if _INTENSIFIER_BEFORE.search(before):
            score += 0.5
            cues.append("intensifier")
    if not cues:
        return EmotionScore(0.0, ())
    if _EXCLAIM_RUN.search(text):
        score += 1.0
        cues.append("!!")
    shouted = [w for w in _SHOUT.findall(text) if w not in _ACRONYMS]
    if len(shouted) >= 2:
        score += 1.0
        cues.append("shouting")
    if complaint:
        score += 0.5
        cues.append("complaint")
    return EmotionScore(score, tuple(cues))
