"""What the user cannot stand is a negated like: "I can't stand golf" is ``likes NOT golf``.

The vocabulary keeps a dislike as the negation of ``likes``
(docs/vocabulary.md; benchmarks/devset/LABELLING.md: "can't stand olives" →
``likes NOT olives``). The tagger reads "don't like X" well, but the verbs
that say dislike on their own ("hate", "loathe", "can't stand", "cannae
stand") it often leaves untagged, and most of all when the thing disliked is
no food or hobby it saw in training ("I hate the winter here", "can't stand
the weekend kooks").

``stated_dislikes`` reads the dislike verb and the noun phrase it takes: the
thing itself, without its article or what follows it ("the jazz fusion he
puts on" → ``jazz fusion``). A pronoun or a demonstrative ("can't stand it",
"I hate that place") points at something said before and is left to the
tagger; so is a time ("I hate Mondays", a booking's constraint in customer
service) and someone else's dislike ("Frijol hates her"). A way of being
reached that the user hates ("I hate phone calls") is a channel refused:
``contact_channel NOT call``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pipelines.extract.events import FIRST_PERSON
from pipelines.extract.learned.facts import CONFIDENCE_HEDGED
from pipelines.extract.polarity import is_hedged
from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import undated
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity

# Verbs that say dislike alone, and those that say it after "can't".
_HATE = frozenset({"hate", "hates", "hated", "loathe", "loathes", "detest", "detests", "despise"})
_STAND = frozenset({"stand", "stomach", "bear", "abide"})
# "can't", "cant", "cannot", "cannae", "canny", "couldn't" right before the verb.
_CANNOT = re.compile(
    r"\b(?:can'?t|can’t|cannot|can not|cannae|canny|couldn'?t|couldn’t|could not)\s+$",
    re.IGNORECASE,
)
# Words that open the disliked noun phrase and are no part of its name.
_OPENERS = frozenset({"the", "a", "an", "all", "any", "my", "our", "his", "her", "their", "your"})
_OPENERS |= frozenset({"ma", "me", "mi", "some", "most", "much", "really", "just", "absolutely"})
# A phrase that points back at something said before: the tagger's to resolve.
_POINTERS = frozenset({"it", "them", "that", "this", "those", "these", "him", "her", "one"})
_POINTERS |= frozenset({"everything", "anything", "nothing", "stuff", "thing", "things", "people"})
_POINTERS |= frozenset({"when", "how", "what", "being", "myself", "yourself", "you", "u", "ya"})
_MAX_WORDS = 4
# Above the review gate's commit threshold (0.82): the verb says the dislike
# outright; a hedged one waits for the user (learned/facts.py).
CONFIDENCE = 0.86


def stated_dislikes(
    event: DialogueEvent, doc: Any, facts: Sequence[ExtractedFact]
) -> list[ExtractedFact]:
    """``facts`` with each thing the user says they hate or cannot stand, as a negated like."""
    if event.role is not Role.USER or doc is None:
        return list(facts)
    vocabulary = default_vocabulary()
    channel = vocabulary.spec("contact_channel")
    out = list(facts)
    for sent in doc.sents:
        if "?" in sent.text:
            continue
        for verb in sent:
            value = _disliked(sent, verb)
            if value is None:
                continue
            # A way of being reached ("I hate phone calls") is a channel refused.
            predicate = "contact_channel" if channel.problem(value) is None else "likes"
            value = vocabulary.spec(predicate).normalise(value)
            same = [f for f in out if f.predicate == predicate and _same_thing(f.object, value)]
            if any(f.polarity is Polarity.NEGATED for f in same):
                continue
            # The tagger's "likes whisky onywey" from "ah cannae stand whisky
            # onywey" read the thing and missed the verb.
            out = [f for f in out if f not in same]
            hedged = is_hedged(sent.text)
            dislike = stated(
                event,
                predicate,
                value,
                asserted_by=Assertor.USER,
                confidence=CONFIDENCE_HEDGED if hedged else CONFIDENCE,
                field="VALUE",
                polarity=Polarity.NEGATED,
            )
            out.append(dislike.model_copy(update={"hedged": hedged}))
    return out


def _same_thing(a: str, b: str) -> bool:
    """Whether two readings name one thing: the words of one hold the other's."""
    x, y = set(a.split()), set(b.split())
    return bool(x and y) and (x <= y or y <= x)


def _disliked(sent: Any, verb: Any) -> str | None:
    """The thing ``verb`` says the speaker dislikes, if it is a dislike verb of theirs."""
    word = verb.lower_
    if word in _STAND:
        said_before = sent.doc.text[sent.start_char : verb.idx]
        if not _CANNOT.search(said_before):
            return None
    # "a hate crime" names no dislike; "I don't hate it" denies one.
    elif word not in _HATE or verb.pos_ != "VERB" or any(c.dep_ == "neg" for c in verb.children):
        return None
    if not _speakers(verb):
        return None
    return _phrase(sent, verb.i + 1)


def _speakers(verb: Any) -> bool:
    """Whether the dislike is the speaker's: "I hate", "we can't stand", or no subject said."""
    # The parse reads a chat spelling of "can't" as the subject ("ah cannae stand").
    subjects = [
        c
        for c in verb.children
        if c.dep_ in {"nsubj", "nsubjpass"} and not _CANNOT.search(c.text + " ")
    ]
    return not subjects or any(t.lower_ in FIRST_PERSON for s in subjects for t in s.subtree)


def _phrase(sent: Any, start: int) -> str | None:
    """The noun phrase (or "-ing" phrase) from ``start``: its words, without openers."""
    doc = sent.doc
    i = start
    while i < sent.end and doc[i].lower_ in _OPENERS:
        i += 1
    # "cant stand on the rocks" is standing; "I'd hate to leave it" a wish.
    if i >= sent.end or doc[i].lower_ in _POINTERS or doc[i].pos_ in {"PRON", "ADP", "PART"}:
        return None
    chunk = next((c for c in doc.noun_chunks if c.start <= i < c.end), None)
    if chunk is not None and doc[i].tag_ != "VBG":
        words = [t for t in doc[i : chunk.end] if not t.is_punct]
    else:
        # "I hate driving at night": the activity and its few words.
        words = []
        while i < sent.end and not doc[i].is_punct and len(words) < _MAX_WORDS:
            if words and doc[i].pos_ in {"CCONJ", "SCONJ", "AUX", "PRON"}:
                break
            words.append(doc[i])
            i += 1
    if not words or len(words) > _MAX_WORDS or words[-1].lower_ in _POINTERS:
        return None
    value = " ".join(t.lower_ for t in words)
    # A time ("Mondays", "early mornings") is a booking's constraint, not a taste.
    if not undated(value).strip():
        return None
    return value
