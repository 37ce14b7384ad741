"""Which sentences and times say something about the user's own arrangements.

A time or a thing mentioned in dialogue is not always a fact about the user:
an agent describes what the business offers ("Yoga runs every Thursday
evening", "There's a Saturday class", "Our green tariff starts next month"); a
user explains why a time is bad ("I work weekends") or recalls something that
went wrong ("The engineer never came on Friday"). These rules, read off spaCy's
dependencies, keep such mentions out of the facts. They were written from the
dev split's errors (benchmarks/devset/conversations.txt) as general forms.
"""

from __future__ import annotations

from typing import Any

from pipelines.extract import vocabulary as vocab
from pipelines.extract.spans import clause_of, is_time_core

# Verbs whose times are no arrangement with the user: the user's own working
# hours ("I work night shifts") and plan changes ("I might switch in May"), for
# which the vocabulary has no time predicate.
NON_SCHEDULE_VERBS = frozenset({"work", "switch", "upgrade", "downgrade"})
# Verbs that still set an arrangement when said in the past tense ("I booked it
# for Monday", "as I said, no calls before 9"); any other past-tense verb with a
# subject tells of a past event ("the repair person never came on Friday").
ARRANGING_VERBS = frozenset(
    {"book", "schedule", "reschedule", "arrange", "change", "move", "set", "confirm", "agree"}
)
ARRANGING_VERBS |= frozenset({"say", "tell", "mention", "ask", "mean"})
# A participle under one of these is something wanted done later, not a past event.
WANTING_VERBS = frozenset({"like", "want", "need", "prefer", "have", "get"})
SELF = frozenset({"i", "we"})
# Words that say the speaker cannot be reached at a time ("I'm away on Monday").
UNAVAILABLE = frozenset({"away", "busy", "unavailable", "occupied"})
# How far up the dependency tree a time's governing verb is looked for:
# dialogue sentences are shallow (the same bound as polarity.dependency_negated).
MAX_DEPTH = 6


def governing_verb(span: Any) -> Any | None:
    """The nearest verb at or above the span's root, or None."""
    token = span.root
    for _ in range(MAX_DEPTH):
        if token.pos_ in {"VERB", "AUX"}:
            return token
        if token.head is token:
            return None
        token = token.head
    return None


def _subject(verb: Any) -> Any | None:
    return next((c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass", "expl"}), None)


def is_schedule_time(span: Any) -> bool:
    """False for a time of the user's work, of a plan change, or of a past event."""
    verb = governing_verb(span)
    # "Friday, I got my days mixed up": a verb after a comma starts another
    # clause, however the parser attached the time.
    if verb is None or (
        verb.i >= span.end and any(t.text == "," for t in span.doc[span.end : verb.i])
    ):
        return True
    lemma = verb.lemma_.lower()
    subject = _subject(verb)
    # Only a time after the verb is its time: in "Not on Saturday, I work
    # weekends" the refused Saturday hangs off "work" too.
    # "switch the delivery to Tuesday" moves an arrangement: its topic cue says so.
    moves_arrangement = vocab.time_topic({t.lemma_.lower() for t in clause_of(span)}) is not None
    if (
        lemma in NON_SCHEDULE_VERBS
        and verb.i < span.start
        and (lemma != "work" or (subject is not None and subject.lower_ in SELF))
        and not (lemma != "work" and moves_arrangement)
    ):
        return False
    # "(Remember I told you) Wednesdays were no good": a reported arrangement.
    if lemma in ARRANGING_VERBS or (
        verb.dep_ == "ccomp" and verb.head.lemma_.lower() in ARRANGING_VERBS
    ):
        return True
    # "The engineer never came on Friday"; "Yes, bought in January" (a participle
    # with no auxiliary: "will be delivered on Monday" has one and is to come).
    auxiliaries = [c for c in verb.children if c.dep_ in {"aux", "auxpass"}]
    # "it didn't show up Thursday": the past is on the auxiliary; "I'd prefer
    # you didn't come before 10am" is a wish, not the past.
    wished = verb.dep_ == "ccomp" and verb.head.lemma_.lower() in {"prefer", "rather", "wish"}
    did = any(a.tag_ == "VBD" and a.lemma_ == "do" for a in auxiliaries) and not wished
    past = (verb.tag_ == "VBD" or did) and subject is not None
    return not (
        past or (verb.tag_ == "VBN" and not auxiliaries and subject is None and not _wanted(verb))
    )


# Words before or in a time that place it in the past ("last night", "two days ago").
PAST_TIME_WORDS = frozenset({"ago", "last", "yesterday", "earlier", "since"})
# Past-tense verbs that say nothing of a past event: states ("it was due on the
# 1st") and arrangements ("I booked it for Monday").
PAST_NEUTRAL_VERBS = ARRANGING_VERBS | {"be", "have"}
# Words before a place that make it a stop on the way, not where the trip goes.
ROUTE_WORDS = frozenset({"via", "layover", "stopover", "connecting"})


def tells_of_the_past(span: Any) -> bool:
    """A time of something someone else already did: "the driver called me at 11 pm".

    Such a time is a complaint or a story, no booking or constraint of the
    user's. Narrower than :func:`is_schedule_time`, which the rules use: a verb
    in the past tense with a subject other than the speaker ("I started
    swimming, 7am Mon Wed Fri" is a habit), or a past time word ("last night").
    A past-tense arrangement ("they moved it to Monday") still counts.
    """
    before = span.doc[span.start - 1].lower_ if span.start > span.sent.start else ""
    if before in PAST_TIME_WORDS or any(t.lower_ in PAST_TIME_WORDS for t in span):
        return True
    verb = governing_verb(span)
    if verb is None or verb.tag_ != "VBD" or verb.lemma_.lower() in PAST_NEUTRAL_VERBS:
        return False
    subject = _subject(verb)
    return subject is not None and subject.lower_ not in SELF and verb.i < span.start


def on_the_way(span: Any) -> bool:
    """A place passed through on a trip ("the flight via Helsinki"), not its destination."""
    before = span.doc[span.start - 1].lower_ if span.start > span.sent.start else ""
    return before in ROUTE_WORDS or (
        span.start > span.sent.start + 1
        and span.doc[span.start - 1].lower_ == "in"
        and span.doc[span.start - 2].lower_ in ROUTE_WORDS
    )


def _wanted(participle: Any) -> bool:
    """Wanted done later: "(I'd like) the payment taken on the 1st", "want it delivered"."""
    heads = [participle.head, participle.head.head]
    return any(h.lemma_.lower() in WANTING_VERBS for h in heads if h is not participle)


def describes_offering(sent: Any) -> bool:
    """An agent sentence about the business, not the user: "There's a Thursday group".

    Its main verb has an expletive subject ("there is"), the subject "we" with
    "have" ("We have a gym in Manchester"), a subject owned by "our" ("Our
    unlimited plan is 40 euros") or a bare noun subject that is not a time
    ("Yoga runs every Thursday evening", "Meetings are on Tuesdays").
    """
    root = sent.root
    subject = _subject(root)
    if subject is None:
        return False
    if subject.dep_ == "expl":
        return True
    # "We have a gym in Manchester", "We run evening groups on Mondays".
    if subject.lower_ == "we" and root.lemma_.lower() in {"have", "run", "hold", "teach"}:
        return root.lemma_.lower() == "have" or root.tag_ == "VBP"
    # A time or a topic of the user's arrangement ("Installation is booked for
    # Tuesday") as the subject: the sentence is about the user after all.
    if subject.pos_ not in {"NOUN", "PROPN"} or is_time_core(subject):
        return False
    if any(subject.lemma_.lower() in cues for _, cues in vocab.TIME_TOPICS):
        return False
    determiners = [c.lower_ for c in subject.children if c.dep_ in {"det", "poss"}]
    return determiners in ([], ["our"]) and not any(
        is_time_core(c) for c in subject.children if c.dep_ == "compound"
    )


def unavailable(span: Any) -> bool:
    """The speaker says they are away or busy at this time: "I'm away on Monday".

    Such a time is refused, so its polarity flips once (``Candidate.reverse``);
    "I'm not busy on Monday" flips back to affirmed.
    """
    return any(
        t.lower_ in UNAVAILABLE
        and t.dep_ in {"acomp", "advmod", "amod"}
        and any(c.dep_ == "nsubj" and c.lower_ in SELF for c in t.head.children)
        for t in clause_of(span)
    )
