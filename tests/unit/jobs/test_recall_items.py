"""What the serving index learns from the user's facts besides the items themselves."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from jobs.serve.recall_items import UserItems, build_items, to_hits
from pipelines.recall_index import OPENING_SCALE, SHORT_TURN_SCALE, ItemKind, Scored
from schemas.episodes import Episode, StoredEpisode
from schemas.events import Role
from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, Polarity, Tier

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIM = 4


def hit(fact_id: str, predicate: str, obj: str, **kw: object) -> SearchHit:
    values: dict[str, object] = {
        "tier": Tier.EPISODIC,
        "fact_id": fact_id,
        "chain_id": f"c-{predicate}-{obj}",
        "tenant_id": "t",
        "user_id": "u",
        "subject": "user",
        "predicate": predicate,
        "object": obj,
        "polarity": Polarity.AFFIRMED,
        "kind": MemoryKind.FACT,
        "version": 1,
        "valid_from": NOW,
    } | kw
    return SearchHit.model_validate(values)


def test_the_users_own_name_is_read_from_their_current_name_facts() -> None:
    vector = [1.0] * DIM
    facts = [
        (hit("f1", "name", "Kerry Walsh"), vector),
        (hit("f2", "name", "kez", valid_until=NOW), vector),  # closed: no longer her name
        (hit("f3", "name", "lee", polarity=Polarity.NEGATED), vector),  # "I'm not Lee"
        (hit("f4", "family_member", "husband lee"), vector),
    ]
    items = build_items(chroma_facts=facts, embed=lambda hits: [np.ones(DIM)] * len(hits), dim=DIM)
    assert items.own_name == {"kerry", "walsh"}
    pending = build_items(
        pending=[hit("p1", "name", "kerry")], embed=lambda h: [np.ones(DIM)], dim=DIM
    )
    assert pending.own_name == frozenset()  # a name waiting for confirmation is not taken as hers


def said(
    index: int,
    role: Role,
    speaker: str | None,
    fact_ids: tuple[str, ...] = (),
    text: str = "we got a greyhound",
    context: str | None = None,
) -> StoredEpisode:
    lineage = SourceLineage(
        topic="dialogue.events", partition=0, offset=index, event_id=f"e{index}"
    )
    episode = Episode(
        episode_id=f"ep{index}",
        tenant_id="t",
        user_id="u",
        session_id="s1",
        turn_index=index,
        role=role,
        text=text,
        context=context,
        context_role=Role.AGENT if context else None,
        ts=NOW,
        lineage=lineage,
        speaker=speaker,
        fact_ids=list(fact_ids),
    )
    return StoredEpisode(episode, outdated=False, vector=[1.0] * DIM)


def test_the_name_the_users_turns_are_keyed_with_is_her_own_name_too() -> None:
    # Between friends no one says "my name is": the friend calls her Niamh
    # (pipelines/speakers.py), and her turns are keyed "Niamh: ...".
    episodes = [
        said(0, Role.AGENT, "Fiona"),
        said(1, Role.USER, "Niamh"),
        said(2, Role.USER, "Niamh"),
        said(3, Role.USER, "Nee"),  # a nickname heard once
        said(4, Role.USER, None),  # before both sides had a name
    ]
    items = build_items(episodes=episodes, embed=lambda hits: [], dim=DIM)
    assert items.own_name == {"niamh"}
    assert build_items(episodes=episodes[:1], embed=lambda hits: [], dim=DIM).own_name == set()


def test_a_fact_standing_for_a_turn_names_that_turn_as_its_source() -> None:
    # "We got a greyhound" said first in turn 0, again in turn 3 beside the
    # answer: the fact's lineage stays turn 0, the hit hands over turn 3.
    first = SourceLineage(topic="dialogue.events", partition=0, offset=0, event_id="e0")
    fact = hit("f1", "pet", "greyhound", lineage=first)
    episodes = [said(0, Role.USER, None, ("f1",)), said(3, Role.USER, None, ("f1",))]
    items = build_items(
        chroma_facts=[(fact, [1.0] * DIM)], episodes=episodes, embed=lambda h: [], dim=DIM
    )
    fact_item, turn_3 = items.index.get("f1"), items.index.get("ep3")
    assert fact_item is not None and turn_3 is not None
    (shown,) = to_hits(items, [Scored(fact_item, 1.0, 1.0, 1.0, 1.0, source=turn_3)])
    assert shown.fact_id == "f1" and shown.lineage == first
    assert shown.source_lineage == episodes[1].episode.lineage
    assert shown.source == episodes[1].episode.document()
    assert shown.source_at == episodes[1].episode.ts


def test_a_turn_that_says_little_ranks_by_less_of_its_cosine() -> None:
    # Embedded as "Lero: obviously", such a turn is mostly its speaker's name.
    episodes = [
        said(2, Role.USER, "Thandi", text="Guess who called"),  # Lero's turns open nothing
        said(3, Role.AGENT, "Lero", text="obviously"),
        said(4, Role.AGENT, "Lero", text="Qatar offered me a purser job, moving to Doha"),
        said(5, Role.USER, "Thandi", text="Thursday."),  # a value
        said(6, Role.USER, "Thandi", text="Karim", context="Who are you seeing?"),  # an answer
        said(7, Role.USER, "Thandi", ("f1",), text="the vegan one"),  # a fact came of it
    ]
    items = build_items(episodes=episodes, embed=lambda hits: [], dim=DIM)
    scales = {i: items.index.get(f"ep{i}").scale for i in range(3, 8)}  # type: ignore[union-attr]
    assert scales == {3: SHORT_TURN_SCALE, 4: 1.0, 5: 1.0, 6: 1.0, 7: 1.0}
    # Its cosine was the best (the name), the turn that answers is found first.
    vectors = {"ep3": [1.0, 0.0, 0.0, 0.0], "ep4": [0.8, 0.6, 0.0, 0.0]}
    assert ranked(items, vectors, "Which airline is Lero flying for?") == ["ep4", "ep3"]


def test_the_agents_turn_that_opens_a_session_ranks_by_less_of_its_cosine() -> None:
    # A greeting that names the business matched every question naming it.
    greeting = "Hello, ClearView Aerials and Satellite, Gary speaking, how can I help?"
    episodes = [
        said(0, Role.AGENT, None, text=greeting),
        said(1, Role.USER, None, text="The dish is pointing at the wrong satellite"),
        said(2, Role.AGENT, None, text="ClearView can send Gary on Thursday 25th"),
    ]
    items = build_items(episodes=episodes, embed=lambda hits: [], dim=DIM)
    scales = {i: items.index.get(f"ep{i}").scale for i in range(3)}  # type: ignore[union-attr]
    assert scales == {0: OPENING_SCALE, 1: 1.0, 2: 1.0}
    vectors = {"ep0": [1.0, 0.0, 0.0, 0.0], "ep2": [0.7, 0.7, 0.0, 0.0]}
    assert ranked(items, vectors, "When is ClearView coming?") == ["ep2", "ep0"]


def ranked(items: UserItems, vectors: dict[str, list[float]], query: str) -> list[str]:
    """The episodes given ``vectors`` ranked for ``query``, whose vector is near the first axis."""
    for episode_id, vector in vectors.items():
        item = items.index.get(episode_id)
        assert item is not None
        items.index.upsert(item, np.asarray(vector, np.float32))
    found = items.index.search(
        query,
        np.asarray([1.0, 0.1, 0.0, 0.0], np.float32),
        at=NOW,
        k=5,
        kinds=frozenset({ItemKind.EPISODE}),
        keep=lambda item: item.item_id in vectors,
    )
    return [s.item.item_id for s in found]
