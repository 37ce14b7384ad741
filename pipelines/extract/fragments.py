"""Likes stated as noun-phrase fragments: "No feta, thanks.", "Cooking, not sports."

Dialogue answers are often verbless, so the verb-based rules of
``candidates.dependency_candidates`` never see them; these rules read the noun
chunks themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pipelines.extract import vocabulary as vocab
from pipelines.extract.candidates import ARRANGEMENT_NOUNS, Candidate, head_word, liked
from pipelines.extract.spans import is_time_core

LOCATIVE = frozenset({"at", "in", "on", "from", "near"})
# Words that open a "not X" fragment; "no"/"not"/"never" are also what the
# negation detectors read, "without" and "nor" are added by EXTRA_TERMS.
FRAGMENT_NEGATORS = frozenset({"no", "not", "never", "without", "nor", "neither", "none"})
FRAGMENT_DROP = FRAGMENT_NEGATORS | {"any", "some", "more", "the", "a", "an"}
# Parts of speech that end a fragment's lead-in ("Yes, only ...", "Probably ...").
FRAGMENT_BREAK_POS = frozenset({"INTJ", "ADV", "PUNCT", "CCONJ", "DET", "PRON"})
# Nouns of courtesy and dialogue management, never things liked ("no problem").
FRAGMENT_STOP_NOUNS = frozenset(
    {
        "problem",
        "worry",
        "need",
        "thank",
        "thanks",
        "idea",
        "way",
        "time",
        "one",
        "thing",
        "day",
        "week",
        "month",
        "year",
        "bye",
        "rush",
        "hurry",
        "question",
        "change",
        "plan",
        "date",
        "order",
        "people",
        "person",
        "number",
        "address",
        "code",
        "reading",
        "fan",
        "option",
        "choice",
        "alternative",
        "slot",
        "use",
        "chance",
        "bother",
        "place",
        "please",
        "pls",
        "good",
        "scratch",
        "interest",
    }
)


def _fragment_head(chunk: Any, answer: bool = False) -> bool:
    """A noun phrase that can be a thing liked: not a time, topic, number or courtesy.

    A topic word is one only outside an ``answer`` to a choice ("Train or
    flight?" - "Train.").
    """
    root = chunk.root
    # A topic word alone ("no delivery on Monday") is an arrangement; with a
    # modifier that is no time ("no paper bills") it names a thing.
    modified = any(not is_time_core(t) for t in chunk if t.i < root.i)
    if root.lemma_.lower() in ARRANGEMENT_NOUNS and not modified:
        return False  # "Delivery, maybe on Saturday." chooses how, not what is liked
    return (
        root.pos_ in {"NOUN", "PROPN"}
        and not any(t.like_num or t.is_digit for t in chunk)
        and root.lemma_.lower() not in FRAGMENT_STOP_NOUNS
        and (
            answer
            or modified
            or not any(root.lemma_.lower() in cues for _, cues in vocab.TIME_TOPICS)
        )
    )


DECLINE = re.compile(r"\bno,? thanks?\b|\bno thank you\b", re.IGNORECASE)


def _regex_span(sent: Any, regex: re.Pattern[str]) -> Iterator[Any]:
    for match in regex.finditer(sent.text):
        span = sent.doc.char_span(
            sent.start_char + match.start(), sent.start_char + match.end(), alignment_mode="expand"
        )
        if span is not None:
            yield span


def _phrases(sent: Any) -> list[Any]:
    """SpaCy's noun chunks, plus "no X" phrases it leaves out ("no cutlery, we've got loads").

    Also "neither a hostel nor ...", whose "neither" spaCy hangs off the noun.
    """
    chunks = list(sent.noun_chunks)
    for token in sent:
        det = [c for c in token.children if c.lower_ in {"no", "neither"} and c.i < token.i]
        if (
            det
            and token.pos_ in {"NOUN", "PROPN"}
            and not any(c.start <= token.i < c.end for c in chunks)
        ):
            chunks.append(sent.doc[det[0].i : token.i + 1])
    return chunks


def _common_noun_place(span: Any) -> bool:
    return bool(span.label_ == "PLACE" and all(t.pos_ != "PROPN" for t in span))


def fragment_candidates(
    sent: Any, found: list[Candidate], ner: list[Any], answer: str | None = None
) -> Iterator[Candidate]:
    """Likes stated as noun-phrase fragments: "No feta.", "Cooking, not sports."

    A negator ("no", "not", "never", "without", "nor") right before a noun phrase
    says the speaker does not want it, whatever the verb. A sentence without any
    verb that answers the agent's question names what ``answer`` says: a thing
    liked after a choice question ("Which seat?" - "Aisle, please."), an allergy
    after "Any allergies?" ("Penicillin."). Phrases already read by another rule
    or overlapping a NER span are left to that rule.
    """
    # A tagger PLACE over common nouns ("No SUVs") is no place and a COMMITMENT
    # ("none of those") no object; other spans hide their words.
    taken = [c.span for c in found] + [
        s for s in ner if not _common_noun_place(s) and s.label_ != "COMMITMENT"
    ]
    verbless = not any(t.pos_ in {"VERB", "AUX"} for t in sent)
    # "Pilates no thanks.": what comes before a polite refusal is refused (negex
    # reads the refusal as a following negation).
    declined = next((m for m in _regex_span(sent, DECLINE)), None) if verbless else None
    for chunk in _phrases(sent):
        if any(chunk.start < s.end and s.start < chunk.end for s in taken):
            continue
        # The phrase starts after the last negator, determiner, interjection or
        # adverb of the chunk: "Yes, only green energy" -> "green energy".
        start = max(
            [t.i + 1 for t in chunk if t.lower_ in FRAGMENT_DROP or t.pos_ in FRAGMENT_BREAK_POS],
            default=chunk.start,
        )
        root = chunk.root
        # "I'm not at the office": a place the speaker is (not) at, not a thing liked;
        # "Neither my sister nor I eat dairy": a subject is who, not what.
        if (
            start > root.i
            or (root.dep_ == "pobj" and root.head.lower_ in LOCATIVE)
            or (
                root.dep_ == "nsubj"
                and any(c.dep_ == "conj" and c.pos_ == "PRON" for c in root.children)
            )
        ):
            continue
        span = chunk.doc[start : root.i + 1]
        answers = verbless and answer is not None
        if not _fragment_head(span, answer=answers):
            continue
        before = chunk.doc[max(sent.start, chunk.start - 2) : start]
        # "no cutlery", "none of the kiwis"; not "I never check that account" (a verb between).
        negators = [t for t in before if t.lower_ in FRAGMENT_NEGATORS]
        negated = bool(negators) and not any(
            t.pos_ == "VERB" for t in chunk.doc[negators[-1].i : start]
        )
        # "there's no lift": how things are, not what the speaker wants.
        if (
            negated
            and root.head.lemma_.lower() == "be"
            and any(c.dep_ == "expl" for c in root.head.children)
        ):
            continue
        value = f"{chunk.doc[start : root.i].text.lower()} {head_word(root)}".strip()
        if answers and answer == "allergy" and not negated:
            yield Candidate("allergy", value, span, "ITEM", explicit=False)
        elif negated or answers or (declined and span.end <= declined.start):
            yield liked(value, span, explicit=False)


# Praise that says the speaker likes the subject: "Black is good.", "The Rioja was
# great!". Strong words only: "fine" and "okay" accept a time or an offer far
# more often than they praise a thing.
PRAISE = frozenset(
    {"good", "great", "lovely", "delicious", "excellent", "amazing", "fantastic", "tasty"}
)
PRAISE |= frozenset({"wonderful", "perfect", "brilliant"})


def _for_me(verb: Any) -> bool:
    return any(
        c.dep_ == "prep" and c.lower_ == "for" and any(o.lower_ == "me" for o in c.children)
        for c in verb.children
    )


def evaluation_candidates(sent: Any, taken: list[Any]) -> Iterator[Candidate]:
    """Likes stated as an evaluation of a thing: "<noun phrase> is/was <praise word>".

    Also "<noun phrase> (doesn't) agree(s) with me", whose negation the polarity
    rules read off the verb. The subject must be a noun phrase that no other rule
    or NER span took ("Thursday is good" is a time, read by the NER rules).
    """
    for token in sent:
        subjects = [c for c in token.children if c.dep_ == "nsubj"]
        if token.lemma_.lower() == "agree":
            if not any(c.lower_ == "with" for c in token.children):
                continue
        elif token.lemma_.lower() == "be" and _for_me(token):
            pass  # "Hot desking really isn't for me" (the polarity rules read the "n't")
        elif token.lemma_.lower() == "be":
            praise = [c for c in token.children if c.dep_ == "acomp" and c.lower_ in PRAISE]
            if not praise or any(c.dep_ == "neg" for c in token.children):
                continue
        else:
            continue
        if not subjects:
            continue
        subject = subjects[-1]  # the one next to the verb: "Mild please, spicy food doesn't ..."
        if subject.pos_ not in {"NOUN", "PROPN", "ADJ"} or is_time_core(subject):
            continue
        words = [t for t in subject.subtree if t.i <= subject.i and t.dep_ not in {"det", "poss"}]
        span = subject.doc[words[0].i : subject.i + 1]
        if any(span.start < s.end and s.start < span.end for s in taken):
            continue
        value = f"{subject.doc[words[0].i : subject.i].text.lower()} {head_word(subject)}"
        yield liked(value.strip(), span, explicit=False)
