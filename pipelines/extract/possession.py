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
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipelines.parse.parser import SENTENCE_END
from schemas.facts import ExtractedFact

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
