"""Rules that give a sentence its dialogue act and memory cues.

Cue phrases are matched on the lower-cased sentence with word boundaries. The
lists were written from the examples in issue 3 and everyday support-chat
phrasing; the dev set (benchmarks/devset/) was written separately from them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.parse.model import Intent
from schemas.events import Role


def _phrases(*items: str) -> re.Pattern[str]:
    """One case-insensitive alternation of whole-word phrases."""
    body = "|".join(re.escape(item).replace(r"\ ", r"\s+") for item in items)
    return re.compile(rf"(?<![\w'])(?:{body})(?![\w'])", re.IGNORECASE)


# Words that alone make up greetings, thanks and fillers ("ok cool thanks!").
FILLER_WORDS = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "hiya",
        "morning",
        "evening",
        "afternoon",
        "good",
        "night",
        "bye",
        "goodbye",
        "cheers",
        "thanks",
        "thank",
        "thx",
        "ta",
        "you",
        "so",
        "much",
        "a",
        "lot",
        "very",
        "ok",
        "okay",
        "k",
        "cool",
        "great",
        "perfect",
        "super",
        "nice",
        "lovely",
        "fine",
        "sure",
        "yes",
        "yeah",
        "yep",
        "no",
        "nope",
        "lol",
        "haha",
        "hahaha",
        "hmm",
        "um",
        "uh",
        "oh",
        "wow",
        "awesome",
        "again",
        "there",
        "all",
        "day",
        "have",
        "right",
        "alright",
        "bravo",
        "excellent",
    ]
)

MEMORY_CUES = _phrases(
    "last time",
    "as i said",
    "as i mentioned",
    "as i told you",
    "i told you",
    "remember",
    "same as last time",
    "same again",
    "like last time",
    "like before",
    "previously",
    "last week",
)

# Ordered: the first matching rule names the act. Cancellation and correction
# outrank everything because they change how the rest of the turn is read.
ACT_RULES: Sequence[tuple[Intent, re.Pattern[str]]] = (
    (
        Intent.CANCEL_REQUEST,
        _phrases("cancel", "never mind", "no need", "forget it", "call off", "unsubscribe me"),
    ),
    (
        Intent.CORRECTION,
        _phrases(
            "actually",
            "i changed my mind",
            "changed my mind",
            "correction",
            "scratch that",
            "i meant",
            "made a mistake",
            "my mistake",
            "on second thought",
            "on second thoughts",
            "change of plan",
            "no wait",
            "instead",
            "update:",
            "wrong",
            "my new",
            "i moved",
            "moved house",
            "is now",
            "now it's",
            "i decided",
            "after all",
            "any more",
            "anymore",
            "no longer",
        ),
    ),
    (
        Intent.COMPLAINT,
        _phrases(
            "not happy",
            "unacceptable",
            "annoyed",
            "disappointed",
            "complain",
            "complaint",
            "stopped working",
            "broke",
            "broken",
            "damaged",
            "never showed up",
            "never came",
            "hasn't arrived",
            "haven't received",
            "nobody called",
            "too small",
            "too big",
            "keeps dropping",
            "too slow",
            "extremely slow",
            "leaks",
        ),
    ),
    (
        Intent.CONFIRM_ACTION,
        _phrases(
            "i've registered",
            "i have registered",
            "i've booked",
            "i've switched",
            "i've updated",
            "done",
            "booked",
            "updated",
            "changed to",
            "has shipped",
            "is booked",
            "is updated",
            "unsubscribed",
            "fixed",
            "it's confirmed",
            "is confirmed",
            "registered",
        ),
    ),
    (
        Intent.COMMITMENT,
        _phrases(
            "i'll", "i will", "we'll", "we will", "i promise", "will do", "i'm going to", "we won't"
        ),
    ),
    (
        Intent.ORDER,
        _phrases(
            "order", "buy", "purchase", "book a", "book the", "subscribe", "sign up", "reserve"
        ),
    ),
    (
        Intent.PREFERENCE,
        _phrases(
            "prefer",
            "like",
            "love",
            "hate",
            "can't stand",
            "fan of",
            "rather",
            "favourite",
            "vegan",
            "vegetarian",
            "allergic",
            "don't eat",
            "don't drink",
            "never eat",
            "is better",
            "works best",
            "are best",
        ),
    ),
    (
        Intent.REQUEST,
        _phrases(
            "please",
            "i need",
            "i want",
            "i'd like",
            "can you",
            "could you",
            "would you",
            "don't",
            "never",
            "make it",
            # A rescheduling question is a request for the new value, not an inquiry.
            "can i move",
            "can we move",
            "could i move",
            "could we move",
            "can i change",
            "can we change",
            "could i change",
            "could we change",
            "can we reschedule",
            "could we reschedule",
            "can we push",
            "could we push",
            "can you push",
            "could you push",
            "can we do",
            "could we do",
            "can we make it",
            "could we make it",
            # "can it come out on the 28th?", "maybe switch the delivery to Sundays?"
            "can it",
            "could it",
            "can they",
            "could they",
            "can u",
            "could u",
            "can the",
            "could the",
            "can i switch",
            "could i switch",
            "can we switch",
            "could we switch",
            "switch the",
            "switch it",
            "move the",
            "move it",
            "change the",
            "change it",
        ),
    ),
)
# "can't do saturday now." states and "Do ring me" bids; "can we ...?", "do you ...?" ask.
QUESTION_START = re.compile(
    r"^(?:what|when|where|which|who|why|how|is|are|can|could|will|would|shall|should|may"
    r"|(?:do|does|did)(?=\s+(?:you|we|i|they|he|she|it|the|your|my|our)\b))(?![\w'’])",
    re.IGNORECASE,
)
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?|[\U0001F300-\U0001FAFF\u2600-\u27BF]")


def is_filler(text: str) -> bool:
    """True when every word of ``text`` is a greeting, thanks or filler word."""
    words = WORD.findall(text.lower())
    # A "word" without letters or digits is an emoji; "email's" is a word.
    return all(word in FILLER_WORDS or not any(c.isalnum() for c in word) for word in words)


def memory_cues(text: str) -> list[str]:
    """The explicit references to earlier turns ("last time", "as I said", ...)."""
    return sorted(
        {" ".join(match.group(0).lower().split()) for match in MEMORY_CUES.finditer(text)}
    )


# Wishes that close a conversation: "Thanks, have a lovely weekend!"
FAREWELL = re.compile(
    r"\bhave a (?:nice|lovely|good|great|wonderful) (?:day|weekend|evening|night|one)\b",
    re.IGNORECASE,
)


def sentence_act(text: str, role: Role) -> Intent:
    """The dialogue act of one English sentence said by ``role``."""
    if is_filler(text) or (FAREWELL.search(text) and len(text.split()) <= 8):
        return Intent.CHIT_CHAT
    for intent, pattern in ACT_RULES:
        # Agents confirm and commit; a user's "done" or "booked" is a statement.
        if intent is Intent.CONFIRM_ACTION and role is not Role.AGENT:
            continue
        if pattern.search(text):
            return intent
    if text.rstrip().endswith("?") or QUESTION_START.match(text.strip()):
        return Intent.INQUIRY
    return Intent.INFORM


def turn_act(acts: Sequence[Intent]) -> Intent:
    """The act of a whole turn: the highest-ranked act of its sentences."""
    ranked = [intent for intent, _ in ACT_RULES] + [Intent.INQUIRY, Intent.INFORM]
    substantive = [act for act in acts if act in ranked]
    if substantive:
        return min(substantive, key=ranked.index)
    return acts[0] if acts else Intent.CHIT_CHAT
