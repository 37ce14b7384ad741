"""Episodes in Chroma: one collection per tenant beside the tenant's facts.

Kept apart from the fact collections so every fact read (query, chain,
archive, audit) stays as it was; recall reads both. An episode's document is
its search text (the turn it answers, the turn, its facts' statements: the
fact-augmented key) and its vector is MiniLM of that text, computed by the
collection's embedding function on write. Writes are idempotent by episode id;
an outdated mark is a metadata update.
"""

from __future__ import annotations

import json
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


def _metadata(
    episode: Episode, outdated_by: Sequence[str] | None, last_retrieved_at: float
) -> dict[str, Any]:
    return {
        "user": episode.user_id,
        "session": episode.session_id,
        "role": episode.role.value,
        "ts": episode.ts.timestamp(),
        "outdated": outdated_by is not None,
        "outdated_by": json.dumps(list(outdated_by or [])),
        # As for facts (connectors/chroma_memory.py): what the 30-day archive reads.
        "last_retrieved_at": last_retrieved_at,
        # The whole model but its vector (stored as the embedding): read back whole.
        "episode": episode.model_dump_json(exclude={"vector"}),
    }


def upsert_episodes(
    collection: chromadb.Collection,
    episodes: Sequence[Episode],
    embed: Callable[[list[str]], Sequence[Any]],
    now: float,
) -> None:
    """Write episodes (last one wins per id), not outdated, last retrieved ``now``.

    An episode is written once, at its turn; the turns that outdate it come
    later in the same partition, so a redelivered batch re-applies its
    ``outdate_episode`` operations after it and the mark is never lost: no
    read before the write.

    An episode without a vector (an old operation, a producer of its own) is
    embedded with ``embed`` from its turn text, as the encode stage would. A
    rewrite (a redelivered batch, a replay) starts its archive clock again.
    """
    latest = {e.episode_id: e for e in episodes}
    if not latest:
        return
    ids = list(latest)
    missing = [i for i in ids if not latest[i].vector]
    computed = (
        dict(zip(missing, embed([latest[i].text for i in missing]), strict=True)) if missing else {}
    )
    vectors = [np.asarray(latest[i].vector or computed[i], dtype=np.float32) for i in ids]
    collection.upsert(
        ids=ids,
        embeddings=np.vstack(vectors),
        metadatas=[_metadata(latest[i], None, now) for i in ids],
        documents=[latest[i].search_text() for i in ids],
    )


def outdate_episodes(
    collection: chromadb.Collection, marks: Sequence[tuple[str, str | None]]
) -> None:
    """Mark stored episodes outdated by (episode id, the episode that superseded it).

    Ids not stored are skipped: nothing to mark.
    """
    by: dict[str, list[str]] = {}
    for episode_id, newer in marks:
        by.setdefault(episode_id, [])
        if newer is not None and newer not in by[episode_id]:
            by[episode_id].append(newer)
    if not by:
        return
    found = collection.get(ids=list(by), include=["metadatas"])
    if found["ids"]:
        metas = []
        for episode_id, meta in zip(found["ids"], found["metadatas"] or [], strict=True):
            known = _outdated_by(meta)
            merged = [*known, *(e for e in by[episode_id] if e not in known)]
            metas.append({**meta, "outdated": True, "outdated_by": json.dumps(merged)})
        collection.update(ids=found["ids"], metadatas=metas)  # type: ignore[arg-type]


def stored_ids(collection: chromadb.Collection | None, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` the collection holds (none when it does not exist)."""
    if collection is None or not ids:
        return set()
    return set(collection.get(ids=list(ids), include=[])["ids"])


def touch(collection: chromadb.Collection, ids: Sequence[str], now: float, due: float) -> None:
    """Set ``last_retrieved_at`` to ``now`` on the stored ``ids`` retrieved before ``due``."""
    if not ids:
        return
    found = collection.get(ids=list(ids), include=["metadatas"])
    metas = found["metadatas"] or []
    stale = [
        i
        for i, m in zip(found["ids"], metas, strict=True)
        if float(m.get("last_retrieved_at") or 0.0) < due  # type: ignore[arg-type]
    ]
    if stale:
        collection.update(ids=stale, metadatas=[{"last_retrieved_at": now} for _ in stale])


def _outdated_by(meta: Any) -> list[str]:
    return [str(e) for e in json.loads(str(meta.get("outdated_by") or "[]"))]


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
        outdated = bool(meta.get("outdated"))
        out.append(StoredEpisode(episode, outdated, vector, tuple(_outdated_by(meta))))
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
