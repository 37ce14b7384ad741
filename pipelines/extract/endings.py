"""Things the user told before that have now ended: "Fly died", "I've packed in the darts".

Friends catching up mostly report change, and the change names what it ends
by a word or two of it: the pet by its name, the trip by its place ("Benidorm's
off"), the hobby by its noun ("given up the bridge club"), or not at all ("had
to put him down", "nah, left." to "still at Royal Mail?"). The tagger reads
values, not their ends, so these turns yielded nothing, and the value they
end stayed current. On the seen splits 46 of 212 negated facts were missed
with nothing tagged on their turn, a third of them an ending like these.

An ending is read here from a cue phrase of one kind of end (a death, a sale,
leaving a job or a hobby, a plan called off, a break-up, a move, a recovery)
and a value of the predicates that kind can end, taken from what the user's
conversation already holds (``DialogueContext.known``) or from the turn's own
facts. The value is named within a few words of the cue, or by a pronoun, or,
in a bare answer ("No, I had to pull out."), by the question before it. It
ends only when exactly one value fits best: two sisters and "she died" end
neither. A cue that is denied, hedged, conditional, still to come or asked
about ends nothing.

The negated fact keeps the value in the form it was stored in, so the review
closes that value's chain (a multi-valued value's chain is keyed by its value).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.vocabulary import Negation, default_vocabulary
from schemas._base import Frozen
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, Span, origin, statement
from schemas.memory import Polarity

# A stated end commits like a rule's cued statement (learned/facts.py scale).
CONFIDENCE_ENDED = 0.9
# The values a conversation keeps for endings: a long catch-up names a few
# dozen, and the keyed state stays small.
KNOWN_VALUES = 32
# Words between a cue and the value it ends: "Mittens had to be put down", "given
# up the bridge club", "turned down the Fort Worth job".
WINDOW_BEFORE = 4
WINDOW_AFTER = 6


class KnownValue(Frozen):
    """One value of the user's that a later turn may end."""

    predicate: str
    object: str


@dataclass(frozen=True)
class _Cue:
    """A phrase that ends a value of ``predicates`` named on ``side`` of it."""

    pattern: re.Pattern[str]
    predicates: frozenset[str]
    side: str  # "before" (the value is the subject), "after" (the object), or "both"
    by_user: bool  # the user ends it ("I sold", "nah, left"), not someone else ("two techs quit")
    by_pronoun: bool  # "had to put him down" names it; "lost that fight" does not


_LIFE = frozenset({"pet", "family_member"})
_PET = frozenset({"pet"})
_OWNED = frozenset({"owns", "pet", "ordered", "plan"})
_ROLE = frozenset({"employer", "occupation", "studies", "hobby"})
_HABIT = frozenset({"hobby", "likes", "medication", "diet", "studies", "plans_to"})
_PLAN = frozenset({"plans_to", "travel", "event", "ordered", "plan", "hobby"})
_PARTNER = frozenset({"family_member"})
_HOME = frozenset({"lives_in"})
_HEALTH = frozenset({"health_condition"})
_TAKEN = frozenset({"medication", "likes", "diet"})


def _cue(
    past: str,
    predicates: frozenset[str],
    side: str,
    base: str = "",
    *,
    by_user: bool = False,
    by_pronoun: bool = True,
) -> _Cue:
    """A cue said in the past ("sold"), or in the base form after "had to" ("had to sell")."""
    forced = rf"|\bhad (?:to|tae) (?:{base})\b" if base else ""
    pattern = re.compile(rf"\b(?:{past})\b{forced}")
    return _Cue(pattern, predicates, side, by_user, by_pronoun)


# Past tenses only: "we're selling the house" has not ended anything yet.
CUES: tuple[_Cue, ...] = (
    _cue(r"died|passed away|passed on|(?:was|were|been|be|got) put down", _LIFE, "before"),
    _cue(r"put (?:\w+ )?(?:down|to sleep)", _LIFE, "after"),
    _cue(r"lost", _LIFE, "after", by_pronoun=False),
    # A pet given up or gone: "Sheba's gone", "had to let her go", "Smokey is gone".
    _cue(r"(?:is|'s|has) (?:now )?gone", _PET, "before"),
    _cue(r"let \w+ go", _PET, "after"),
    _cue(
        r"sold|got rid of|gave away|given away|rehomed|returned|traded in",
        _OWNED,
        "after",
        base=r"sell|get rid of|give away|rehome|return|trade in",
        by_user=True,
    ),
    _cue(
        r"quit|left|resigned(?: from)?|retired from|packed in|jacked in|walked out of"
        r"|handed in my notice at",
        _ROLE | _HOME | _HABIT,
        "after",
        base=r"quit|leave|resign(?: from)?|retire from|pack in|jack in|walk out of",
        by_user=True,
    ),
    _cue(
        r"stopped|gave up(?: on)?|given up(?: on)?|packed up|chucked|dropped(?: out of)?|ditched"
        r"|cut out|came off|come off|finished with",
        _HABIT,
        "after",
        base=r"stop|give up(?: on)?|pack up|chuck|drop(?: out of)?|ditch|cut out|come off",
        by_user=True,
    ),
    _cue(
        r"cancell?ed|called off|pulled out(?: of)?|backed out(?: of)?|bailed(?: on)?"
        r"|turned down|scrapped|knocked on the head",
        _PLAN,
        "both",
        base=r"cancel|call off|pull out(?: of)?|back out(?: of)?|bail(?: on)?|turn down|scrap",
    ),
    _cue(
        r"fell through|(?:is|was|'s|are|were|'re) (?:all |now )?(?:off|cancell?ed)",
        _PLAN,
        "before",
    ),
    _cue(r"off(?=\W*$)", _PLAN, "before"),
    _cue(
        r"broke up(?: with)?|split up(?: with)?|divorced|dumped",
        _PARTNER,
        "both",
        base=r"break up(?: with)?|split up(?: with)?",
    ),
    _cue(
        r"moved (?:out of|away from|from)",
        _HOME,
        "after",
        base=r"move (?:out of|away from)",
        by_user=True,
    ),
    _cue(r"recovered from|got over|cured of|over the", _HEALTH, "after"),
    _cue(r"off(?! to\b)(?: the)?", _TAKEN, "after"),
    # "not in Toronto anymore", "no longer at the clinic": the value inside the cue.
    _cue(
        r"no longer(?: \w+){0,4}|(?:not|\w+n't) (?:\w+ ){0,4}?any ?more",
        _LIFE | _OWNED | _ROLE | _HABIT | _PLAN | _HOME | _HEALTH,
        "after",
        by_pronoun=False,
    ),
)
ENDABLE = frozenset().union(*(c.predicates for c in CUES))
_CUE_WORDS = frozenset(w for c in CUES for w in re.findall(r"[a-z']+", c.pattern.pattern))

# A cue inside one of these ends nothing: it is denied, hedged, still to come,
# conditional or asked ("I didn't quit", "might have to bail", "if we cancel").
_NOT_ENDED = re.compile(
    r"\b(?:not|never|n't|didn't|haven't|hasn't|won't|will|'ll|might|may|maybe|could|would"
    r"|should|going to|gonna|want to|wanna|thinking|plan|planning|if|unless|whether|when"
    r"|before|almost|nearly)\b"
)
# What a clause says after an end without naming its value: a pronoun.
_REFERRING = frozenset({"it", "him", "her", "them", "that", "this", "those", "he", "she", "they"})
# A bare answer's end is said near its start ("No, I had to pull out, ...").
ANSWER_CHARS = 24
# A bare answer opens with one of these ("No, I had to pull out.", "nah, left.").
_ANSWER_OPENING = re.compile(
    r"^\W*(?:no|nah|naw|nope|na|yes|yeah|yep|aye|sadly|afraid|unfortunately|sort of)\b"
)
_CLAUSE_BREAK = re.compile(r"[.!?;:,]+|\b(?:but|so|and|then|because|cos|coz)\b")
# What may stand between the user and an end she did: "I've finally sold", "we just left".
_BETWEEN_USER = frozenset(
    [
        "'ve",
        "ve",
        "have",
        "has",
        "had",
        "'d",
        "just",
        "finally",
        "already",
        "actually",
        "also",
        "then",
        "eventually",
        "recently",
        "even",
        "totally",
        "completely",
        "basically",
        "officially",
        "kinda",
        "sort",
        "of",
        "now",
        "since",
    ]
)
_USER = frozenset({"i", "we", "i've", "we've", "i'd", "we'd", "ive", "weve", "me", "us"})
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
# Words that say nothing of which value is meant: function words and the verbs
# of plans ("move to fort worth" is named by "fort worth", not by "move").
_LIGHT = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "its",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "from",
        "by",
        "up",
        "out",
        "i",
        "me",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "'s",
        "'m",
        "'re",
        "go",
        "going",
        "get",
        "got",
        "do",
        "doing",
        "did",
        "done",
        "make",
        "take",
        "taking",
        "have",
        "has",
        "had",
        "run",
        "start",
        "try",
        "see",
        "visit",
        "come",
        "join",
        "learn",
        "buy",
        "move",
        "keep",
        "new",
        "old",
        "some",
        "more",
        "any",
    ]
)
# Words a bare answer may add after its end without naming anything ("nah, we
# broke up like 3 weeks ago").
_FILLER = frozenset(
    [
        "like",
        "ago",
        "week",
        "month",
        "year",
        "day",
        "last",
        "yesterday",
        "already",
        "now",
        "just",
        "back",
        "recently",
        "then",
        "too",
        "actually",
        "finally",
        "properly",
        "this",
        "summer",
        "spring",
        "autumn",
        "winter",
        "christmas",
    ]
)


def _words(text: str) -> list[str]:
    return [_singular(w) for w in _WORD.findall(text.casefold())]


def _singular(word: str) -> str:
    word = word.removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _content(value: str) -> frozenset[str]:
    # Words of three letters or more: "na" and "tae" are particles in Tagalog and Scots.
    return frozenset(w for w in _words(value) if w not in _LIGHT and len(w) > 2)


def remember(known: Sequence[KnownValue], facts: Sequence[ExtractedFact]) -> list[KnownValue]:
    """``known`` after a turn's facts: affirmed values added (latest last), ended ones dropped."""
    out = list(known)
    vocab = default_vocabulary()
    for fact in facts:
        name = vocab.canonical(fact.predicate)
        if name not in ENDABLE or not _content(fact.object):
            continue
        spec = vocab.spec(name)
        out = [
            k for k in out if not (k.predicate == name and spec.same_value(k.object, fact.object))
        ]
        if fact.polarity is Polarity.AFFIRMED:
            out.append(KnownValue(predicate=name, object=fact.object))
    return out[-KNOWN_VALUES:]


@dataclass(frozen=True)
class _Ending:
    predicate: str
    value: str
    sentence: str


def endings(
    event: DialogueEvent,
    facts: Sequence[ExtractedFact],
    known: Sequence[KnownValue],
    previous_text: str,
) -> list[ExtractedFact]:
    """The turn's facts with the values it says have ended (module docstring).

    A value the turn's own facts affirm inside an ending ("I left Sandy Lane!")
    is negated in place; an ended value known from earlier turns is added.
    """
    if event.role is not Role.USER or not known and not facts:
        return list(facts)
    vocab = default_vocabulary()
    own = [
        KnownValue(predicate=vocab.canonical(f.predicate), object=f.object)
        for f in facts
        if f.polarity is Polarity.AFFIRMED and f.asserted_by is Assertor.USER
    ]
    said = [_in_known_form(f, known) for f in facts]
    found = _ended(event.text, [*known, *own], previous_text)
    if not found:
        return said
    out: list[ExtractedFact] = []
    for fact in said:
        name = vocab.canonical(fact.predicate)
        spec = vocab.spec(name)
        if any(e.predicate == name and spec.same_value(e.value, fact.object) for e in found):
            fact = _negated(fact)
        out.append(fact)
    for end in found:
        spec = vocab.spec(end.predicate)
        stated = any(
            vocab.canonical(f.predicate) == end.predicate and spec.same_value(f.object, end.value)
            for f in out
        )
        if not stated:
            out.append(_ended_fact(event, end))
    return out


def _in_known_form(fact: ExtractedFact, known: Sequence[KnownValue]) -> ExtractedFact:
    """An ended value in the form it is known by ("sold the Transit" -> "2011 transit").

    An ended value's chain is keyed by the value (multi-valued predicates), so
    "owns NOT transit" would leave "owns 2011 transit" current. Only for
    predicates whose negation means an end: "likes NOT spicy curry" does not
    end liking curry.
    """
    spec = default_vocabulary().spec(fact.predicate)
    if fact.polarity is not Polarity.NEGATED or spec.negation is not Negation.ENDED:
        return fact
    pool = [k for k in known if k.predicate == spec.name]
    named = _best(set(_content(fact.object)), pool)
    if len(named) != 1 or named[0].object == fact.object:
        return fact
    whole = named[0].object
    # Ending a value the user holds is an update of it: the fact check would
    # otherwise hold it as a contradiction of that value.
    update = {
        "object": whole,
        "text": statement(spec.name, whole, Polarity.NEGATED),
        "is_update": True,
    }
    return fact.model_copy(update=update)


def _ended(text: str, candidates: Sequence[KnownValue], previous_text: str) -> list[_Ending]:
    """The values ``text`` says have ended, each with the sentence that says so."""
    folded = text.casefold()
    answer = bool(_ANSWER_OPENING.match(folded))
    ends: list[_Ending] = []
    seen: set[tuple[str, str]] = set()
    start = 0
    for piece in _CLAUSE_BREAK.split(folded):
        offset = folded.find(piece, start)
        start = offset + len(piece) if offset >= 0 else start
        if "?" in folded[start : start + 2]:
            continue
        for cue in CUES:
            match = cue.pattern.search(piece)
            if match is None or _NOT_ENDED.search(piece[: match.start()]):
                continue
            if cue.by_user and not _said_by_user(piece[: match.start()]):
                continue
            pool = [k for k in candidates if k.predicate in cue.predicates]
            named = _named(piece, match, cue, pool)
            bare = answer and offset < ANSWER_CHARS
            if not named and cue.by_pronoun and _refers(piece, match, cue, bare):
                named = _one_named(folded[: max(offset, 0)], pool) or _one_named(
                    previous_text.casefold(), pool
                )
            for end in named:
                if (end.predicate, end.object) not in seen:
                    seen.add((end.predicate, end.object))
                    sentence = _sentence_of(text, offset, piece)
                    ends.append(_Ending(end.predicate, end.object, sentence))
    return ends


def _said_by_user(before: str) -> bool:
    """Whether the words before a cue make the user its subject (or leave it unsaid)."""
    words = [w for w in _WORD.findall(before) if w not in _BETWEEN_USER]
    return not words or words[-1] in _USER or bool(_ANSWER_OPENING.match(words[-1]))


def _named(
    piece: str, match: re.Match[str], cue: _Cue, pool: Sequence[KnownValue]
) -> list[KnownValue]:
    """The one value named on the cue's side of it, within its window."""
    before = _words(piece[: match.start()])[-WINDOW_BEFORE:]
    after = _inner(match) + _words(piece[match.end() :])[:WINDOW_AFTER]
    near = set()
    if cue.side in {"before", "both"}:
        near |= set(before)
    if cue.side in {"after", "both"}:
        near |= set(after)
    return _best(near, pool)


def _inner(match: re.Match[str]) -> list[str]:
    """The words inside a cue that are not the cue's own: "him" of "put him down"."""
    return [w for w in _words(match.group()) if w not in _CUE_WORDS]


def _refers(piece: str, match: re.Match[str], cue: _Cue, answer: bool) -> bool:
    """Whether the clause names what ended only by a pronoun, or not at all in a bare answer."""
    before = _words(piece[: match.start()])
    inner = _inner(match)
    after = _words(piece[match.end() :])
    if cue.side != "before" and set(inner + after[:1]) & _REFERRING:
        return True
    if cue.side != "after" and before[-1:] and before[-1] in _REFERRING:
        return True
    said = [w for w in after if w not in _LIGHT and w not in _FILLER and not w.isdigit()]
    return answer and not said


def named_in(text: str, pool: Sequence[KnownValue]) -> list[KnownValue]:
    """The held value ``text`` names (``_best``): one, or none when it is unclear."""
    return _best(set(_words(text)), pool) if text else []


_one_named = named_in


def _best(words: set[str], pool: Sequence[KnownValue]) -> list[KnownValue]:
    """The values most of whose words are in ``words``.

    One value, or several of one predicate that are each named in full
    ("bridge" and "bridge club", one hobby said two ways); none when nothing
    is named or two values are named equally in part ("my sister" of two).
    """
    scored: dict[KnownValue, float] = {}
    for k in pool:
        content = _content(k.object)
        shared = content & words
        if shared:
            scored[k] = len(shared) / len(content)
    if not scored:
        return []
    top = max(scored.values())
    best = [k for k, score in scored.items() if score == top]
    if len(best) == 1 or (top == 1.0 and len({k.predicate for k in best}) == 1):
        return best
    return []


def _sentence_of(text: str, offset: int, piece: str) -> str:
    return text[max(offset, 0) : max(offset, 0) + len(piece)].strip()


def _negated(fact: ExtractedFact) -> ExtractedFact:
    """The fact as an end: negated, an update, and as sure as the clause that ends it.

    A turn's hedge may belong to another of its clauses ("I've left the choir
    now. Maybe I'll join one here."): the ending clause itself is unhedged.
    """
    spec = default_vocabulary().spec(fact.predicate)
    update = {
        "polarity": Polarity.NEGATED,
        "kind": spec.kind_of(fact.object, negated=True),
        "text": statement(spec.name, fact.object, Polarity.NEGATED),
        "is_update": True,
        "hedged": False,
        "confidence": max(fact.confidence, CONFIDENCE_ENDED),
    }
    return fact.model_copy(update=update)


def _ended_fact(event: DialogueEvent, end: _Ending) -> ExtractedFact:
    spec = default_vocabulary().spec(end.predicate)
    start = event.text.casefold().find(end.sentence.casefold())
    source = (
        Span(label="SENTENCE", text=end.sentence, start=start, end=start + len(end.sentence))
        if start >= 0 and end.sentence
        else None
    )
    return ExtractedFact(
        **origin(event),
        subject="user",
        predicate=spec.name,
        object=end.value,
        polarity=Polarity.NEGATED,
        kind=spec.kind_of(end.value, negated=True),
        confidence=CONFIDENCE_ENDED,
        text=statement(spec.name, end.value, Polarity.NEGATED),
        is_update=True,
        source_span=source,
        fields={"ENDED": end.value},
    )
