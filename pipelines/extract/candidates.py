"""Candidate objects of one sentence: (predicate, object span) pairs before polarity.

NER spans (TIME, PLACE, NUMBER) get their predicate from topic cues around
them; objects that are not NER spans (diets, likes, plans, channels, payment
methods, e-mail addresses) come from closed lists and spaCy dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pipelines.extract import vocabulary as vocab
from pipelines.extract.scope import is_schedule_time, on_the_way, unavailable
from pipelines.extract.spans import clause_of, is_time_core, number_core, place_core, time_parts

# Verbs whose direct object is something the speaker likes (or, negated, does not).
LIKE_VERBS = frozenset({"like", "love", "enjoy", "prefer", "adore", "eat", "drink", "fancy"})
# Verbs that say the speaker wants the object only with "I"/"we" said out loud:
# "I'll keep the landline", "I'll try the yoga classes" (not "keep the receipt").
SELF_LIKE_VERBS = frozenset({"keep", "try"})
# Verbs that mean the opposite: "I hate X" is likes X, negated.
DISLIKE_VERBS = frozenset({"hate", "dislike", "detest"})
# Verbs whose object is refused: "avoid" is a negation cue of negex
# (polarity.EXTRA_TERMS), which negates the object, so it must not flip again.
REFUSING_VERBS = frozenset({"avoid", "skip"})
# Verbs that only say something about preference when negated: "I don't want X".
NEGATED_ONLY_VERBS = frozenset({"want", "need", "read", "watch", "use", "do"})
NEGATED_ONLY_VERBS |= frozenset({"swallow", "tolerate"})
# Only a wish, negated: "I'd rather not get paper bills" (not "I haven't got the parcel").
WISHED_ONLY_VERBS = frozenset({"get", "receive"})
WISH_MARKERS = frozenset({"rather", "'d", "would"})
# Adjective/noun heads with a preposition: "fan of X", "interested in X", "allergic to X".
PREP_HEADS = {("fan", "of"): "likes", ("interested", "in"): "likes", ("allergic", "to"): "allergy"}
PREP_HEADS |= {("keen", "on"): "likes", ("mind", "about"): "likes"}
# Things one arranges rather than likes: "I'd like the installation on Wednesday".
ARRANGEMENT_NOUNS = frozenset(
    {"installation", "delivery", "call", "callback", "appointment", "visit", "booking"}
) | frozenset({"quote", "estimate", "refund", "repair", "replacement"})
PLAN_NOUNS = frozenset({"plan", "tariff", "contract", "subscription"})
# Heads whose modifiers name a plan: "the unlimited plan", "the TV bundle".
PLAN_HEADS = frozenset({"plan", "tariff", "bundle", "contract"})
PLAN_VERBS = frozenset({"switch", "upgrade", "downgrade", "drop"})
# "avoid anything with bleach": the thing is what "anything" is qualified by.
WHOLE_PRONOUNS = frozenset({"anything", "something", "everything"})
# Object tokens that are not a thing one likes.
DROP_OBJECT_DEPS = frozenset({"det", "poss", "predet", "case"})
PAST_TIME_MARKERS = frozenset({"since", "ago", "last", "yesterday", "earlier"})
VAGUE_TIMES = frozenset({"week", "month", "year", "today", "now", "time", "day"})
ORDER_STATUS = (
    (re.compile(r"\bhas (?:been )?shipped\b|\bwas shipped\b", re.IGNORECASE), "shipped"),
    (re.compile(r"\bhas been dispatched\b|\bwas dispatched\b", re.IGNORECASE), "dispatched"),
    (re.compile(r"\bhas been delivered\b|\bwas delivered\b", re.IGNORECASE), "delivered"),
    (re.compile(r"\brefund is on its way\b|\bhas been refunded\b", re.IGNORECASE), "refunded"),
    (re.compile(r"\bout for delivery\b", re.IGNORECASE), "out for delivery"),
)


@dataclass(frozen=True)
class Candidate:
    """A predicate and the object span it applies to, before polarity is decided."""

    predicate: str
    value: str  # canonical object
    span: Any  # spaCy Span of the object in the turn's Doc
    field: str  # TIME, PLACE, NUMBER, EMAIL, ... (the exact-match field name)
    explicit: bool = True  # False when the predicate is the fallback (no topic cue)
    reverse: bool = False  # "hate X", "can't stand X": polarity flips once


def liked(value: str, span: Any, reverse: bool = False, explicit: bool = True) -> Candidate:
    """A thing (not) liked; a contact channel when it names one ("a text would be great")."""
    if value in vocab.CHANNEL_NOUNS:
        return Candidate("contact_channel", vocab.CHANNEL_NOUNS[value], span, "CHANNEL", explicit)
    return Candidate("likes", value, span, "ITEM", explicit, reverse=reverse)


def _someone_else(token: Any) -> bool:
    """The predicate word's subject is a third party ("she's allergic", "my son is a fan")."""
    if token.dep_ not in {"acomp", "attr"}:
        return False
    verb = token.head
    subjects = [
        c
        for c in verb.children
        if c.dep_ in {"nsubj", "nsubjpass"} and c.pos_ in {"PRON", "PROPN", "NOUN"}
    ]
    return bool(subjects) and subjects[0].lower_ not in {"i", "we", "you"}


def _someone_else_lives(sent: Any) -> bool:
    """A town someone else lives in ("she lives in Portland"), not the speaker's address."""
    return any(
        t.lemma_.lower() in {"live", "move"}
        and any(c.dep_ == "nsubj" and c.lower_ not in {"i", "we"} for c in t.children)
        for t in sent
    )


def _lemmas(tokens: Any) -> set[str]:
    return {t.lemma_.lower() for t in tokens} | {t.lower_ for t in tokens}


def _scope_topic(scope: Any, is_agent: bool, committed: bool, span: Any) -> str | None:
    """The time topic the cue words of ``scope`` outside the time ``span`` name, or None.

    The time's own words are no cue: "next month" is not a payment date.
    """
    lemmas = _lemmas([t for t in scope if not span.start <= t.i < span.end])
    predicate = vocab.time_topic(lemmas)
    if predicate == "contact_time" and is_agent and committed:
        return "callback_time"
    if predicate == "delivery_time" and _self_arrival(scope):
        return "travel_time"  # "I'll arrive June 4": the speaker travels, no parcel
    if predicate is None and is_agent and committed and lemmas & {"remind", "confirm"}:
        return "callback_time"
    return predicate


def _self_arrival(scope: Any) -> bool:
    return any(
        t.lemma_.lower() == "arrive"
        and any(c.dep_ == "nsubj" and c.lower_ in {"i", "we"} for c in t.children)
        for t in scope
    )


@dataclass(frozen=True)
class TopicHints:
    """What the session's earlier turns say a cue-less time, town or number is about.

    ``topic``: the last time-topic cue, within a few turns; ``standing_topic``:
    the last one of the session, or of the user's previous session, with no
    expiry; ``place_topic``: travel or address, from the last town; ``number_topic``:
    door code, meter reading or phone number, from a question or announcement.
    """

    topic: str | None = None
    standing_topic: str | None = None
    place_topic: str | None = None
    number_topic: str | None = None


def time_predicate(
    span: Any, is_agent: bool, committed: bool, hints: TopicHints, trip: bool = False
) -> tuple[str, bool]:
    """The predicate a TIME belongs to: cues in its clause, ``hints.topic``, its sentence's cues.

    ``hints.topic`` is the time topic earlier turns set (``DialogueContext``): "Sunday
    morning." after "When should we deliver?" is a delivery time. It outranks a
    cue in another clause of the sentence ("I can't come on Monday, I'm
    travelling to Paris" while rescheduling an appointment). A topic from
    context is a guess, so it is not ``explicit``. ``trip``: the clause names a
    town the speaker goes to ("I'm going to Lisbon on Friday"), so a time
    without a cue of its own is the trip's. Without any of these, the session's
    standing topic ("Friday doesn't work anymore" in a follow-up about an
    installation) comes before a cue in another clause and the default.
    """
    predicate, explicit = _cued_topic(span, is_agent, committed, hints, trip)
    # Only the agent commits to call back; a time the user gives for a call is
    # when they can be reached (benchmarks/devset/README.md).
    if predicate == "callback_time" and not is_agent:
        return "contact_time", explicit
    return predicate, explicit


def _cued_topic(
    span: Any, is_agent: bool, committed: bool, hints: TopicHints, trip: bool
) -> tuple[str, bool]:
    clause = _scope_topic(clause_of(span), is_agent, committed, span)
    if clause is not None:
        return clause, True
    if trip:
        return "travel_time", True
    if hints.topic is not None:
        return hints.topic, False
    # What the conversation is about outranks a cue in another clause ("Mondays
    # are no good, I can't have someone round while I'm on calls").
    if hints.standing_topic is not None:
        return hints.standing_topic, False
    sentence = _scope_topic(span.sent, is_agent, committed, span)
    if sentence is not None:
        return sentence, True
    return vocab.DEFAULT_TIME_PREDICATE, False


def ner_candidates(
    sent: Any,
    spans: list[Any],
    is_agent: bool,
    hints: TopicHints = TopicHints(),
) -> Iterator[Candidate]:
    """Candidates from the Flair spans (TIME, PLACE, NUMBER) of one sentence.

    ``hints`` come from the session's earlier turns: what a cue-less time, town
    ("Update: it's Montreal, not Toronto.") or number ("It's 2291." after "The
    code for your door?") is about.
    """
    topic, place_topic, number_topic = hints.topic, hints.place_topic, hints.number_topic
    lemmas = _lemmas(sent)
    committed = any(span.label_ == "COMMITMENT" for span in spans)
    taken: list[Any] = []  # cleaned PLACE spans so far (the tagger's spans are in text order)
    # In a session about a trip, a cue-less time is the trip's ("Probably in July.").
    trip_topic = "travel_time" if place_topic == "travel" else None
    time_hints = replace(hints, topic=topic or trip_topic)
    towns = [s for s in spans if s.label_ == "PLACE" and not s.text[:1].isdigit()]
    towns = towns if lemmas & vocab.TRAVEL_CUES else []
    for span in spans:
        if span.label_ == "TIME":
            parts = time_parts(span)
            if not parts:
                continue
            # The tagger's span may reach over a cue ("make the delivery 2pm"): the
            # time words proper are what is not a cue.
            core = span.doc[parts[0].start : parts[-1].end]
            clause = clause_of(core)
            trip = any(clause.start <= t.start and t.end <= clause.end for t in towns)
            predicate, explicit = time_predicate(core, is_agent, committed, time_hints, trip)
            for part in parts:
                before = span.doc[part.start - 1].lower_ if part.start > sent.start else ""
                value = vocab.canonical_time(part.text)
                words = set(value.split())
                if words & PAST_TIME_MARKERS or before in PAST_TIME_MARKERS:
                    continue
                if not is_schedule_time(part):
                    continue
                if value and not words <= VAGUE_TIMES:
                    yield Candidate(
                        predicate, value, part, "TIME", explicit, reverse=unavailable(part)
                    )
        elif span.label_ == "PLACE":
            place = place_core(span)
            # An address extended over ", Bath" also covers the tagger's separate "Bath".
            if place is None or any(place.start >= t.start and place.end <= t.end for t in taken):
                continue
            taken.append(place)
            if place.start > sent.start and span.doc[place.start - 1].lower_ == "from":
                continue  # "back from Dublin": where the speaker was, not where they go
            if on_the_way(place):
                continue  # "the flight via Helsinki": a stop, not where they go
            if place.end < sent.end and span.doc[place.end].lemma_.lower() in PLAN_HEADS:
                continue  # "our Fixed Saver tariff": a plan's name, no place
            value = vocab.canonical_place(place.text)
            # A street address is an address whatever the verb; a town is where the
            # user travels or lives, by the cue words around it.
            if value[:1].isdigit() or value.startswith(vocab.ADDRESS_UNITS):
                yield Candidate("address", value, place, "PLACE")
            elif lemmas & vocab.TRAVEL_CUES:
                yield Candidate("travel", value, place, "PLACE")
            elif lemmas & vocab.ADDRESS_CUES and not _someone_else_lives(sent):
                yield Candidate("address", value, place, "PLACE")
            elif place_topic is not None:
                yield Candidate(place_topic, value, place, "PLACE", explicit=False)
            elif topic == "travel_time":
                yield Candidate("travel", value, place, "PLACE", explicit=False)
        elif span.label_ == "NUMBER":
            number = number_core(span)
            if lemmas & vocab.CODE_CUES:
                yield Candidate("door_code", vocab.canonical_code(number.text), number, "NUMBER")
            elif lemmas & vocab.METER_CUES:
                yield Candidate(
                    "meter_reading", vocab.canonical_code(number.text), number, "NUMBER"
                )
            elif vocab.is_phone_like(number.text) and (
                lemmas & vocab.PHONE_CUES or number_topic == "phone_number"
            ):
                yield Candidate(
                    "phone_number", vocab.canonical_phone(number.text), number, "NUMBER"
                )
            elif number_topic in {"door_code", "meter_reading"} and any(
                c.isdigit() for c in number.text
            ):
                value = vocab.canonical_code(number.text)
                yield Candidate(number_topic, value, number, "NUMBER", explicit=False)


def _regex_spans(sent: Any, text: str, regex: re.Pattern[str]) -> Iterator[tuple[Any, str]]:
    """Spans of ``sent`` (whose text is ``text``: a Span rebuilds it on every access)."""
    for match in regex.finditer(text):
        span = _char_span(sent, match.start(), match.end())
        if span is not None:
            yield span, match.group(0)


def _char_span(sent: Any, start: int, end: int) -> Any:
    """The tokens of ``sent`` covering its characters ``start:end`` (None if none do)."""
    return sent.doc.char_span(
        sent.start_char + start, sent.start_char + end, alignment_mode="expand"
    )


def _word(text: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(text)}\b", re.IGNORECASE)


# (predicate, field, pattern, canonical object or None for the lower-cased match),
# compiled once: compiling them per sentence was a tenth of the extract stage.
LEXICON: tuple[tuple[str, str, re.Pattern[str], str | None], ...] = (
    ("email", "EMAIL", vocab.EMAIL, None),
    *(("diet", "DIET", _word(diet), diet) for diet in vocab.DIETS),
    *(
        ("payment_method", "PAYMENT", re.compile(method, re.IGNORECASE), value)
        for method, value in vocab.PAYMENT_METHODS.items()
    ),
    *(
        ("contact_channel", "CHANNEL", re.compile(channel, re.IGNORECASE), value)
        for channel, value in vocab.CONTACT_CHANNELS.items()
    ),
)


def lexicon_candidates(sent: Any, is_agent: bool) -> Iterator[Candidate]:
    """E-mail, diets, payment methods, channels, languages, plan sizes, order status."""
    text = sent.text
    for predicate, field, regex, value in LEXICON:
        for span, found in _regex_spans(sent, text, regex):
            yield Candidate(predicate, value or found.lower(), span, field)
    for predicate, pattern in (
        ("preferred_language", vocab.LANGUAGE_PREFERENCE),
        ("speaks", vocab.LANGUAGE_SPOKEN),
    ):
        for match in pattern.finditer(text):
            name = match.group("a") or match.group("b")
            span = _char_span(sent, match.start(), match.end())
            if span is not None:
                yield Candidate(predicate, name.lower(), span, "LANGUAGE")
    for span, found in _regex_spans(sent, text, vocab.PLAN_SIZE):
        size = found.split(maxsplit=1)[-1] if not found[:1].isdigit() else found
        yield Candidate("plan", vocab.canonical_plan(size), span, "PLAN")
    if is_agent:
        for pattern, status in ORDER_STATUS:
            for span, _ in _regex_spans(sent, text, pattern):
                yield Candidate("order_status", status, span, "STATUS")


# Nouns that name nothing in particular: "I can't stand the stuff".
VAGUE_OBJECTS = frozenset({"stuff", "thing", "things", "one", "ones", "lot", "bit"})
# Courtesy words the parser folds into a phrase: "without coriander pls".
COURTESY = frozenset({"please", "pls", "plz", "thanks", "thx", "ta"})


def object_phrase(token: Any) -> tuple[Any, str] | None:
    """The noun phrase headed by ``token``, canonical: "spicy dishes" -> "spicy dish".

    A gerund ("avoid flying") is its own word: its lemma would name the act.
    """
    if (
        token.tag_ == "VBG"
        and token.dep_ in {"xcomp", "dobj"}
        and token.head.lemma_.lower() in (REFUSING_VERBS | DISLIKE_VERBS)
    ):
        return token.doc[token.i : token.i + 1], token.lower_
    if token.pos_ not in {"NOUN", "PROPN", "ADJ"} or token.lower_ in VAGUE_OBJECTS | COURTESY:
        return None
    # "doctor's orders": someone else's, not a thing the speaker wants.
    if any(c.dep_ == "poss" and c.pos_ in {"NOUN", "PROPN"} for c in token.children):
        return None
    words = [t for t in token.subtree if t.i <= token.i and t.dep_ not in DROP_OBJECT_DEPS]
    words = [t for t in words if t.lower_ not in {"any", "some", "more", "the", "a", "an"}]
    if not words:
        return None
    span = token.doc[words[0].i : token.i + 1]
    modifiers = token.doc[words[0].i : token.i].text.lower()  # keeps "two-year" whole
    return span, f"{modifiers} {head_word(token)}".strip()


def head_word(token: Any) -> str:
    """A phrase's head, singular: the lemma of a plural noun, else the word itself.

    A singular noun keeps its form: the lemmatiser reads "cleaner" as "clean".
    """
    return str(token.lemma_.lower() if token.tag_ in {"NNS", "NNPS"} else token.lower_)


def _objects(head: Any) -> Iterator[Any]:
    for child in head.children:
        if child.dep_ in {"dobj", "attr", "pobj"} and child.lower_ in WHOLE_PRONOUNS:
            yield from (o for p in child.children if p.lower_ == "with" for o in _objects(p))
        elif child.dep_ in {"dobj", "attr", "pobj"}:
            yield child
            yield from (c for c in child.children if c.dep_ == "conj")
        elif child.dep_ == "xcomp" and child.tag_ == "VBG":
            yield child


def _speaker_is_self(verb: Any) -> bool:
    """The speaker's own wish: "I don't eat X", or "(I'd prefer) you didn't use X"."""
    subjects = [c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass"}]
    if not subjects or subjects[0].lower_ in {"i", "we"}:
        return True
    # "Could you leave out the coriander?": a request made for the speaker.
    if subjects[0].lower_ == "you" and verb.lemma_.lower() == "leave":
        return any(
            c.dep_ == "aux" and c.lower_ in {"could", "can", "would", "will"} for c in verb.children
        )
    return bool(
        subjects[0].lower_ == "you"
        and verb.dep_ == "ccomp"
        and verb.head.lemma_.lower() in {"prefer", "rather"}
    )


def _done_to(verb: Any, obj: Any) -> bool:
    """What to do follows the object: "like X delivered", "like a roofer to take a look"."""
    return any(
        t.i > obj.i
        and t.head in (verb, obj)
        and (t.tag_ == "VBN" or (t.tag_ == "VB" and any(c.lower_ == "to" for c in t.children)))
        for t in verb.subtree
    )


def _in_lexicon(token: Any) -> bool:
    """Whether a closed list (payment method, channel, diet) names the token's phrase."""
    phrase = token.doc[token.left_edge.i : token.i + 1].text
    return any(regex.search(phrase) for _, _, regex, _ in LEXICON)


def _arrangement(token: Any) -> bool:
    return is_time_core(token) or token.lemma_.lower() in ARRANGEMENT_NOUNS


def dependency_candidates(sent: Any) -> Iterator[Candidate]:
    """Likes, allergies and plans read off spaCy dependencies."""
    for token in sent:
        lemma = token.lemma_.lower()
        if token.pos_ in {"VERB", "AUX"} and _speaker_is_self(token):
            negated_verb = any(c.dep_ == "neg" for c in token.children)
            said_by_self = any(
                c.dep_ == "nsubj" and c.lower_ in {"i", "we"} for c in token.children
            )
            if lemma in LIKE_VERBS | DISLIKE_VERBS or (lemma == "stand" and negated_verb):
                # "can't stand X": its own "n't" already negates; only hate-verbs flip.
                reverse = lemma in DISLIKE_VERBS
            elif (
                (lemma in NEGATED_ONLY_VERBS and negated_verb)
                or (
                    lemma in WISHED_ONLY_VERBS
                    and negated_verb
                    and any(c.lower_ in WISH_MARKERS for c in token.children)
                )
                or (lemma in SELF_LIKE_VERBS and said_by_self)
                or lemma in REFUSING_VERBS
            ):
                reverse = False
            elif lemma == "leave" and any(c.lower_ == "out" for c in token.children):
                reverse = False  # "leave out the coriander": negex reads "leave out"
            elif lemma in PLAN_VERBS:
                # "drop down to 10GB": the "to" may hang off the particle.
                heads = [token, *(c for c in token.children if c.dep_ == "prt")]
                for prep in (c for h in heads for c in h.children if c.lower_ == "to"):
                    for obj in _objects(prep):
                        # "switch to the premium plan" is read by the plan-noun rule below.
                        # "switched to PayPal" is a payment method, read by the lexicon.
                        if obj.lemma_.lower() in PLAN_NOUNS or _in_lexicon(obj):
                            continue
                        if (phrase := object_phrase(obj)) is not None and not _arrangement(obj):
                            plan = vocab.canonical_plan(phrase[1])
                            yield Candidate("plan", plan, phrase[0], "PLAN")
                continue
            else:
                continue
            for obj in _objects(token):
                phrase = object_phrase(obj)
                # "I'd like the installation on Wednesday", "I prefer the evening for
                # calls": an arrangement or a time, which the time rules read; "I'd
                # like my prescription delivered": something to be done, not liked.
                if phrase is None or _arrangement(obj) or _done_to(token, obj):
                    continue
                if obj.lemma_.lower() in PLAN_NOUNS:
                    plan = vocab.canonical_plan(phrase[1])
                    yield Candidate("plan", plan, phrase[0], "ITEM", reverse=reverse)
                else:
                    yield liked(phrase[1], phrase[0], reverse)
        # "allergic to ibuprofen" parsed as "to" + an xcomp (the tagger even calls
        # an unknown drug name a verb): nothing but the allergen follows "allergic to".
        if lemma == "allergic" and not _someone_else(token):
            for obj in (c for c in token.children if c.dep_ == "xcomp" and c.is_alpha):
                phrase = object_phrase(obj) or (token.doc[obj.i : obj.i + 1], obj.lower_)
                yield Candidate("allergy", phrase[1], phrase[0], "ITEM")
        for prep in (c for c in token.children if c.dep_ == "prep"):
            head_predicate = PREP_HEADS.get((lemma, prep.lower_))
            if head_predicate is None or _someone_else(token):
                continue  # "she's allergic to chicken": the speaker's pet's, not theirs
            for obj in _objects(prep):
                if (phrase := object_phrase(obj)) is None:
                    continue
                if head_predicate == "likes":
                    yield liked(phrase[1], phrase[0])
                else:
                    yield Candidate(head_predicate, phrase[1], phrase[0], "ITEM")
        # "my doctor confirmed the latex allergy"
        if lemma == "allergy" and token.pos_ == "NOUN":
            for mod in (c for c in token.children if c.dep_ in {"compound", "amod"}):
                yield Candidate("allergy", mod.lower_, token.doc[mod.i : mod.i + 1], "ITEM")
        # "a new electricity tariff" is asked for, not held: only a definite plan is one.
        indefinite = any(c.lower_ in {"a", "an"} for c in token.children)
        if lemma in PLAN_HEADS and token.pos_ == "NOUN" and not indefinite:
            mods = [c for c in token.children if c.dep_ in {"amod", "compound", "nummod"}]
            if mods:
                # "the unlimited plan" is "unlimited"; "the TV bundle" keeps its noun.
                start = min(m.left_edge.i for m in mods)
                if lemma in {"plan", "tariff"}:
                    span, value = token.doc[start : token.i], token.doc[start : token.i].text
                else:
                    span = token.doc[start : token.i + 1]
                    value = f"{token.doc[start : token.i].text} {head_word(token)}"
                yield Candidate("plan", vocab.canonical_plan(value), span, "PLAN")
