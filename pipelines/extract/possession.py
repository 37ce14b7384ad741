"""Whose value a turn states: the user's own, or someone else's.

"My husband's phone is 555-0187", "her name is Yuki" and, after "What's her
name as on the passport?", the bare answer "Yuki Tanaka." all state a value of
the kind the user has too (a phone number, a name), but it belongs to another
person. Stored as the user's, it would replace her own number or name
(benchmarks/devset/LABELLING.md: facts about other people are not the user's).

The owner is read from the possessive in front of the noun that introduces the
value: "his", "her", "their", or a person of the user's ("my husband's",
"your sister's"). A bare answer takes its owner from the question it answers,
as it takes its predicate from it (pipelines/extract/context.py).

A bare name answering "What's her name?" is then the name of the relative or
pet asked about (``named_in_answer``), and a name known to be theirs is no
claim about the user's own (``names_someone_else``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.extract.endings import KnownValue
from pipelines.extract.typed import stated
from pipelines.parse.parser import SENTENCE_END
from pipelines.vocabulary import default_vocabulary
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity

# The nouns that introduce a value of each predicate (canonical names,
# pipelines/vocabulary/predicates.toml) whose value a person has one of.
_NOUNS = {
    "name": r"(?:full |first |last |sur)?name",
    "phone_number": r"(?:(?:phone|mobile|cell|contact) )?(?:number|phone|mobile|cell)",
    "email": r"e-?mail(?: address)?",
    "address": r"(?:home |postal )?address",
    "birthday": r"birthday|date of birth",
    "age": r"age",
    "occupation": r"job|occupation|profession",
}
# The people a user names by their relation to her. A closed list: "your
# account's email" is hers, "your husband's email" is not.
_PEOPLE = (
    "husband|wife|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|ex|son|daughter|kid|child"
    "|baby|mum|mom|mother|dad|father|parent|sister|brother|sibling|twin|grandma|grandpa"
    "|grandmother|grandfather|gran|nan|nana|aunt|auntie|uncle|cousin|niece|nephew"
    "|in-law|stepson|stepdaughter|friend|flatmate|roommate|housemate|neighbou?r|colleague"
    "|coworker|boss|manager|landlord|landlady|tenant|carer|caregiver|nanny|assistant"
)
# Another person's: a third-person possessive, or a person of the user's or of
# the listener's ("my husband's", "your little sister's", "our son's").
_OTHERS = rf"\b(?:his|her|their|(?:my|our|your) (?:\w+ )?(?:{_PEOPLE})s?'s?)"
_OTHERS_NOUN = {
    predicate: re.compile(rf"{_OTHERS} (?:{noun})\b", re.IGNORECASE)
    for predicate, noun in _NOUNS.items()
}
# The user's own, said beside it ("her number is X and mine is Y"): then the
# sentence is not read as someone else's.
_OWN_NOUN = {
    predicate: re.compile(rf"\b(?:my|our) (?:own )?(?:{noun})\b|\bmine\b", re.IGNORECASE)
    for predicate, noun in _NOUNS.items()
}
_ANY_NOUN = {
    predicate: re.compile(rf"\b(?:{noun})\b", re.IGNORECASE) for predicate, noun in _NOUNS.items()
}
# A bare answer is a few words at most ("Yuki Tanaka.", "tom@example.com").
BARE_ANSWER_WORDS = 6


def owned_by_other(fact: ExtractedFact, turn_text: str, previous_text: str) -> bool:
    """Whether ``fact``'s value belongs to someone other than the user (module docstring)."""
    others = _OTHERS_NOUN.get(fact.predicate)
    if others is None:
        return False
    sentence = fact.source_span.text if fact.source_span is not None else turn_text
    if others.search(sentence):
        return not _OWN_NOUN[fact.predicate].search(sentence)
    if _ANY_NOUN[fact.predicate].search(sentence) or len(sentence.split()) > BARE_ANSWER_WORDS:
        return False
    return bool(others.search(last_question(previous_text)))


def users_own(
    facts: Sequence[ExtractedFact], turn_text: str, previous_text: str
) -> list[ExtractedFact]:
    """``facts`` without the values that belong to someone else."""
    return [f for f in facts if not owned_by_other(f, turn_text, previous_text)]


def last_question(text: str) -> str:
    """The last question of a turn ("Added. What's her name?" -> "What's her name?")."""
    asked = [s for s in SENTENCE_END.split(text.strip()) if s.endswith("?")]
    return asked[-1] if asked else ""


# "What's her name?", "what's he called?": the question asks for the name of a
# person (or pet) the user has just spoken of.
_NAME_ASKED = re.compile(
    r"\bwhat(?:'s| is)\s+(?:her|his|their|its)\s+(?:full\s+|first\s+)?name\b"
    r"|\bwhat(?:'s| is| are)\s+(?:she|he|they|it)\s+called\b",
    re.IGNORECASE,
)
# The answer's name, first in the turn: "Ella.", "Yuki Tanaka.", "It's Pickle, she's a dachshund".
_ANSWERED_NAME = re.compile(
    r"^\W*(?:(?:it'?s|she'?s|he'?s|called)\s+)?"
    r"(?P<name>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+){0,2})(?=\s*(?:[.,!;]|$))"
)
# Confidence of a relative named this way: as good as a yes to an offer.
CONFIDENCE_NAMED = 0.86


def named_in_answer(
    event: DialogueEvent,
    facts: Sequence[ExtractedFact],
    known: Sequence[KnownValue],
    previous_text: str,
) -> list[ExtractedFact]:
    """``facts`` with the relative or pet a bare name answers for named by it.

    "my sister is joining us" ... "What's her name as on the passport?" -
    "Yuki Tanaka." is ``family_member sister yuki tanaka``: the name is hers
    (so never the user's, ``users_own``), and the one held value it can name
    is the latest relative or pet known only by its kind, in this turn
    ("Pickle. She's a dachshund") or before it.
    """
    if event.role is not Role.USER:
        return list(facts)
    match = _ANSWERED_NAME.match(event.text)
    if match is None or not _NAME_ASKED.search(last_question(previous_text)):
        return list(facts)
    vocabulary = default_vocabulary()
    name = match["name"].casefold()

    def unnamed(predicate: str, value: str) -> bool:
        spec = vocabulary.spec(predicate)
        return spec.named and len(value.split()) == 1 and value != name

    own = [f for f in facts if f.polarity is Polarity.AFFIRMED and unnamed(f.predicate, f.object)]
    held = [k for k in reversed(known) if unnamed(k.predicate, k.object)]
    # The turn's own relative or pet first, else only the latest held one: an
    # older relative is more often not the one asked about.
    candidates = [
        KnownValue(predicate=vocabulary.canonical(f.predicate), object=f.object) for f in own
    ]
    referent = next(
        (c for c in [*candidates, *held[:1]] if _may_be(c, previous_text, event.text)), None
    )
    if referent is None:
        return list(facts)
    kind, predicate = referent.object, referent.predicate
    value = f"{kind} {name}"
    named = stated(
        event,
        predicate,
        value,
        asserted_by=Assertor.USER,
        confidence=CONFIDENCE_NAMED,
        field="NAMED",
    )
    kept = [f for f in facts if f.object != name and not (f in own and f.object == kind)]
    return [*kept, named]


# Who "her" and "his" can be: a relative of that sex, or any pet.
_FEMALE = frozenset(
    [
        "sister",
        "daughter",
        "mum",
        "mom",
        "mother",
        "wife",
        "girlfriend",
        "fiancee",
        "fiancée",
        "aunt",
        "auntie",
        "niece",
        "gran",
        "nan",
        "nana",
        "grandma",
        "grandmother",
        "granddaughter",
        "stepdaughter",
    ]
)
_MALE = frozenset(
    [
        "brother",
        "son",
        "dad",
        "father",
        "husband",
        "boyfriend",
        "fiance",
        "fiancé",
        "uncle",
        "nephew",
        "grandad",
        "grandpa",
        "grandfather",
        "grandson",
        "stepson",
    ]
)
_PET_WORDS = re.compile(
    r"\b(?:pets?|dogs?|pupp(?:y|ies)|pups?|cats?|kittens?|kitty|rabbits?|bunn(?:y|ies)|horses?"
    r"|ponies|pony|hamsters?|parrots?|budgies?|tortoises?|fish|snakes?|lizards?)\b",
    re.IGNORECASE,
)


def _may_be(held: KnownValue, question: str, answer: str) -> bool:
    """Whether the question's "her"/"his" and the words around it can mean ``held``."""
    asked = last_question(question)
    pet_words = bool(_PET_WORDS.search(question) or _PET_WORDS.search(answer))
    if held.predicate == "pet":
        return True
    if pet_words:
        return False
    pronoun = re.search(r"\b(her|his|she|he)\b", asked, re.IGNORECASE)
    if pronoun is None:
        return True
    female = pronoun.group(1).lower() in ("her", "she")
    return held.object not in (_MALE if female else _FEMALE)


def names_someone_else(fact: ExtractedFact, known: Sequence[KnownValue]) -> bool:
    """Whether a ``name`` fact's value is the name of a relative or pet the user has named.

    The agent's "Added Yuki Tanaka to the booking." after the user named her
    sister is no claim about the user's own name.
    """
    vocabulary = default_vocabulary()
    if vocabulary.canonical(fact.predicate) != "name":
        return False
    words = set(fact.object.split())
    return any(vocabulary.spec(k.predicate).named and words < set(k.object.split()) for k in known)
