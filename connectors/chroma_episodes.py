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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import chromadb
import numpy as np

from connectors.chroma_reads import get_where
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


class EpisodeChange(NamedTuple):
    """One episode operation of a batch: an upsert (``episode``) or an outdated mark."""

    episode_id: str
    episode: Episode | None = None
    superseded_by: str | None = None  # a mark: the episode holding the newer value


@dataclass
class _Folded:
    """What a batch leaves of one episode, its changes applied in order."""

    episode: Episode | None  # written by the batch; None: only marked
    outdated: bool = False
    marks: list[str] = field(default_factory=list)


def _fold(changes: Sequence[EpisodeChange]) -> dict[str, _Folded]:
    """Each episode's changes in operation order, as one-by-one writes would leave it.

    An upsert rewrites the episode as not outdated (whatever came before it in the
    batch); a later mark outdates what the batch wrote, an earlier one is undone.
    """
    folded: dict[str, _Folded] = {}
    for change in changes:
        if change.episode is not None:
            folded[change.episode_id] = _Folded(change.episode)
            continue
        entry = folded.setdefault(change.episode_id, _Folded(None))
        entry.outdated = True
        if change.superseded_by is not None and change.superseded_by not in entry.marks:
            entry.marks.append(change.superseded_by)
    return folded


class Stored(NamedTuple):
    """An item as a collection holds it."""

    metadata: Mapping[str, Any]
    document: str | None
    embedding: Any  # a float32 numpy row


def stored_items(collection: chromadb.Collection | None, ids: Sequence[str]) -> dict[str, Stored]:
    """The items of ``ids`` the collection holds (none when it does not exist)."""
    if collection is None or not ids:
        return {}
    found = collection.get(ids=list(ids), include=["metadatas", "documents", "embeddings"])
    metas = found["metadatas"] or []
    docs = found["documents"] or []
    vectors = found["embeddings"] if found["embeddings"] is not None else []
    rows = zip(found["ids"], metas, docs, vectors, strict=True)
    return {i: Stored(m, d, e) for i, m, d, e in rows}


def same_vector(stored: Any, vector: Sequence[float] | None) -> bool:
    """Whether writing ``vector`` (None: keep the stored one) leaves the stored vector."""
    # Chroma keeps float32 vectors: 1e-6 is well above their rounding of unit vectors.
    return vector is None or bool(np.allclose(stored, vector, atol=1e-6))


def changed_keys(stored: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata update that turns ``stored`` into ``metadata`` (None removes a key).

    A metadata-only update of the changed keys costs a fraction of an upsert, which
    re-indexes the vector and the document (~10x for an item already stored).
    """
    diff = {key: value for key, value in metadata.items() if stored.get(key) != value}
    diff.update({key: None for key in stored if key not in metadata})
    return diff


def apply_episodes(
    live: chromadb.Collection,
    archive: chromadb.Collection | None,
    changes: Sequence[EpisodeChange],
    embed: Callable[[list[str]], Sequence[Any]],
    now: float,
    revisions: Sequence[str] = (),
) -> None:
    """Apply a batch's episode changes in order: one read and at most two writes a collection.

    An upsert writes the episode whole, last retrieved ``now``; an episode already
    archived is rewritten in the archive, as a fact version is. A mark of an episode
    the batch does not write merges into the stored marks (live and archive); a mark
    of an episode stored nowhere is skipped. What is already stored with the same
    vector and text gets a metadata update of the changed keys only (a replay
    rewrites just ``last_retrieved_at``), everything else one upsert.

    An episode without a vector (an old operation, a producer of its own) is
    embedded with ``embed`` from its turn text, as the encode stage would. A
    rewrite (a redelivered batch, a replay) starts its archive clock again.
    ``revisions`` (user ids) get a new revision token in the batch's last write.
    """
    folded = _fold(changes)
    archived = stored_items(archive, list(folded))
    # A mark reaches both copies of an episode the sweep left in both (a crash
    # between its copy and its delete); a write goes to one place only.
    rest = {i: e for i, e in folded.items() if e.episode is None or i not in archived}
    stored = stored_items(live, [*rest, *(_revision_id(u) for u in revisions)])
    if archive is not None:
        _write(archive, {i: folded[i] for i in archived}, archived, embed, now, ())
    _write(live, rest, stored, embed, now, revisions)


def _write(
    collection: chromadb.Collection,
    folded: Mapping[str, _Folded],
    stored: Mapping[str, Stored],
    embed: Callable[[list[str]], Sequence[Any]],
    now: float,
    revisions: Sequence[str],
) -> None:
    updates: dict[str, dict[str, Any]] = {}
    rewrites: list[tuple[Episode, dict[str, Any], str]] = []
    for episode_id, entry in folded.items():
        old = stored.get(episode_id)
        if entry.episode is None:
            if old is not None:
                known = _outdated_by(old.metadata)
                merged = [*known, *(e for e in entry.marks if e not in known)]
                mark = {"outdated": True, "outdated_by": json.dumps(merged)}
                updates[episode_id] = changed_keys(old.metadata, {**old.metadata, **mark})
            continue
        episode = entry.episode
        meta = _metadata(episode, entry.marks if entry.outdated else None, now)
        document = episode.search_text()
        if (
            old is not None
            and old.document == document
            and same_vector(old.embedding, episode.vector)
        ):
            updates[episode_id] = changed_keys(old.metadata, meta)
        else:
            rewrites.append((episode, meta, document))
    missing = [e.text for e, _, _ in rewrites if not e.vector]
    computed = iter(embed(missing) if missing else [])
    upserts = [
        (e.episode_id, e.vector or next(computed), meta, document) for e, meta, document in rewrites
    ]
    token = uuid.uuid4().hex
    new_revisions = [u for u in revisions if _revision_id(u) not in stored]
    for user_id in revisions:
        if _revision_id(user_id) in stored:
            updates[_revision_id(user_id)] = {"revision": token}
    updates = {i: diff for i, diff in updates.items() if diff}
    # The revisions go last: a reader that sees the new token must see the batch.
    revision_rows = [_revision_row(u, token) for u in new_revisions]
    if updates and revision_rows:
        _upsert(collection, upserts)
        _update(collection, updates)
        _upsert(collection, revision_rows)
    else:
        _upsert(collection, [*upserts, *revision_rows])
        _update(collection, updates)


def _revision_row(user_id: str, token: str) -> tuple[str, Any, dict[str, Any], str]:
    unit = np.zeros(MINILM_DIM, np.float32)
    unit[0] = 1.0
    return _revision_id(user_id), unit, {"revision_of": user_id, "revision": token}, ""


def _upsert(
    collection: chromadb.Collection, rows: Sequence[tuple[str, Any, dict[str, Any], str]]
) -> None:
    if rows:
        collection.upsert(
            ids=[r[0] for r in rows],
            embeddings=np.vstack([np.asarray(r[1], dtype=np.float32) for r in rows]),
            metadatas=[r[2] for r in rows],
            documents=[r[3] for r in rows],
        )


def _update(collection: chromadb.Collection, diffs: Mapping[str, Mapping[str, Any]]) -> None:
    if diffs:
        collection.update(ids=list(diffs), metadatas=list(diffs.values()))


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
    found = get_where(collection, {"user": user_id}, include)
    metas = found["metadatas"]
    vectors = found.get("embeddings")
    out = []
    for row, meta in enumerate(metas):
        vector = None if not vectors else [float(x) for x in vectors[row]]
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
    """Give each user a new revision token (after the writes of a batch).

    A user's revision record is updated in place once it exists: re-upserting it
    would re-index its vector on every batch.
    """
    if user_ids:
        stored = stored_items(collection, [_revision_id(u) for u in user_ids])
        _write(collection, {}, stored, _no_embedding, 0.0, user_ids)


def _no_embedding(texts: list[str]) -> Sequence[Any]:
    raise AssertionError("a revision record needs no embedding")  # pragma: no cover


def read_revision(collection: chromadb.Collection, user_id: str) -> str | None:
    """The user's revision token, or None before any write."""
    found = collection.get(ids=[_revision_id(user_id)], include=["metadatas"])
    metas = found["metadatas"] or []
    return str(metas[0]["revision"]) if metas else None
