"""Values the user says have ended ("Fly died", "nah, left."), over plain lists."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.extract.context import DialogueContext, new_session
from pipelines.extract.endings import KNOWN_VALUES, KnownValue, endings, remember
from schemas.events import DialogueEvent, Role
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import Polarity

TS = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
NEG, AFF = Polarity.NEGATED, Polarity.AFFIRMED


def turn(text: str, role: Role = Role.USER, session: str = "s2") -> DialogueEvent:
    return DialogueEvent(
        event_id="e1",
        tenant_id="t1",
        user_id="u1",
        session_id=session,
        turn_index=3,
        role=role,
        text=text,
        ts=TS,
    )


def fact(predicate: str, value: str, polarity: Polarity = AFF, **more: object) -> ExtractedFact:
    event = turn("")
    return ExtractedFact(
        tenant_id=event.tenant_id,
        user_id=event.user_id,
        event_id=event.event_id,
        event_ts=event.ts,
        subject="user",
        predicate=predicate,
        object=value,
        polarity=polarity,
        confidence=0.88,
        **more,  # type: ignore[arg-type]
    )


def known(*pairs: tuple[str, str]) -> list[KnownValue]:
    return [KnownValue(predicate=p, object=o) for p, o in pairs]


def ended(
    text: str, held: list[KnownValue], previous: str = "", own: list[ExtractedFact] | None = None
) -> set[tuple[str, str, Polarity]]:
    out = endings(turn(text), own or [], held, previous)
    return {(f.predicate, f.object, f.polarity) for f in out}


HELD = known(
    ("pet", "border collie fly"),
    ("hobby", "darts"),
    ("travel", "benidorm"),
    ("employer", "royal mail"),
    ("plans_to", "run birmingham half marathon"),
    ("family_member", "girlfriend priya"),
    ("owns", "2011 transit"),
    ("medication", "naproxen"),
)


@pytest.mark.parametrize(
    ("text", "previous", "expected"),
    [
        # The value named by a word of it, on the side of the cue its role takes.
        ("And Fly died, two weeks back.", "", ("pet", "border collie fly")),
        ("and I've packed in the darts. Shona won", "", ("hobby", "darts")),
        ("change of plans. Benidorm's off, the hotel went bust", "", ("travel", "benidorm")),
        (
            "knackered me calf. the half's off, gutted.",
            "",
            ("plans_to", "run birmingham half marathon"),
        ),
        ("I finally sold the Transit last month.", "", ("owns", "2011 transit")),
        ("Been off the naproxen a week now.", "", ("medication", "naproxen")),
        ("I don't play darts any more, my wrist.", "", ("hobby", "darts")),
        ("I no longer work at Royal Mail.", "", ("employer", "royal mail")),
        # A pet gone or given up.
        ("And Fly's gone. I miss her something terrible.", "", ("pet", "border collie fly")),
        ("Fly is gone, we gave her to the neighbours.", "", ("pet", "border collie fly")),
        ("Had to let her go in August.", "How's Fly?", ("pet", "border collie fly")),
        # By a pronoun, or not at all in a bare answer: the question before names it.
        ("Had to put her down last Friday.", "And how's Fly?", ("pet", "border collie fly")),
        ("nah, left. DPD pay better.", "You still at Royal Mail?", ("employer", "royal mail")),
        (
            "nah we broke up like 3 weeks ago.",
            "bringing Priya?",
            ("family_member", "girlfriend priya"),
        ),
    ],
)
def test_an_ending_negates_the_value_as_it_is_held(
    text: str, previous: str, expected: tuple[str, str]
) -> None:
    assert ended(text, HELD, previous) == {(*expected, NEG)}


@pytest.mark.parametrize(
    ("text", "previous"),
    [
        ("I didn't quit the darts, I just missed a week.", ""),  # denied
        ("might have to bail on Benidorm, money's tight", ""),  # hedged, still to come
        ("if the darts gets cancelled I'll take up bowls", ""),  # conditional
        ("Two lads quit so I'm the only driver left at Royal Mail.", ""),  # someone else left
        ("I'm off to Benidorm on Friday!", ""),  # a trip begins
        ("We're selling the Transit next year.", ""),  # not yet
        ("I lost that fight completely.", "bringing Priya?"),  # "lost" needs its value named
        ("Fly won the sheepdog trial!", ""),  # no end at all
        ("Has Benidorm been cancelled?", ""),  # asked
        ("Fly is not a puppy any more, she's nine.", ""),  # what ended is not a value held
        ("Royal Mail's gone downhill, mind.", ""),  # only a pet is gone
    ],
)
def test_no_ending_without_a_stated_end_by_the_user(text: str, previous: str) -> None:
    assert ended(text, HELD, previous) == set()


def test_a_pronoun_ends_nothing_when_two_values_fit_it_equally() -> None:
    sisters = known(("family_member", "sister ana"), ("family_member", "sister mia"))
    assert ended("She passed away on Sunday.", sisters, "how are your sisters?") == set()
    # One hobby said two ways is one hobby: both forms end.
    bridge = known(("hobby", "bridge"), ("hobby", "bridge club"))
    assert ended("I've given up the bridge club.", bridge) == {
        ("hobby", "bridge", NEG),
        ("hobby", "bridge club", NEG),
    }


def test_the_turns_own_value_inside_an_ending_is_negated_as_an_update() -> None:
    own = [fact("employer", "sandy lane", hedged=True), fact("employer", "tourism authority")]
    out = endings(turn("I left Sandy Lane! Got a job at the Tourism Authority."), own, [], "")
    left, new = out
    assert (left.object, left.polarity, left.is_update, left.hedged) == (
        "sandy lane",
        NEG,
        True,
        False,
    )
    assert left.confidence >= 0.82  # commits: the ending clause itself is not hedged
    assert (new.object, new.polarity) == ("tourism authority", AFF)


def test_a_negation_said_by_part_of_a_held_value_ends_the_whole_value() -> None:
    out = endings(turn("Big news, no more Transit!"), [fact("owns", "transit", NEG)], HELD, "")
    assert [(f.object, f.polarity, f.is_update) for f in out] == [("2011 transit", NEG, True)]
    # A dislike is not an end: "not spicy curry" says nothing of curry.
    curry = endings(
        turn("I don't like spicy curry."),
        [fact("likes", "spicy curry", NEG)],
        known(("likes", "curry")),
        "",
    )
    assert [f.object for f in curry] == ["spicy curry"]


def test_other_speakers_turns_end_nothing() -> None:
    out = endings(turn("Fly died?", role=Role.AGENT), [], HELD, "")
    assert out == []


def test_remember_keeps_affirmed_values_drops_ended_ones_and_is_bounded() -> None:
    held = remember([], [fact("pet", "beagle biscuit"), fact("phone_number", "0123")])
    assert held == known(("pet", "beagle biscuit"))  # a phone number does not "end"
    assert remember(held, [fact("pet", "beagle biscuit", NEG)]) == []
    many = [fact("hobby", f"hobby number {i:03}") for i in range(KNOWN_VALUES + 5)]
    kept = remember([], many)
    assert len(kept) == KNOWN_VALUES
    assert kept[-1].object == f"hobby number {KNOWN_VALUES + 4:03}"  # the latest are kept


def test_known_values_carry_into_the_users_next_session() -> None:
    first = DialogueContext(session_id="s1", user_id="u1", known=known(("pet", "fly")))
    second = new_session(turn("Fly died.", session="s2"), first)
    assert second.known == first.known
    assert second.session_id == "s2"
    # And they round-trip through the keyed state as JSON.
    assert DialogueContext.model_validate_json(second.model_dump_json()) == second


def test_an_agent_voice_fact_is_not_the_users_own_value_to_flip() -> None:
    own = [fact("employer", "royal mail", asserted_by=Assertor.AGENT)]
    out = endings(turn("Still at Royal Mail? I left."), own, [], "")
    assert [(f.object, f.polarity) for f in out] == [("royal mail", AFF)]
