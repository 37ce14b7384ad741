"""Episodes in Chroma: one collection per tenant beside the tenant's facts.

Kept apart from the fact collections so every fact read (query, chain,
archive, audit) stays as it was; recall reads both. An episode's document is
its search text (the turn it answers, the turn, its facts' statements: the
fact-augmented key) and its vector is MiniLM of that text, computed by the
collection's embedding function on write. Writes are idempotent by episode id;
an outdated mark is a metadata update.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import chromadb
import numpy as np

from pipelines.encode.text import MINILM_DIM
from schemas.episodes import Episode, StoredEpisode

EPISODES_SUFFIX = "-episodes"
# A user's revision is a record of its own in the episode collection: it has no
# "user" key, so user reads never see it. Chroma wants a vector for every
# record; a fixed unit vector (no zero vector under cosine).
_REVISION_PREFIX = "rev\x1f"


def _metadata(episode: Episode, outdated: bool) -> dict[str, Any]:
    return {
        "user": episode.user_id,
        "session": episode.session_id,
        "role": episode.role.value,
        "ts": episode.ts.timestamp(),
        "outdated": outdated,
        # The whole model but its vector (stored as the embedding): read back whole.
        "episode": episode.model_dump_json(exclude={"vector"}),
    }


def upsert_episodes(
    collection: chromadb.Collection,
    episodes: Sequence[Episode],
    embed: Callable[[list[str]], Sequence[Any]],
) -> None:
    """Write episodes (last one wins per id); a stored one keeps its outdated mark.

    An episode without a vector (an old operation, a producer of its own) is
    embedded with ``embed`` from its turn text, as the encode stage would.
    """
    latest = {e.episode_id: e for e in episodes}
    if not latest:
        return
    ids = list(latest)
    found = collection.get(ids=ids, include=["metadatas"])
    outdated = {
        i: bool(m.get("outdated"))
        for i, m in zip(found["ids"], found["metadatas"] or [], strict=True)
    }
    missing = [i for i in ids if not latest[i].vector]
    computed = (
        dict(zip(missing, embed([latest[i].text for i in missing]), strict=True)) if missing else {}
    )
    vectors = [np.asarray(latest[i].vector or computed[i], dtype=np.float32) for i in ids]
    collection.upsert(
        ids=ids,
        embeddings=np.vstack(vectors),
        metadatas=[_metadata(latest[i], outdated.get(i, False)) for i in ids],
        documents=[latest[i].search_text() for i in ids],
    )


def outdate_episodes(collection: chromadb.Collection, episode_ids: Sequence[str]) -> None:
    """Mark stored episodes outdated (ids not stored are skipped: nothing to mark)."""
    wanted = list(dict.fromkeys(episode_ids))
    if not wanted:
        return
    found = collection.get(ids=wanted, include=["metadatas"])
    if found["ids"]:
        metas = [{**m, "outdated": True} for m in found["metadatas"] or []]
        collection.update(ids=found["ids"], metadatas=metas)  # type: ignore[arg-type]


def user_episodes(
    collection: chromadb.Collection, user_id: str, *, with_vectors: bool = True
) -> list[StoredEpisode]:
    """Every episode of ``user_id`` in the collection, oldest first."""
    include: list[Any] = ["metadatas", "embeddings"] if with_vectors else ["metadatas"]
    found = collection.get(where={"user": user_id}, include=include)
    metas = found["metadatas"] or []
    vectors = found.get("embeddings")
    out = []
    for row, meta in enumerate(metas):
        vector = None if vectors is None else [float(x) for x in vectors[row]]
        episode = Episode.model_validate_json(str(meta["episode"]))
        out.append(StoredEpisode(episode, bool(meta.get("outdated")), vector))
    out.sort(key=lambda s: (s.episode.ts, s.episode.episode_id))
    return out


def epoch(value: datetime) -> float:
    """Seconds since the epoch of an aware time (naive times are read as UTC)."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def _revision_id(user_id: str) -> str:
    return _REVISION_PREFIX + user_id


def bump_revisions(collection: chromadb.Collection, user_ids: Sequence[str]) -> None:
    """Give each user a new revision token (after the writes of a batch)."""
    if not user_ids:
        return
    token = uuid.uuid4().hex
    unit = np.zeros((len(user_ids), MINILM_DIM), np.float32)
    unit[:, 0] = 1.0
    collection.upsert(
        ids=[_revision_id(u) for u in user_ids],
        embeddings=unit,
        metadatas=[{"revision_of": u, "revision": token} for u in user_ids],
        documents=["" for _ in user_ids],
    )


def read_revision(collection: chromadb.Collection, user_id: str) -> str | None:
    """The user's revision token, or None before any write."""
    found = collection.get(ids=[_revision_id(user_id)], include=["metadatas"])
    metas = found["metadatas"] or []
    return str(metas[0]["revision"]) if metas else None
