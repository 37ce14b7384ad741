"""A relative or pet is its kind and its name, in one value.

The vocabulary keeps a relative or a pet as one value, kind and name together
(``family_member sister ana``, ``pet beagle biscuit``; docs/vocabulary.md,
"named" predicates). People rarely say both in one span:

- the name stands apart from the kind: "a young collie working now, Mot",
  "we got her a cat instead, Pickles", "Bella the staffie", "Ekow, my boy";
- or only one part is said, once the whole is known: "my husband" after
  "my husband Kwame", "mochi is so fat now" after "our cat Mochi".

The tagger finds the part it sees. ``named_beside`` joins a kind to the name
said beside it in the same sentence; ``named_as_held`` gives a part the one
held value it names, so the turn states that value in its one form, as the
version chain already reads it (``PredicateSpec.names_part_of``).

A friend asks after a relative by relation, and the answer gives the name:
"And your son?" - "Yanis is 6 and he wants to be a fireman", "how are the
boys?" - "Osian's started at Cardiff. Iwan's in year 10".
``named_when_asked`` reads the names that open the answer as the relatives
asked after (``son yanis``, ``son osian``, ``son iwan``). Over every A/U pair
of the devset gold it names 18 relatives as the gold has them and one it does
not list (benchmarks/devset/README.md, "Stop 49").

A name given by a pronoun ("his name is Daniel ... my boyfriend since
july") is the one bare relation of that sex in the turn (``named_by_pronoun``).

A pet is often named a clause later ("a cat now... Grey cat, she named him
Smokey"), or said by its name with its kind beside it ("my dog Sardine",
"Bella the staffie", "Frijol is a chihuahua"). ``named_pets`` reads both with
the kinds of animal people keep (``PET_KINDS`` in
``pipelines/vocabulary/values.py``) and keeps one value for each pet named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pipelines.extract.endings import KnownValue
from pipelines.extract.possession import CONFIDENCE_NAMED, last_question
from pipelines.extract.typed import stated
from pipelines.vocabulary import default_vocabulary
from pipelines.vocabulary.values import (
    KIN_WORDS,
    MONTHS,
    PET_KINDS,
    WEEKDAYS,
    is_pet_kind,
    kin_forms,
    kin_sex,
)
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact, statement
from schemas.memory import Polarity

# A name: one capitalised word ("Mot", "Pickles", "O'Neill"); after "called" or
# "named" also a lower-case one ("a little vira-lata called farofa").
_CAPITAL = r"[A-Z][^\W\d_]*(?:['’-][^\W\d_]+)?"
_ANY_CASE = r"[^\W\d_]+(?:['’-][^\W\d_]+)?"
# Capitalised words that are no name: the pronoun, days and months, and the
# words that open a new clause after a comma.
_NOT_NAMES = frozenset(
    {"i", "im", "i'm", "i'd", "i've", "i'll", "ok", "okay", "oh", "ah", "aye", "yeah", "yes"}
    | {"no", "nah", "but", "and", "so", "then", "he", "she", "they", "we", "it", "its", "his"}
    | {"her", "my", "our", "the", "a", "an", "this", "that", "there", "just", "well", "anyway"}
    | {"lol", "haha", "mate", "love", "dear", "god", "christmas", "easter", "mum", "dad"}
    | {*WEEKDAYS, *MONTHS}
)
# One relative said by relation alone: "my wife", "me and my boyfriend".
_RELATIONS = frozenset(v for v in KIN_WORDS.values() if not v.endswith("s")) | frozenset(
    {"boyfriend", "girlfriend", "cousin", "aunt", "uncle", "niece", "nephew", "grandson"}
    | {"granddaughter", "stepson", "stepdaughter", "stepmother", "stepfather", "ex"}
)
_ASKED_WORDS = 10
# A person asked after by name: "how's Priya?", "and Jono?", "what does Darnell
# think", "is Tom coming?".
_ASKED_AFTER = re.compile(
    r"\b(?i:how'?s|how is|how are|and|what about|what does|what did|what do|is|has|did|does)"
    rf"\s+(?P<name>{_CAPITAL})\b|(?P<name2>{_CAPITAL})\s*\?"
)
# Capitalised words that open a question about someone, not names of anyone.
_ASKING = frozenset(
    {"how", "how's", "hows", "what", "what's", "whats", "where", "who", "when", "why", "is"}
    | {"are", "was", "does", "did", "do", "has", "have", "will", "can", "any", "still", "you"}
    | {"your", "and", "so", "sorry", "ha", "haha", "omg", "aw", "aww", "oof", "wow", "hey", "hi"}
)
# Between a kind and its name after a comma: a few words that describe it
# ("a young collie working now, Mot"), none that opens a clause of its own.
_BETWEEN = r"(?:\s+(?!and\b|but\b|who\b|which\b|that\b)[^\W\d_]+){0,3}?"
# What ends a name said after its kind: punctuation, the end, or a clause.
_AFTER = r"(?=\s*(?:[,.!?;:)]|$|\s(?:and|who|is|was|has|had)\b))"


def named_beside(facts: Sequence[ExtractedFact], text: str) -> list[ExtractedFact]:
    """``facts`` with a relative or pet said only by its kind joined to the name beside it.

    Relatives said in the plural with their names ("our daughters Ximena and
    Sofia") are one relative each (``daughter ximena``, ``daughter sofia``).
    """
    vocabulary = default_vocabulary()
    out = []
    for fact in facts:
        spec = vocabulary.spec(fact.predicate)
        each = _each_named(fact, text) if spec.named else []
        if each:
            out.extend(each)
            continue
        name = _name_beside(fact.object, text) if spec.named else None
        if name is None or any(name.casefold() in other.object.split() for other in facts):
            out.append(fact)
            continue
        value = spec.normalise(f"{fact.object} {name}")
        out.append(_as(fact, value))
    return out


# A name given to someone said of elsewhere in the turn: "his name is Daniel",
# "she's called Jess", "her name's Aoife".
_NAME_OF = re.compile(
    rf"\b(?:(?P<owner>(?i:his|her|their))\s+(?i:name)(?:['’]s|\s+(?i:is|was))"
    rf"|(?P<person>(?i:he|she|they))(?:['’]s|\s+(?i:is|was|are))\s+(?i:called|named))"
    rf"\s+(?P<name>{_ANY_CASE})(?![\w'’-])"
)
_SEX_OF_PRONOUN = {"his": "male", "he": "male", "her": "female", "she": "female"}


def named_by_pronoun(facts: Sequence[ExtractedFact], text: str) -> list[ExtractedFact]:
    """``facts`` with the one relative said by relation alone named as the turn names them.

    "there's someone. his name is Daniel ... officially my boyfriend since
    july", "My son will be there if I'm not, he's called Daniel": the name is
    given by a pronoun, so it goes to the one bare relation the pronoun can
    mean. Never when the turn has two such relatives, or a pet without its
    name (it may be the pet's).
    """
    vocabulary = default_vocabulary()
    found = [m for m in _NAME_OF.finditer(text) if is_name(m["name"])]
    if len(found) != 1:
        return list(facts)
    match = found[0]
    name = match["name"].casefold()
    pronoun = (match["owner"] or match["person"]).casefold()
    sex = _SEX_OF_PRONOUN.get(pronoun)

    def bare(fact: ExtractedFact, predicate: str) -> bool:
        return (
            vocabulary.canonical(fact.predicate) == predicate
            and fact.polarity is Polarity.AFFIRMED
            and len(fact.object.split()) == 1
        )

    if name in {w for f in facts for w in f.object.split()} or any(bare(f, "pet") for f in facts):
        return list(facts)
    relatives = [
        f
        for f in facts
        if bare(f, "family_member")
        and f.object in _RELATIONS | set(KIN_WORDS.values())
        and (sex is None or kin_sex(f.object) in (sex, None))
    ]
    if len(relatives) != 1:
        return list(facts)
    spec = vocabulary.spec("family_member")
    return [_as(f, spec.normalise(f"{f.object} {name}")) if f is relatives[0] else f for f in facts]


def named_pets(facts: Sequence[ExtractedFact], text: str) -> list[ExtractedFact]:
    """``facts`` with each pet read as its kind and its name, one value per pet named.

    A kind takes the name given to it later in the turn ("named him Smokey");
    a name takes the kind said beside it ("my dog Sardine"). Of two values
    that name one pet in one polarity ("cat" and "grey cat" before "she named
    him Smokey"), the first stays.
    """
    spec = default_vocabulary().spec("pet")
    out = []
    seen: set[tuple[str, str]] = set()
    for fact in facts:
        if default_vocabulary().canonical(fact.predicate) != "pet":
            out.append(fact)
            continue
        value = _pet_named(fact.object, text, facts)
        name = _pet_name_part(value)
        if name and (name, fact.polarity.value) in seen:
            continue
        if name:
            seen.add((name, fact.polarity.value))
        out.append(fact if value == fact.object else _as(fact, spec.normalise(value)))
    return out


def named_as_held(
    facts: Sequence[ExtractedFact], known: Sequence[KnownValue]
) -> list[ExtractedFact]:
    """``facts`` with a part of a held relative or pet ("my husband") stated as the whole.

    Only when one held value of the predicate has that part, and the turn does
    not name another with it ("my sister" of two sisters stays as said).
    """
    vocabulary = default_vocabulary()
    out = []
    for fact in facts:
        predicate = vocabulary.canonical(fact.predicate)
        spec = vocabulary.spec(predicate)
        if not spec.named:
            out.append(fact)
            continue
        wholes = {
            k.object
            for k in known
            if k.predicate == predicate and spec.names_part_of(fact.object, k.object)
        }
        in_turn = any(
            other is not fact and spec.names_part_of(fact.object, other.object) for other in facts
        )
        out.append(_as(fact, wholes.pop()) if len(wholes) == 1 and not in_turn else fact)
    return out


def named_by_question(
    facts: Sequence[ExtractedFact], last_text: str, known: Sequence[KnownValue]
) -> list[ExtractedFact]:
    """``facts`` with a relative said by relation only, named as the question before named them.

    "how's Priya?" - "my wife is a saint" and "what does Darnell think" - "my
    husband thinks I should go for it" say ``wife priya`` and ``husband
    darnell``: a friend asks after a person by name and the user answers
    with who that is. Only a bare relation takes a name, only when the turn
    before names exactly one person, and never a name the turn uses itself or
    one the user holds as something else (a pet, a place).
    """
    vocabulary = default_vocabulary()
    spec = vocabulary.spec("family_member")
    bare = [
        f
        for f in facts
        if vocabulary.canonical(f.predicate) == "family_member"
        and f.polarity is Polarity.AFFIRMED
        and f.object in _RELATIONS
    ]
    # A friend asking after someone asks briefly; a longer turn names others
    # (the agent, the business, the places).
    if len(last_text.split()) > _ASKED_WORDS:
        return list(facts)
    names = {m.group("name") or m.group("name2") for m in _ASKED_AFTER.finditer(last_text)}
    held = {word for k in known if k.predicate != "family_member" for word in k.object.split()}
    names = {n for n in names if n.casefold() not in _NOT_NAMES | _ASKING | held}
    if len(bare) != 1 or len(names) != 1:
        return list(facts)
    name = names.pop().casefold()
    if any(name in f.object.split() for f in facts):
        return list(facts)
    return [_as(f, spec.normalise(f"{f.object} {name}")) if f is bare[0] else f for f in facts]


# A relative asked after by relation: "and your son?", "how's the wife?", "how
# are the boys?", "and your husband and the girls?". Kids and children are
# left out: a name answering for them does not say son or daughter.
_ASKED_RELATION = re.compile(
    r"\b(?i:your|ur|yr|yer|ya|the)\s+(?P<first>[^\W\d_]+)(?!['’]s)"
    r"(?:\s+(?i:and|n|&)\s+(?i:the\s+|your\s+|ur\s+)?(?P<second>[^\W\d_]+))?"
)
# What follows a name that opens the answer and says something of that person:
# "Yanis is 6", "Claire's in Dubai", "Mads is fine", "Ute comes on 2 May".
_SAID_OF = frozenset(
    {"'s", "’s", "is", "was", "has", "had", "says", "said", "and", "just", "still"}
)
# Openers of an answer that are no name, passed over to find the one that opens it.
_OPENERS = frozenset(
    {"yes", "yeah", "oh", "well", "ah"}
    | {"sadly", "honestly", "still", "good", "fine", "great", "all", "both", "not", "ja", "ya"}
    | {"ye", "yep", "yup", "hmm", "eh", "ugh", "omg", "wow", "bless", "poor", "busy", "same"}
    | {"lmao", "bro", "sis", "pop", "pops", "nope", "aye", "ha", "lol", "haha", "aw", "aww"}
)
_ASKED_SINGLE = frozenset(v for v in KIN_WORDS.values() if not v.endswith("s")) | _RELATIONS


def named_when_asked(
    event: DialogueEvent,
    facts: Sequence[ExtractedFact],
    doc: Any,
    last_text: str,
    known: Sequence[KnownValue],
) -> list[ExtractedFact]:
    """``facts`` with the relatives asked after by relation, named as the answer names them.

    The name must open the answer (a later one may be anyone), and the
    question must name no one itself ("how's Siân and the boys?" leaves who
    is who open). A plural relation ("the boys") takes each name that opens a
    sentence in turn; "your husband and the girls" gives the first name to
    the husband and the rest to the girls.
    """
    if event.role is not Role.USER:
        return list(facts)
    relations = _relations_asked(last_text)
    if not relations:
        return list(facts)
    held = {word for k in known for word in k.object.split()}
    names = [n for n in _opening_names(doc) if n not in held]
    said = {word for f in facts for word in f.object.split()}
    vocabulary = default_vocabulary()
    spec = vocabulary.spec("family_member")
    named: list[ExtractedFact] = []
    for relation in relations:
        single = relation if relation in _ASKED_SINGLE else relation[:-1]
        taken = names[:1] if relation == single else names
        names = names[len(taken) :]
        named += [
            stated(
                event,
                "family_member",
                spec.normalise(f"{single} {name}"),
                asserted_by=Assertor.USER,
                confidence=CONFIDENCE_NAMED,
                field="NAMED",
            )
            for name in taken
            if name not in said
        ]
    if not named:
        return list(facts)
    # The relation said alone is now said with its name.
    bare = {n.object.split()[0] for n in named}
    kept = [
        f
        for f in facts
        if not (vocabulary.canonical(f.predicate) == "family_member" and f.object in bare)
    ]
    return [*kept, *named]


def _relations_asked(last_text: str) -> list[str]:
    """The relations a short question asks after, in their one form ('boys' -> 'sons')."""
    question = last_question(last_text)
    if not question or len(question.split()) > _ASKED_WORDS:
        return []
    matches = [
        m
        for m in _ASKED_RELATION.finditer(question)
        if m["first"].casefold() in KIN_WORDS or m["first"].casefold() in _RELATIONS
    ]
    if len(matches) != 1:
        return []
    words = re.findall(r"[^\W\d_]+", question)[1:]
    if any(w[0].isupper() and w.casefold() not in KIN_WORDS and w != "I" for w in words):
        return []  # the question names someone: who is who is left open
    relations = []
    for word in (matches[0]["first"], matches[0]["second"]):
        if word is None:
            continue
        said = word.casefold()
        relation = KIN_WORDS.get(said, said if said in _RELATIONS else None)
        if relation is not None:
            relations.append(relation)
    return relations


def _opening_names(doc: Any) -> list[str]:
    """The names that open the answer's sentences, from the first until one opens without."""
    names = []
    for sentence in doc.sents:
        words = [t for t in sentence if not t.is_punct and not t.is_space]
        while words and words[0].lower_ in _OPENERS:
            words = words[1:]
        if len(words) < 2:
            break
        # What the name is said with follows it straight away: "Gujarati, and
        # lip-reading" is a list, not Gujarati doing something.
        first, after = words[0], doc[min(words[0].i + 1, len(doc) - 1)]
        if not (
            first.text[:1].isupper()
            and is_name(first.text)
            and first.lower_ not in KIN_WORDS
            and not first.is_stop
        ):
            break
        if first.pos_ in {"PRON", "DET", "INTJ", "CCONJ", "SCONJ", "NUM", "ADP", "ADJ"}:
            break
        if after.lower_ not in _SAID_OF and after.pos_ not in {"VERB", "AUX"}:
            break
        names.append(first.lower_)
    return names


def _as(fact: ExtractedFact, value: str) -> ExtractedFact:
    text = statement(fact.predicate, value, fact.polarity)
    return fact.model_copy(update={"object": value, "text": text})


def _name_beside(value: str, text: str) -> str | None:
    """The name said beside ``value``'s words in ``text``, if the value has none."""
    words = value.split()
    if not words:
        return None
    said = r"[\s,]+(?:the\s+)?".join(
        "(?:" + "|".join(re.escape(form) for form in kin_forms(w)) + ")" for w in words
    )
    for match in re.finditer(rf"(?<!\w){said}(?!\w)", text, re.IGNORECASE):
        if any(w[0].isupper() and is_name(w) for w in match.group(0).split()[1:]):
            return None  # it is named in its own words ("my sister Ana")
        after = text[match.end() :]
        before = text[: match.start()]
        found = (
            re.match(rf"{_BETWEEN}\s+(?:called|named)\s+({_ANY_CASE}){_AFTER}", after)
            or re.match(rf"{_BETWEEN},\s+({_CAPITAL}){_AFTER}", after)
            # "my son Jaden turn seven", "me son Liam deein the liftin": a
            # capitalised word right after a relation is its name, whatever
            # follows; the tagger's span stopped at the relation.
            or (_DIRECT_NAME.match(after) if value in _RELATIONS else None)
            or (
                # "Ekow, my boy, ..." is an apposition only with the comma after
                # it: "Haan, my parents are in ..." names nobody.
                re.search(rf"(?<!\w)({_CAPITAL})(?:,\s+(?:my|our|me|mi)|\s+the)\s+$", before)
                if re.match(r"\s*(?:[,.!?;:)]|$)", after) or before.rstrip().endswith(" the")
                else None
            )
        )
        if found is not None and is_name(found.group(1)):
            return found.group(1)
    return None


# A name right after a relation, its possessive left out ("my husband Kev's back").
_DIRECT_NAME = re.compile(r"\s+([A-Z][^\W\d_]*(?:-[^\W\d_]+)?)(?:['’]s)?(?![\w'’-])")
# Relatives in the plural named one by one: "daughters Ximena and Sofia",
# "my brothers, Tunde, Femi and Seyi".
_NAMED_LIST = re.compile(
    rf",?\s+((?:{_CAPITAL},?\s+)*?{_CAPITAL}),?\s+(?:and|&)\s+({_CAPITAL})(?![\w'’-])"
)


def _each_named(fact: ExtractedFact, text: str) -> list[ExtractedFact]:
    """One fact per relative named after a plural relation, or none."""
    plural = fact.object
    single = plural[:-1]
    if not plural.endswith("s") or single not in _RELATIONS:
        return []
    for match in re.finditer(rf"(?<!\w){re.escape(plural)}(?!\w)", text, re.IGNORECASE):
        listed = _NAMED_LIST.match(text[match.end() :])
        if listed is None:
            continue
        names = [*re.split(r",?\s+", listed.group(1)), listed.group(2)]
        if not all(is_name(name) for name in names):
            continue
        spec = default_vocabulary().spec(fact.predicate)
        return [_as(fact, spec.normalise(f"{single} {name.casefold()}")) for name in names]
    return []


def is_name(word: str) -> bool:
    """Whether a capitalised word can be a name: no pronoun, day, month or opener."""
    plain = word.strip(",.!?;:")
    return bool(plain) and plain.casefold() not in _NOT_NAMES


# Colours said just before a pet's kind are part of how it is told apart
# ("a ginger tom", "my black lab").
_COLOURS = frozenset(
    {"ginger", "grey", "gray", "black", "white", "orange", "brown", "chocolate", "yellow"}
    | {"red", "cream", "tan", "silver", "tortoiseshell", "tortie", "tuxedo", "brindle", "merle"}
)
# A kind read beside a name: a run of kind words with the colour before it and
# "cross"/"mix" after it ("a collie cross", "a terrier mix").
_KIND_TAIL = frozenset({"cross", "mix"})
# A name given to a pet said before it: "she named him Smokey", "called her
# Nugget", "her name is Queso".
_GIVEN = re.compile(
    rf"\b(?i:call|calls|called|name|names|named)(?:\s+(?i:is|was)|'s)?\s+(?i:him|her|it|them\s+)?"
    rf"\s*({_ANY_CASE}){_AFTER}"
)
_NAME_AFTER_KIND = re.compile(rf"\s+({_CAPITAL}){_AFTER}")


def _pet_named(value: str, text: str, facts: Sequence[ExtractedFact]) -> str:
    """``value`` with the part it lacks: the name given to its kind, or the kind beside its name."""
    words = value.split()
    if not words:
        return value
    # "corgi mix" is a kind as much as "corgi" is.
    if is_pet_kind(words[-1]) or (
        len(words) > 1 and words[-1] in _KIND_TAIL and is_pet_kind(words[-2])
    ):
        name = _name_given(value, text)
        # Another value holding the name with a kind of its own is that pet;
        # one holding the name alone is this one, said in part.
        taken = name is not None and any(
            name.casefold() in f.object.split() and any(is_pet_kind(w) for w in f.object.split())
            for f in facts
        )
        return f"{value} {name}" if name is not None and not taken else value
    if not any(is_pet_kind(w) for w in words) and len(words) <= 2:
        # "German" of "German shepherd": the tagger's span ended inside the kind.
        following = re.search(rf"(?<!\w){re.escape(value)}\s+([^\W\d_]+)", text, re.IGNORECASE)
        if following is not None and f"{value} {following.group(1)}".casefold() in PET_KINDS:
            return f"{value} {following.group(1)}".casefold()
        kind = _kind_beside(value, text)
        return f"{kind} {value}" if kind else value
    return value


def _pet_name_part(value: str) -> str:
    """The words after a pet's kind, its name ('grey cat smokey' -> 'smokey'); all if no kind."""
    words = value.casefold().split()
    last_kind = max((i for i, w in enumerate(words) if is_pet_kind(w)), default=-1)
    return " ".join(words[last_kind + 1 :])


def _name_given(value: str, text: str) -> str | None:
    """The name given to the pet ``value`` names, later in its sentence or the next one."""
    said = r"\s+".join(re.escape(w) for w in value.split())
    for match in re.finditer(rf"(?<!\w){said}(?!\w)", text, re.IGNORECASE):
        after = text[match.end() :]
        direct = _NAME_AFTER_KIND.match(after)
        if direct is not None and is_name(direct.group(1)):
            return direct.group(1)
        # Up to the end of the next sentence: "a cat now. Simi begged. Grey
        # cat, she named him Smokey" names the cat of the first.
        window = re.match(r"[^.!?\n]*[.!?\n]*[^.!?\n]*[.!?\n]*[^.!?\n]*", after)
        given = _GIVEN.search(window.group(0) if window else after)
        if given is not None and is_name(given.group(1)):
            return given.group(1)
    return None


def _kind_beside(name: str, text: str) -> str | None:
    """The kind said beside the pet called ``name``: "my dog Sardine", "Bella the staffie"."""
    for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
        before = re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)?", text[: match.start()])
        kind = _kind_ending(before)
        if kind is None:
            given = re.search(
                r"((?:[^\W\d_]+\s+){1,3})(?:\w+\s+){0,4}?(?:called|named)\s+"
                r"(?:(?:him|her|it)\s+)?$",
                text[: match.start()],
                re.IGNORECASE,
            )
            kind = _kind_ending(given.group(1).split()) if given else None
        if kind is None:
            after = re.match(
                r"(?:\s+the|,\s+(?:my|our|a|an|the|me)|\s+(?:is|was|'s)\s+(?:a|an|my|our))"
                r"((?:\s+[^\W\d_]+){1,4})",
                text[match.end() :],
                re.IGNORECASE,
            )
            kind = _kind_starting(after.group(1).split()) if after else None
        if kind is not None:
            return kind
    return None


def _kind_ending(words: Sequence[str]) -> str | None:
    """The kind that ``words`` end with ("... my black lab" -> 'black lab'), if any."""
    lowered = [w.casefold() for w in words]
    run: list[str] = []
    for n in range(len(lowered) - 1, -1, -1):
        word = lowered[n]
        if _kind_word(lowered, n) or (run and word in _COLOURS) or (not run and word in _KIND_TAIL):
            run.insert(0, word)
            continue
        break
    return " ".join(run) if any(is_pet_kind(w) for w in run) else None


def _kind_starting(words: Sequence[str]) -> str | None:
    """The first kind said in ``words``, past a few words about size or age ('wee ginger tom')."""
    lowered = [w.casefold() for w in words]
    run: list[str] = []
    for n, word in enumerate(lowered):
        if _kind_word(lowered, n) or word in _COLOURS or (run and word in _KIND_TAIL):
            run.append(word)
        elif run:
            break
    return " ".join(run) if any(is_pet_kind(w) for w in run) else None


def _kind_word(words: Sequence[str], n: int) -> bool:
    """Whether ``words[n]`` names a kind, alone or with the next word ("german shepherd")."""
    return is_pet_kind(words[n]) or " ".join(words[n : n + 2]) in PET_KINDS
