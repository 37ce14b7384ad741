"""What recall ranks for one user: every fact version and episode, as index items.

``MemoryService.recall`` reads the tiers, turns what it read into
``pipelines.recall_index`` items with their vectors, and maps the ranked items
back to ``RecallHit``s. The stores stay the source of truth: an index is built
from them (``UserIndex``) and can be rebuilt at any time.

- Chroma facts come with their stored (combined) vector, ~0.8 × the text
  vector (pipelines/encode/combine.py), so their cosine is scaled by 1 / 0.8;
- Neo4j facts that Chroma does not hold and pending items (Redis) get MiniLM of
  their statement (the caller's cache);
- episodes come with the MiniLM vector of their search text; a short turn that
  says little (``says_little``) counts ``SHORT_TURN_SCALE`` of its cosine, the
  agent's turn that opens a session (``session_openings``) ``OPENING_SCALE``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pipelines.encode.combine import W_TEXT
from pipelines.encode.hashing import field_features, hash_feature_lists
from pipelines.episodes import answer_links, session_openings
from pipelines.recall import passes, to_hit
from pipelines.recall_index import (
    OPENING_SCALE,
    SHORT_TURN_SCALE,
    IndexItem,
    ItemKind,
    Scored,
    UserIndex,
    says_little,
    terms,
)
from schemas.episodes import Episode, StoredEpisode
from schemas.events import Role
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, MemoryState, Polarity, Tier
from schemas.query import RecallFilters, RecallHit, ScoreBreakdown

# The statement-vector function of the caller (MiniLM, cached by fact id).
Embed = Callable[[Sequence[SearchHit]], list[np.ndarray]]


@dataclass
class UserItems:
    """One user's index and what each of its items is, to build the hits from.

    ``revision`` is the episodic store's token for the user when the index was
    read (``ChromaMemory.revision``): a cached index is current while it matches.
    """

    index: UserIndex
    facts: dict[str, tuple[SearchHit, MemoryState]] = field(default_factory=dict)
    episodes: dict[str, StoredEpisode] = field(default_factory=dict)
    revision: str | None = None
    own_name: frozenset[str] = frozenset()  # the terms of the name the user goes by


def _exact_keys(hit: SearchHit) -> frozenset[int]:
    (keys,) = hash_feature_lists([field_features({"object": hit.object})])
    return frozenset(keys)


def _fact_item(hit: SearchHit, *, pending: bool, scale: float, source: str | None) -> IndexItem:
    return IndexItem(
        item_id=hit.fact_id,
        kind=ItemKind.FACT,
        text=f"{hit.statement()} {hit.predicate.replace('_', ' ')} {hit.object}",
        at=hit.valid_from,
        valid_until=hit.valid_until,
        expires_at=hit.expires_at,
        pending=pending,
        source_id=source,
        session_id=hit.session_id,
        exact_keys=_exact_keys(hit),
        scale=scale,
    )


def build_items(
    *,
    chroma_facts: Sequence[tuple[SearchHit, Sequence[float]]] = (),
    semantic_facts: Sequence[SearchHit] = (),
    pending: Sequence[SearchHit] = (),
    episodes: Sequence[StoredEpisode] = (),
    embed: Embed,
    dim: int = 384,
    revision: str | None = None,
) -> UserItems:
    """One index over everything the tiers returned (filters apply at search: ``keep_for``)."""
    items = UserItems(UserIndex(dim), revision=revision)
    source_of = {
        fact_id: stored.episode.episode_id
        for stored in episodes
        for fact_id in stored.episode.fact_ids
    }
    answered_by = answer_links(stored.episode for stored in episodes)
    openings = session_openings(stored.episode for stored in episodes)
    for stored in episodes:
        episode = stored.episode
        if stored.vector is None or len(stored.vector) != dim:
            continue
        item = IndexItem(
            item_id=episode.episode_id,
            kind=ItemKind.EPISODE,
            text=episode.search_text(),
            at=episode.ts,
            outdated=stored.outdated,
            outdated_by=frozenset(stored.outdated_by),
            session_id=episode.session_id,
            answered_by=answered_by.get(episode.episode_id),
            scale=_episode_scale(episode, opens=episode.episode_id in openings),
        )
        items.index.upsert(item, np.asarray(stored.vector, dtype=np.float32))
        items.episodes[episode.episode_id] = stored
    unembedded: list[tuple[SearchHit, MemoryState]] = []
    for hit, stored_vector in chroma_facts:
        if len(stored_vector) != dim:  # stored without a vector of the query's space
            unembedded.append((hit, MemoryState.COMMITTED))
            continue
        item = _fact_item(hit, pending=False, scale=1.0 / W_TEXT, source=source_of.get(hit.fact_id))
        items.index.upsert(item, np.asarray(stored_vector, dtype=np.float32))
        items.facts[hit.fact_id] = (hit, MemoryState.COMMITTED)
    others = [*unembedded, *((h, MemoryState.COMMITTED) for h in semantic_facts)]
    others += [(h, MemoryState.PENDING) for h in pending]
    todo = list({h.fact_id: (h, st) for h, st in others if h.fact_id not in items.facts}.values())
    for (hit, state), vector in zip(todo, embed([h for h, _ in todo]), strict=True):
        pending_item = state is MemoryState.PENDING
        item = _fact_item(hit, pending=pending_item, scale=1.0, source=source_of.get(hit.fact_id))
        items.index.upsert(item, vector)
        items.facts[hit.fact_id] = (hit, state)
    stated = [
        hit.object
        for hit, state in items.facts.values()
        if hit.predicate == "name"
        and hit.polarity is Polarity.AFFIRMED
        and state is MemoryState.COMMITTED
        and hit.valid_until is None
    ]
    items.own_name = frozenset(
        term for name in [*stated, *_called(episodes)] for term in terms(name)
    )
    return items


def _episode_scale(episode: Episode, *, opens: bool) -> float:
    """A short turn that answers nothing and gave no fact, and a session's opening, rank lower.

    They rank by less of their cosine (``SHORT_TURN_SCALE``, ``OPENING_SCALE``).
    """
    scale = OPENING_SCALE if opens else 1.0
    if episode.context or episode.fact_ids or not says_little(episode.text):
        return scale
    return scale * SHORT_TURN_SCALE


def _called(episodes: Sequence[StoredEpisode]) -> list[str]:
    """The name the user's own turns are keyed with most often (pipelines/speakers.py)."""
    heard = Counter(
        stored.episode.speaker
        for stored in episodes
        if stored.episode.role is Role.USER and stored.episode.speaker
    )
    return [heard.most_common(1)[0][0]] if heard else []


def keep_for(items: UserItems, filters: RecallFilters | None) -> Callable[[IndexItem], bool] | None:
    """The filter of a recall over ``items``' index (None: keep everything).

    Tags and kinds are about facts, so with either set no episode passes; an
    episode's time is its turn's.
    """
    if filters is None:
        return None
    fact_only = bool(filters.tags) or filters.kinds is not None

    def keep(item: IndexItem) -> bool:
        if item.kind is ItemKind.FACT:
            return passes(items.facts[item.item_id][0], filters)
        if fact_only:
            return False
        if filters.session_id is not None and item.session_id != filters.session_id:
            return False
        if filters.since is not None and item.at < filters.since:
            return False
        return filters.until is None or item.at < filters.until

    return keep


def episode_hit(stored: StoredEpisode, score: ScoreBreakdown | None) -> RecallHit:
    """An episode as a recall hit: what was said, by whom, with its lineage."""
    episode = stored.episode
    return RecallHit(
        hit_kind="episode",
        fact_id=episode.episode_id,
        chain_id=episode.episode_id,
        statement=episode.document(),
        subject=episode.role.value,
        predicate="said",
        object=episode.text,
        polarity=Polarity.AFFIRMED,
        kind=MemoryKind.FACT,
        tier=Tier.EPISODIC,
        score=score,
        version=1,
        valid_from=episode.ts,
        session_id=episode.session_id,
        lineage=episode.lineage,
        outdated=stored.outdated,
    )


def to_hits(items: UserItems, ranked: Sequence[Scored]) -> list[RecallHit]:
    """The ranked items as recall hits, facts carrying their source turn."""
    hits = []
    for scored in ranked:
        score = ScoreBreakdown(
            vector=scored.vector, keyword=scored.keyword, time=scored.time, total=scored.total
        )
        if scored.item.kind is ItemKind.EPISODE:
            hits.append(episode_hit(items.episodes[scored.item.item_id], score))
            continue
        fact, state = items.facts[scored.item.item_id]
        hit = to_hit(fact, score=score, state=state)
        source = items.episodes.get(scored.source.item_id) if scored.source else None
        if source is not None:
            said = {
                "source": source.episode.document(),
                "source_lineage": source.episode.lineage,
                "source_at": source.episode.ts,
            }
            hit = hit.model_copy(update=said)
        hits.append(hit)
    return hits
