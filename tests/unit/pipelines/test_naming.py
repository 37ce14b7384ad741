"""A relative or pet as kind and name in one value, over plain lists."""

from __future__ import annotations

from typing import Any

import pytest
from stage_builders import fact, turn

from pipelines.extract.endings import KnownValue
from pipelines.extract.naming import (
    named_as_held,
    named_beside,
    named_by_pronoun,
    named_by_question,
    named_pets,
    named_when_asked,
)
from pipelines.parse import DialogueParser
from pipelines.vocabulary import default_vocabulary
from schemas.events import Role
from schemas.memory import Polarity


def beside(text: str, *facts: tuple[str, str]) -> set[tuple[str, str]]:
    out = named_beside([fact(p, o) for p, o in facts], text)
    return {(f.predicate, f.object) for f in out}


@pytest.mark.parametrize(
    ("text", "said", "named"),
    [
        ("Got a young collie working now, Mot, had him from a farm.", "collie", "collie mot"),
        ("We got her a cat instead, Pickles. I'm sneezing already", "cat", "cat pickles"),
        ("we adopted a dog too, a little mutt called farofa", "mutt", "mutt farofa"),
        ("and a've got Bella the staffie.", "staffie", "staffie bella"),
        ("Big! Ekow, my boy, only wants football.", "son", "son ekow"),
        ("My youngest, a daughter named Isla, starts school.", "daughter", "daughter isla"),
    ],
)
def test_a_kind_takes_the_name_said_beside_it(text: str, said: str, named: str) -> None:
    predicate = "family_member" if said in {"son", "daughter"} else "pet"
    assert beside(text, (predicate, said)) == {(predicate, named)}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # an interjection before "my parents" is no name: no apposition closes it
        ("Haan, my parents are in Jayanagar only", "parents"),
        # a new clause after the comma
        ("We got a dog, and Mum loves him.", "dog"),
        ("I have a cat, Monday is her vet day.", "cat"),
        # named in its own words already
        ("my sister Ana is joining us", "sister ana"),
    ],
)
def test_no_name_is_invented(text: str, said: str) -> None:
    predicate = "pet" if said in {"dog", "cat"} else "family_member"
    assert beside(text, (predicate, said)) == {(predicate, said)}


def test_a_name_another_fact_holds_is_not_taken_twice() -> None:
    text = "A little rescue cat called Pwdin."
    assert beside(text, ("pet", "little"), ("pet", "rescue cat pwdin")) == {
        ("pet", "little"),
        ("pet", "rescue cat pwdin"),
    }


def test_only_named_predicates_are_joined() -> None:
    assert beside("I love my car, Betsy.", ("owns", "car")) == {("owns", "car")}


def held(*pairs: tuple[str, str]) -> list[KnownValue]:
    return [KnownValue(predicate=p, object=o) for p, o in pairs]


def test_a_part_of_the_one_held_value_is_that_value() -> None:
    out = named_as_held(
        [fact("family_member", "husband"), fact("pet", "mochi", Polarity.NEGATED)],
        held(("family_member", "husband kwame"), ("pet", "cat mochi")),
    )
    assert [(f.object, f.polarity) for f in out] == [
        ("husband kwame", Polarity.AFFIRMED),
        ("cat mochi", Polarity.NEGATED),
    ]
    assert out[0].text == "family_member husband kwame"


def test_a_part_two_held_values_share_stays_as_said() -> None:
    two_sisters = held(("family_member", "sister ana"), ("family_member", "sister bea"))
    out = named_as_held([fact("family_member", "sister")], two_sisters)
    assert out[0].object == "sister"


def test_a_part_the_turn_names_in_full_stays_as_said() -> None:
    facts = [fact("family_member", "sister"), fact("family_member", "sister bea")]
    out = named_as_held(facts, held(("family_member", "sister ana")))
    assert [f.object for f in out] == ["sister", "sister bea"]


def test_a_value_of_another_predicate_is_never_widened() -> None:
    out = named_as_held([fact("hobby", "darts")], held(("hobby", "darts league")))
    assert out[0].object == "darts"


@pytest.mark.parametrize(
    ("said", "one_form"),
    [
        ("Mum", "mother"),
        ("my mom", "mother"),
        ("mam", "mother"),
        ("our boy Elie", "son elie"),
        ("my girl Ava", "daughter ava"),
        ("old man", "father"),
        ("nan", "grandmother"),
        ("grandad Joe", "grandfather joe"),
        ("hubby", "husband"),
        ("mums", "mothers"),
        ("mum, sheila", "mother sheila"),  # the comma only sets the name apart
        ("momentum", "momentum"),
        # A name said before its relation reads the same as after it.
        ("Margaret, the wife", "wife margaret"),
        ("kayla my sister", "sister kayla"),
        ("Jo mum", "mother jo"),
        ("late husband", "late husband"),  # a relation of its own, not a name
        ("little sister", "little sister"),
        ("birthday girl", "birthday girl"),
        ("husband's mother", "husband's mother"),
        # parents and grandparents called as in another language
        ("Amma", "mother"),
        ("mi mamá", "mi mamá"),  # only a leading relation word is read
        ("mamá", "mother"),
        ("tatay", "father"),
        ("nene", "grandmother"),
        ("lolo Ben", "grandfather ben"),
        ("esposa", "wife"),
        ("anne", "anne"),  # Turkish for mother, but also a name
    ],
)
def test_a_relation_has_one_form(said: str, one_form: str) -> None:
    assert default_vocabulary().spec("family_member").normalise(said) == one_form


def test_relations_said_two_ways_are_one_value() -> None:
    spec = default_vocabulary().spec("family_member")
    assert spec.same_value("mum", "mother")
    assert spec.same_value("boy elie", "son elie")
    assert spec.same_value("mums", "mum")
    assert not spec.same_value("mother", "father")


def pets(text: str, *values: str) -> list[str]:
    return [f.object for f in named_pets([fact("pet", v) for v in values], text)]


@pytest.mark.parametrize(
    ("text", "said", "named"),
    [
        # the name given a clause or a sentence later
        ("we have a cat now. Simi begged. Grey cat, she named him Smokey.", "cat", "cat smokey"),
        (
            "We've got a wee labrador pup now, Aroha named her Nugget.",
            "wee labrador pup",
            "labrador nugget",
        ),
        ("Budgie now an' all, Kev's idea. Called him Shearer.", "budgie", "budgie shearer"),
        # the kind said beside the name
        ("My dog Sardine is the boss of the house now.", "sardine", "dog sardine"),
        ("an a've got Bella the staffie.", "bella", "staffie bella"),
        ("Tango, our ginger tom, hates the rain.", "tango", "ginger tom tango"),
        # a breed the tagger cut short
        ("Did you get the German shepherd?", "german", "german shepherd"),
    ],
)
def test_a_pet_is_read_as_kind_and_name(text: str, said: str, named: str) -> None:
    assert pets(text, said) == [named]


def test_one_pet_named_twice_is_one_value() -> None:
    text = "We adopted a rescue cat instead, a black one, the girls named her Luna."
    assert pets(text, "rescue cat", "luna") == ["rescue cat luna"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("We got a dog last week, and Mum loves him.", "dog"),
        ("Mochi is so fat now.", "mochi"),
        ("I named the file Report.", "cat"),
    ],
)
def test_no_pet_name_or_kind_is_invented(text: str, said: str) -> None:
    assert pets(text, said) == [said]


@pytest.mark.parametrize(
    ("question", "said", "named"),
    [
        ("oof. how's Priya?", "wife", "wife priya"),
        ("and what does Darnell think", "husband", "husband darnell"),
        ("oh mean!! and Jono?", "boyfriend", "boyfriend jono"),
    ],
)
def test_a_relation_answering_a_question_after_a_name_is_that_person(
    question: str, said: str, named: str
) -> None:
    out = named_by_question([fact("family_member", said)], question, [])
    assert [f.object for f in out] == [named]


@pytest.mark.parametrize(
    ("question", "facts", "known"),
    [
        # the question names nobody, or two people
        ("Lovely. Anything else?", [("family_member", "wife")], []),
        ("How are Tom and Ana?", [("family_member", "sister")], []),
        # a long turn names others (the agent, the business)
        (
            "Hi, this is Marcus from KeepSafe Storage, just confirming your booking for Friday?",
            [("family_member", "wife")],
            [],
        ),
        # two relatives said by relation: which one is asked after is unclear
        ("how's Priya?", [("family_member", "wife"), ("family_member", "sister")], []),
        # the relative already has a name, or the name is the user's pet
        ("how's Priya?", [("family_member", "wife maya")], []),
        ("and Mochi?", [("family_member", "girlfriend")], [("pet", "cat mochi")]),
    ],
)
def test_no_name_without_one_person_asked_after_and_one_bare_relation(
    question: str, facts: list[tuple[str, str]], known: list[tuple[str, str]]
) -> None:
    said = [fact(p, o) for p, o in facts]
    held = [KnownValue(predicate=p, object=o) for p, o in known]
    assert named_by_question(said, question, held) == said


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Mi son Jaden turn seven last week, him mad bout football", "son jaden"),
        # the possessive is no part of the name
        ("Me an' me son Liam's back from the pub", "son liam"),
    ],
)
def test_a_capitalised_word_right_after_a_relation_is_its_name(text: str, named: str) -> None:
    assert beside(text, ("family_member", "son")) == {("family_member", named)}


@pytest.mark.parametrize(
    "text",
    [
        "my son is coming on Tuesday",
        "my husband I think is mad",
        "my son Tuesday",  # a day is no name
        "my son jaden turned seven",  # lower case gives no name to trust
    ],
)
def test_no_direct_name_without_a_capitalised_name(text: str) -> None:
    said = "husband" if "husband" in text else "son"
    assert beside(text, ("family_member", said)) == {("family_member", said)}


@pytest.mark.parametrize(
    ("text", "said", "named"),
    [
        (
            "Our daughters Ximena and Sofia turn 15 in July",
            "daughters",
            {"daughter ximena", "daughter sofia"},
        ),
        (
            "my brothers, Tunde, Femi and Seyi are coming",
            "brothers",
            {"brother tunde", "brother femi", "brother seyi"},
        ),
        # no names listed: the plural stays as said
        ("my daughters are fine, thanks", "daughters", {"daughters"}),
        ("the twins and Mum are here", "twins", {"twins"}),
    ],
)
def test_relatives_named_in_a_list_are_one_relative_each(
    text: str, said: str, named: set[str]
) -> None:
    assert beside(text, ("family_member", said)) == {("family_member", n) for n in named}


@pytest.mark.parametrize(
    ("text", "said", "named"),
    [
        (
            "WE GOT HER. corgi mix from the shelter, her name is Queso",
            "corgi mix",
            "corgi mix queso",
        ),
        ("we adopted a shepherd mix, his name is Moose", "shepherd mix", "shepherd mix moose"),
        ("got a wee collie cross, name's Bramble", "collie cross", "collie cross bramble"),
        # a cross or a mix with no name given stays as said
        ("she's a collie cross, daft as a brush", "collie cross", "collie cross"),
    ],
)
def test_a_cross_or_mix_takes_the_name_given_to_it(text: str, said: str, named: str) -> None:
    assert pets(text, said) == [named]


@pytest.fixture(scope="module")
def nlp() -> Any:
    return DialogueParser.load().nlp


def when_asked(
    nlp: Any,
    question: str,
    text: str,
    *facts: tuple[str, str],
    known: tuple[tuple[str, str], ...] = (),
    role: Role = Role.USER,
) -> set[tuple[str, str]]:
    held = [KnownValue(predicate=p, object=o) for p, o in known]
    said = [fact(p, o) for p, o in facts]
    out = named_when_asked(turn(text, role), said, nlp(text), question, held)
    return {(f.predicate, f.object) for f in out}


@pytest.mark.parametrize(
    ("question", "text", "named"),
    [
        (
            "And your son? He must be huge now",
            "Yanis is 6 and wants to be a fireman.",
            {"son yanis"},
        ),
        (
            "Blimey. Is the wife looking after you?",
            "Pauline fussing over me like a baby.",
            {"wife pauline"},
        ),
        ("and your sister?", "Claire's in Dubai, does what she can on zoom.", {"sister claire"}),
        ("Booked. Will your husband be coming?", "Yes, Paolo will come.", {"husband paolo"}),
        ("how's your lad?", "Jayden's eight goin on forty.", {"son jayden"}),
        # a plural relation takes each name that opens a sentence
        (
            "And the boys?",
            "Osian's started at Cardiff. Iwan's in year 10.",
            {"son osian", "son iwan"},
        ),
        # the first name is the one asked first, the rest the plural's
        (
            "Ha. And your husband and the girls?",
            "Mads is fine, busy at the bakery. Ida is 12. Karla is 8 and wants a rabbit.",
            {"husband mads", "daughter ida", "daughter karla"},
        ),
    ],
)
def test_a_name_opening_the_answer_is_the_relative_asked_after(
    nlp: Any, question: str, text: str, named: set[str]
) -> None:
    assert when_asked(nlp, question, text) == {("family_member", v) for v in named}


def test_the_relation_said_alone_gives_way_to_the_named_one(nlp: Any) -> None:
    found = when_asked(
        nlp,
        "and your husband?",
        "Tobias is good, my husband is bored.",
        ("family_member", "husband"),
    )
    assert found == {("family_member", "husband tobias")}


@pytest.mark.parametrize(
    ("question", "text", "known"),
    [
        # no relation asked after, or kids: the name says no son or daughter
        ("how was the trip?", "Lisbon was lovely.", ()),
        ("How are the kids?", "Zara's 11 and suddenly too cool for me.", ()),
        # the question asks after the relative's own thing, and the answer
        # opens with a word that says something else
        ("Fair. How was your mum's visit?", "Lovely and exhausting. Tunde loved it.", ()),
        ("Does your father use any other language at home?", "Gujarati, and lip-reading.", ()),
        # the question names someone: who is who is open
        ("Ha! How's Siân and the boys?", "Siân's fine, still up in Bristol.", ()),
        # the answer opens without a name; a name later in it may be anyone's
        ("How is your mother?", "She is ok. Ethan started school.", ()),
        ("And your dad?", "Sadly not great.", ()),
        # a name held as something else (the user's pet)
        ("and your sister?", "Mochi is asleep on her.", (("pet", "cat mochi"),)),
        # a long question asks about more than the relative
        (
            "Would your husband like the confirmation sent to his own email address as well?",
            "Paolo has one, yes.",
            (),
        ),
    ],
)
def test_no_relative_named_without_a_name_opening_the_answer_to_one(
    nlp: Any, question: str, text: str, known: tuple[tuple[str, str], ...]
) -> None:
    assert when_asked(nlp, question, text, known=known) == set()


def test_the_other_speakers_turn_names_no_relative(nlp: Any) -> None:
    assert when_asked(nlp, "and your son?", "Yanis is 6.", role=Role.AGENT) == set()


def by_pronoun(text: str, *facts: tuple[str, str]) -> set[tuple[str, str]]:
    out = named_by_pronoun([fact(p, o) for p, o in facts], text)
    return {(f.predicate, f.object) for f in out}


@pytest.mark.parametrize(
    ("text", "said", "named"),
    [
        (
            "lol okay so... there's someone. his name is Daniel, he's a nurse. "
            "officially my boyfriend since july",
            "boyfriend",
            "boyfriend daniel",
        ),
        ("My son will be there if I'm not, he's called Daniel.", "son", "son daniel"),
        ("She's 11, about 4 foot 10. Her name's Maya if that helps", "daughter", "daughter maya"),
        (
            "and my great granddaughter is born!!! her name is sofia",
            "granddaughter",
            "granddaughter sofia",
        ),
        # a relation that says no sex takes either pronoun
        ("could you add my partner? She's called Jess.", "partner", "partner jess"),
    ],
)
def test_a_name_given_by_a_pronoun_is_the_one_bare_relative_it_can_mean(
    text: str, said: str, named: str
) -> None:
    assert by_pronoun(text, ("family_member", said)) == {("family_member", named)}


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # the pronoun's sex fits no relative said, or two of them
        ("my brother, her name is Ama", [("family_member", "brother")]),
        (
            "my sister and my aunt, her name is Ama",
            [("family_member", "sister"), ("family_member", "aunt")],
        ),
        # a pet without its name may be the one named
        (
            "we got a puppy for my son, he's called Rex",
            [("family_member", "son"), ("pet", "puppy")],
        ),
        # the relative has a name already, or a day is no name
        ("my son Tom, he's called Tommy at school", [("family_member", "son tom")]),
        ("my husband says her name is Sunday", [("family_member", "husband")]),
    ],
)
def test_no_name_by_pronoun_without_one_relative_it_can_mean(
    text: str, facts: list[tuple[str, str]]
) -> None:
    assert by_pronoun(text, *facts) == set(facts)
