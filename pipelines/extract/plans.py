"""A plan is a verb and what it is done to: "get guinea pig", "move to fort worth".

The vocabulary's ``plans_to`` value is the plan said as a verb phrase
(benchmarks/devset/LABELLING.md: "I'm going to learn Portuguese" →
``learn portuguese``). The tagger often marks only a part of it: the verb
("I'm buying a little house" → ``buying``), the object ("I want to do a PhD"
→ ``phd``), or both apart ("get", "guinea pig"). The parse completes the part
it marked: a verb takes its particle and its first complement, an object the
verb (and preposition) that governs it. Desire verbs ("want", "love") govern
no plan of their own: "I want a dog" stays as tagged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipelines.extract.learned.tagging import LearnedTriple
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import undated

# Complements that say what the plan is done to or where it goes.
_COMPLEMENTS = frozenset({"dobj", "prep", "attr", "oprd", "xcomp", "dative", "acomp"})
# Parts of a complement that say more than the plan: a clause, a list, a date.
_NOT_PLAN = frozenset({"punct", "cc", "conj", "relcl", "advcl", "appos", "npadvmod", "parataxis"})
_WHEN = frozenset({"DATE", "TIME"})
# Verbs that take a plan as their object rather than being one.
_DESIRE = frozenset(
    {"want", "need", "like", "love", "hope", "plan", "think", "wish", "fancy", "be", "have"}
    | {"consider", "intend", "mean", "decide"}
)
_MAX_WORDS = 7
_ARTICLES = frozenset({"a", "an", "the"})
# "opening my own salon" is the plan "open own salon": whose it is goes without saying.
_OWNERS = frozenset({"my", "our", "your", "their"})
# Words that end a sentence about a plan, not the plan: "do the great north
# run in sept instead", "learn to cook it properly".
_LOOSE_ENDS = frozenset(
    {"instead", "properly", "anyway", "eventually", "finally", "soon", "then", "though", "first"}
    | {"hopefully", "probably", "maybe", "definitely", "someday", "sometime", "later"}
)
_PRONOUNS = frozenset({"her", "him", "it", "them", "one", "that", "this", "those", "these", "some"})


def completed_plans(triples: list[LearnedTriple], doc: Any) -> list[LearnedTriple]:
    """``triples`` with each ``plans_to`` value completed to its verb phrase in ``doc``."""
    if doc is None:
        return triples
    out: list[LearnedTriple] = []
    for triple in triples:
        if triple.predicate != "plans_to" or triple.from_context or triple.end <= triple.start:
            out.append(triple)
            continue
        span = doc.char_span(triple.start, triple.end, alignment_mode="expand")
        phrase = (_phrase(span) or _tidied(span)) if span is not None else None
        out.append(replace(triple, obj=phrase) if phrase else triple)
    # "get" and "guinea pig", both completed, are one plan; so are "buy little
    # house" and "buy little house in town".
    plans = [set(t.obj.split()) for t in out if t.predicate == "plans_to"]
    kept: list[LearnedTriple] = []
    for triple in out:
        words = set(triple.obj.split())
        if triple.predicate == "plans_to" and (
            any(words < other for other in plans)
            or any(k.predicate == "plans_to" and k.obj == triple.obj for k in kept)
        ):
            continue
        kept.append(triple)
    return kept


def _phrase(span: Any) -> str | None:
    """The verb phrase ``span`` is a part of, or None when it is whole or unclear."""
    root = span.root
    if root.pos_ == "VERB" and not any(t.pos_ in {"NOUN", "PROPN", "NUM"} for t in span):
        if root.lemma_.lower() in _DESIRE:
            return None
        tail = _complement(root)
        return _words(root, [*_particles(root), *tail]) if tail else None
    if root.pos_ in {"NOUN", "PROPN", "NUM"}:
        verb, preposition = _governor(root)
        if verb is None or verb.lemma_.lower() in _DESIRE:
            return None
        before = [*_particles(verb), *([preposition] if preposition is not None else [])]
        return _words(verb, [*before, *_inside(span)])
    return None


def plan_phrase(verb: Any) -> str | None:
    """The plan ``verb`` heads, with its particle and first complement, or None without one."""
    tail = _complement(verb)
    return _words(verb, [*_particles(verb), *tail]) if tail else None


def _tidied(span: Any) -> str | None:
    """A whole plan said as a verb phrase, in its one form: the verb's lemma, no dates.

    "leaving St James's" is ``leave st james's``, "running the Edinburgh half
    in May" ``run edinburgh half``, as the labelling guide writes a plan; the
    tagger's span can run past a comma into the next clause, which is no part
    of it.
    """
    verb = span[0]
    if verb.pos_ != "VERB" or verb.lemma_.lower() in _DESIRE:
        return None
    rest = []
    for token in span[1:]:
        if token.is_punct:
            break
        if token.ent_type_ in _WHEN or (token.dep_ == "poss" and token.lower_ in _OWNERS):
            continue
        rest.append(token)
    return _words(verb, rest) if rest else None


def _governor(noun: Any) -> tuple[Any, Any]:
    """The verb an object hangs from, and the preposition between them."""
    if noun.dep_ in {"dobj", "attr", "oprd"} and noun.head.pos_ == "VERB":
        return noun.head, None
    if noun.dep_ == "pobj" and noun.head.dep_ == "prep" and noun.head.head.pos_ == "VERB":
        return noun.head.head, noun.head
    return None, None


def _particles(verb: Any) -> list[Any]:
    return [t for t in verb.rights if t.dep_ == "prt"]


def _complement(verb: Any) -> list[Any]:
    """The verb's first complement to its right, without clauses and dates."""
    for child in verb.rights:
        if child.dep_ in _COMPLEMENTS:
            return [
                t
                for t in child.subtree
                if t.dep_ not in _NOT_PLAN
                and t.ent_type_ not in _WHEN
                and not any(a.dep_ in _NOT_PLAN for a in _between(t, child))
            ]
    return []


def _between(token: Any, top: Any) -> list[Any]:
    """The tokens from ``token`` up to (not including) ``top``."""
    path = []
    # spaCy makes a new Token object on each access: compare positions.
    while token.i != top.i and token.head.i != token.i:
        path.append(token)
        token = token.head
    return path


def _inside(span: Any) -> list[Any]:
    return [t for t in span if not t.is_punct]


def _words(verb: Any, rest: list[Any]) -> str | None:
    tokens = sorted({t.i: t for t in rest if t.i > verb.i}.values(), key=lambda t: t.i)
    kept = [t for t in tokens if not (t.dep_ == "det" and t.lower_ in _ARTICLES)]
    # Joined as written, so "James's" stays one word rather than "james 's".
    words = "".join(f"{t.lower_}{' ' if t.whitespace_ else ''}" for t in kept).split()
    # "moving end of nov": when the plan happens is no part of what it is.
    # A number is a part of what the plan names ("sell massey ferguson 135"); a
    # year or a day said as a date is left out with its entity before this.
    while words and (words[-1] in _LOOSE_ENDS or not (undated(words[-1]) or words[-1].isdigit())):
        words.pop()
    if not words or words[0] in _PRONOUNS or len(words) + 1 > _MAX_WORDS:
        return None  # "sell her": the tag is kept rather than a pronoun
    return default_vocabulary().spec("plans_to").normalise(" ".join([verb.lemma_.lower(), *words]))
