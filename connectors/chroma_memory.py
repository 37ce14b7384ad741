"""Episodic memory in Chroma: one collection per tenant, one item per fact version.

Item id = ``fact_id``; the vector is the record's ``encoding.combined`` (computed by
the encode stage), or, when a record carries none, MiniLM on its text through the
offline embedding function. Metadata holds what reads filter on as keys of their
own (user, session, intent, polarity, kind, state, subject, predicate, and the
times as epoch floats, so ``$lt``/``$gt`` filters work) and everything else (the
statement, tenant, chain, object, version, lineage, ...) as one JSON key,
:data:`PACKED_KEY`: each key is a row in Chroma's SQLite, so fewer keys write
faster, and an item has no document (only one without a vector, which Chroma
embeds from it). An open end
(``valid_until``/``expires_at`` not set) is stored as :data:`OPEN_ENDED`, because
a Chroma filter cannot test for a missing key.

Idempotency: an upsert of a version already stored keeps its ``last_retrieved_at``
and never re-opens a closed version (``valid_until`` only ever goes from open to a
time); a version already moved to the archive collection is updated there, not
brought back. Applying a batch twice therefore leaves both collections unchanged.

A version stored exactly as it would be written is skipped, so a replay costs one
read and no index update; one stored with the same vector and text (a close, a
state change) gets a metadata update of the changed keys only.

A chunk is applied as its operations one by one would leave it, in a few calls:
per tenant, one read of the versions it writes and one write per kind (upsert,
update) per collection, its episodes likewise (connectors/chroma_episodes.py);
an erasure splits the chunk, so what comes after it is written after it.

Archive: :meth:`ChromaMemory.archive_stale` (one tenant) and
:meth:`ChromaMemory.archive_all_stale` (every tenant of the namespace) move the
items — fact versions and turns (connectors/chroma_episodes.py) alike — whose
``last_retrieved_at`` is older than 30 days into ``…-archive`` (upsert there, then
delete here). Retrieval sets ``last_retrieved_at``: :meth:`ChromaMemory.query`
itself, and :meth:`ChromaMemory.mark_retrieved` for what recall served from its
cached index — only when the stored time is older than
:data:`RETRIEVAL_RESOLUTION`, so a user's repeated queries cost no index update.

Reads never create a collection: a tenant with no collection (e.g. a guessed id)
reads as empty and leaves no trace in the store.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import chromadb
from chromadb.api.types import PyEmbedding, Where
from chromadb.config import Settings
from chromadb.errors import ChromaError, NotFoundError

from connectors.chroma_episodes import (
    EPISODES_SUFFIX,
    EpisodeChange,
    Stored,
    apply_episodes,
    bump_revisions,
    changed_keys,
    read_revision,
    same_vector,
    stored_items,
    touch,
    user_episodes,
)
from connectors.chroma_reads import get_where, in_pages
from connectors.embedding import MiniLMEmbeddingFunction
from connectors.protocols import DEFAULT_CHUNK_SIZE, DEFAULT_LATENCY_BUDGET_S, BatchingSink
from connectors.redis_memory import ErasureAudit
from schemas.episodes import StoredEpisode
from schemas.hits import SearchHit
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType

# 9999-12-31T23:59:59Z: "no end" for valid_until / expires_at (see module docstring).
OPEN_ENDED = 253402300799.0
# docs/architecture.md, Tiers: "items not retrieved for 30 days are archived, not lost".
ARCHIVE_AFTER = timedelta(days=30)
# ``last_retrieved_at`` is rewritten only when older than this. The archive rule
# works in 30-day units, so day resolution delays an archive by at most a day
# (1/30 of the window) and spares an index update on every repeated query.
RETRIEVAL_RESOLUTION = timedelta(days=1)
# Metadata keys a caller may filter on through ``tags`` (equality only).
TAG_KEYS = frozenset({"intent", "kind", "polarity", "predicate", "subject", "state"})
# The metadata key holding, as JSON, the fields no read filters on (see _metadata).
PACKED_KEY = "fact"

Metadata = dict[str, str | int | float | bool]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _epoch(value: datetime | None) -> float:
    return OPEN_ENDED if value is None else value.timestamp()


def _from_epoch(value: Any) -> datetime | None:
    return (
        None if value is None or float(value) >= OPEN_ENDED else datetime.fromtimestamp(value, UTC)
    )


def collection_name(tenant_id: str, namespace: str | None = None, *, archive: bool = False) -> str:
    """A valid Chroma collection name for a tenant (and namespace), distinct per raw id.

    Chroma allows ``[a-zA-Z0-9._-]``, 3-512 characters, alphanumeric at both ends
    and no ``..``; characters outside that become ``-`` and a short hash of the raw
    ids keeps two tenants that sanitise alike (``a@b`` / ``a-b``) apart.
    """
    raw = f"{namespace or ''}\x1f{tenant_id}"
    digest = hashlib.blake2b(raw.encode("utf-8"), digest_size=6).hexdigest()
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", "-".join(p for p in (namespace, tenant_id) if p))
    return f"ms-{safe}-{digest}" + ("-archive" if archive else "")


def _metadata(record: MemoryRecord, last_retrieved_at: float) -> Metadata:
    """The item's metadata: the keys reads filter on, and the rest as one JSON key.

    Embedded Chroma stores one SQLite row per metadata key, with its indexes:
    adding items with one key per field (27) cost ~1.08 ms an item, with these 12
    ~0.89 ms, and with 2 keys ~0.62 ms (chunks of 256, interleaved in one run at
    load 4.4). Only what a ``where`` names (user, session, the tags, the times)
    needs a key of its own.
    """
    meta: Metadata = {
        "user": record.user_id,
        "subject": record.subject,
        "predicate": record.predicate,
        "polarity": record.polarity.value,
        "kind": record.kind.value,
        "state": record.state.value,
        "valid_from": record.valid_from.timestamp(),
        "valid_until": _epoch(record.valid_until),
        "expires_at": _epoch(record.expires_at),
        "last_retrieved_at": last_retrieved_at,
    }
    optional = {"session": record.session_id, "intent": record.intent}
    meta.update({key: value for key, value in optional.items() if value is not None})
    rest = {
        "text": record.statement(),
        "tenant": record.tenant_id,
        "chain_id": record.chain_id,
        "object": record.object,
        "confidence": record.confidence,
        "version": record.version,
        "recorded_at": record.recorded_at.timestamp(),
        "supersedes": record.supersedes,
        "lineage_topic": record.lineage.topic,
        "lineage_partition": record.lineage.partition,
        "lineage_offset": record.lineage.offset,
        "lineage_event_id": record.lineage.event_id,
        "lineage_turn_id": record.lineage.turn_id,
        "lineage_reviewer_id": record.lineage.reviewer_id,
    }
    # Compact and in a fixed order: a rewrite of the same version compares equal
    # (changed_keys) and costs no update.
    meta[PACKED_KEY] = json.dumps(
        {key: value for key, value in rest.items() if value is not None},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return meta


def _fields(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """Every field of a stored item, whichever layout wrote it.

    Items written before the packed layout hold one key per field (and no
    ``PACKED_KEY``); they read the same, and a rewrite moves them to the new one.
    """
    packed = meta.get(PACKED_KEY)
    return {**json.loads(str(packed)), **meta} if packed is not None else meta


def _hit(
    fact_id: str, stored: Mapping[str, Any], document: str | None, score: float | None
) -> SearchHit:
    meta = _fields(stored)
    valid_from = _from_epoch(meta["valid_from"])
    assert valid_from is not None  # noqa: S101 - valid_from is always a finite time
    return SearchHit.model_validate(
        {
            "tier": Tier.EPISODIC,
            "fact_id": fact_id,
            "chain_id": meta["chain_id"],
            "tenant_id": meta["tenant"],
            "user_id": meta["user"],
            "session_id": meta.get("session"),
            "subject": meta["subject"],
            "predicate": meta["predicate"],
            "object": meta["object"],
            "polarity": meta["polarity"],
            "kind": meta["kind"],
            "text": meta.get("text", document or ""),
            "version": meta["version"],
            "valid_from": valid_from,
            "valid_until": _from_epoch(meta["valid_until"]),
            "expires_at": _from_epoch(meta["expires_at"]),
            "supersedes": meta.get("supersedes"),
            "lineage": {
                "topic": meta["lineage_topic"],
                "partition": meta["lineage_partition"],
                "offset": meta["lineage_offset"],
                "event_id": meta["lineage_event_id"],
                "turn_id": meta.get("lineage_turn_id"),
                "reviewer_id": meta.get("lineage_reviewer_id"),
            },
            "score": score,
            "extra": {"last_retrieved_at": meta["last_retrieved_at"]},
        }
    )


def _vector(values: Sequence[float]) -> PyEmbedding:
    return list(values)


def _compare(key: str, operator: str, value: float) -> Where:
    """``{key: {operator: value}}`` (chromadb's Where type is too narrow for mypy here)."""
    return cast(Where, {key: {operator: value}})


def _current_at(at: datetime | None) -> list[Where]:
    """The clauses keeping only versions current at ``at`` (none when ``at`` is None)."""
    if at is None:
        return []
    stamp = at.timestamp()
    return [
        _compare("valid_from", "$lte", stamp),
        _compare("valid_until", "$gt", stamp),
        _compare("expires_at", "$gt", stamp),
    ]


def _where(clauses: list[Where]) -> Where:
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaMemory(BatchingSink):
    """Writer and reader of the episodic tier."""

    tier = Tier.EPISODIC
    store_name = "chroma"

    def __init__(
        self,
        client: chromadb.ClientAPI,
        *,
        namespace: str | None = None,
        embedding_function: MiniLMEmbeddingFunction | None = None,
        clock: Callable[[], datetime] = _utcnow,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        latency_budget_s: float = DEFAULT_LATENCY_BUDGET_S,
        erasure_audit: ErasureAudit | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size, latency_budget_s=latency_budget_s)
        self.client = client
        self.namespace = namespace
        self.erasure_audit = erasure_audit
        self.embedding_function = embedding_function or MiniLMEmbeddingFunction()
        self.clock = clock
        self._collections: dict[tuple[str, bool], chromadb.Collection] = {}

    @classmethod
    def open(cls, path: str | Path, **kwargs: Any) -> ChromaMemory:
        """An embedded (on-disk) Chroma at ``path``, telemetry off."""
        client = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        return cls(client, **kwargs)

    def ping(self) -> None:
        """Raise unless Chroma answers now (a readiness probe; the server's heartbeat)."""
        self.client.heartbeat()

    def collection(self, tenant_id: str, *, archive: bool = False) -> chromadb.Collection:
        """The tenant's live (or archive) collection, created on first use.

        Handles are cached: opening a collection costs more than a small upsert.
        """
        key = (tenant_id, archive)
        if key not in self._collections:
            self._collections[key] = self.client.get_or_create_collection(
                collection_name(tenant_id, self.namespace, archive=archive),
                configuration={"hnsw": {"space": "cosine"}},
                # Names are hashed; the metadata says whose collection it is.
                metadata={
                    "memstream_tenant": tenant_id,
                    "memstream_namespace": self.namespace or "",
                    "memstream_archive": archive,
                },
                # chromadb types this as EmbeddingFunction[Embeddable] (invariant); ours
                # embeds Documents, which is all a text collection needs.
                embedding_function=self.embedding_function,  # type: ignore[arg-type]
            )
        return self._collections[key]

    def _existing(self, tenant_id: str, *, archive: bool = False) -> chromadb.Collection | None:
        """The tenant's live (or archive) collection if it exists; never creates one."""
        key = (tenant_id, archive)
        if key not in self._collections:
            try:
                self._collections[key] = self.client.get_collection(
                    collection_name(tenant_id, self.namespace, archive=archive),
                    embedding_function=self.embedding_function,  # type: ignore[arg-type]
                )
            except NotFoundError:
                return None
        return self._collections[key]

    def setup(self) -> None:
        """Check the store answers; collections are created per tenant on first write."""
        self.client.heartbeat()

    def _is_transient(self, error: Exception) -> bool:
        # An embedded Chroma fails with ChromaError subclasses (e.g. a locked or
        # full store); an HTTP client adds connection errors.
        return isinstance(error, ChromaError | ConnectionError | TimeoutError)

    def episodes(self, tenant_id: str, *, archive: bool = False) -> chromadb.Collection:
        """The tenant's episode collection (connectors/chroma_episodes.py), created on first use."""
        key = (tenant_id + EPISODES_SUFFIX, archive)
        if key not in self._collections:
            self._collections[key] = self.client.get_or_create_collection(
                _episodes_name(tenant_id, self.namespace, archive),
                configuration={"hnsw": {"space": "cosine"}},
                metadata={
                    "memstream_tenant": tenant_id,
                    "memstream_namespace": self.namespace or "",
                    "memstream_archive": archive,
                    "memstream_kind": "episodes",
                },
                embedding_function=self.embedding_function,  # type: ignore[arg-type]
            )
        return self._collections[key]

    def _existing_episodes(
        self, tenant_id: str, *, archive: bool = False
    ) -> chromadb.Collection | None:
        """The tenant's live (or archived) episode collection if it exists; never creates one."""
        key = (tenant_id + EPISODES_SUFFIX, archive)
        if key not in self._collections:
            try:
                self._collections[key] = self.client.get_collection(
                    _episodes_name(tenant_id, self.namespace, archive),
                    embedding_function=self.embedding_function,  # type: ignore[arg-type]
                )
            except NotFoundError:
                return None
        return self._collections[key]

    def user_episodes(self, tenant_id: str, user_id: str) -> list[StoredEpisode]:
        """Every episode of the user, oldest first, with its MiniLM vector."""
        return user_episodes(self.episodes(tenant_id), user_id)

    def user_facts(self, tenant_id: str, user_id: str) -> list[tuple[SearchHit, list[float]]]:
        """Every live fact version of the user with its stored vector (all of them, no ranking)."""
        live = self._existing(tenant_id)
        if live is None:
            return []
        found = get_where(live, {"user": user_id}, ["metadatas", "documents", "embeddings"])
        metas, docs, vectors = found["metadatas"], found["documents"], found["embeddings"]
        return [
            (_hit(i, m, d, None), [float(x) for x in vectors[row]] if vectors else [])
            for row, (i, m, d) in enumerate(zip(found["ids"], metas, docs, strict=True))
        ]

    def _apply_episodes(
        self, ops: Sequence[MemoryOperation], revisions: Mapping[str, Sequence[str]]
    ) -> set[str]:
        """Apply episode operations in order; the tenants whose ``revisions`` were written."""
        by_tenant: dict[str, list[EpisodeChange]] = {}
        for op in ops:
            changes = by_tenant.setdefault(op.tenant_id, [])
            if op.op_type is OpType.UPSERT_EPISODE and op.episode is not None:
                changes.append(EpisodeChange(op.episode.episode_id, episode=op.episode))
            elif op.op_type is OpType.OUTDATE_EPISODE and op.target_fact_id:
                changes.append(EpisodeChange(op.target_fact_id, superseded_by=op.superseded_by))
        now = self.clock().timestamp()
        for tenant_id, changes in by_tenant.items():
            apply_episodes(
                self.episodes(tenant_id),
                self._existing_episodes(tenant_id, archive=True),
                changes,
                self.embedding_function,
                now,
                revisions.get(tenant_id, ()),
            )
        return {tenant_id for tenant_id in by_tenant if tenant_id in revisions}

    def revision(self, tenant_id: str, user_id: str) -> str | None:
        """A token that changes whenever the user's facts or episodes here change.

        Readers that keep the user's items in memory (recall's index) compare
        it before each read; the writer sets it after each batch it applied.
        """
        return read_revision(self.episodes(tenant_id), user_id)

    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        """One chunk: per tenant one read and one write per collection, split by erasures.

        Operations are folded in order (last writer wins per id, a close is never
        undone, a mark after an episode's upsert outdates it), so the chunk leaves
        what applying its operations one by one would. The touched users' new
        revisions go with the chunk's last episode write, after every other change.
        """
        touched: dict[str, set[str]] = {}
        for op in ops:
            if op.op_type in _REVISED_BY:
                touched.setdefault(op.tenant_id, set()).add(op.user_id)
        revisions = {tenant_id: sorted(users) for tenant_id, users in touched.items()}
        facts: dict[tuple[str, str], MemoryRecord] = {}
        episodes: list[MemoryOperation] = []
        for op in ops:
            if op.op_type is OpType.ERASE_USER:
                self._write_facts(facts)
                self._apply_episodes(episodes, {})
                facts, episodes = {}, []
                removed = self._erase_user(op.tenant_id, op.user_id)
                if self.erasure_audit is not None:
                    self.erasure_audit.record(op, self.store_name, removed)
            elif op.op_type in (OpType.UPSERT_FACT, OpType.CLOSE_FACT) and op.record:
                key = (op.tenant_id, op.record.fact_id)
                facts[key] = _merge(facts.get(key), op.record)
            elif op.op_type in (OpType.UPSERT_EPISODE, OpType.OUTDATE_EPISODE):
                episodes.append(op)
            # Pending items, turns and statuses live in Redis only.
        self._write_facts(facts)
        written = self._apply_episodes(episodes, revisions)
        for tenant_id, users in revisions.items():
            if tenant_id not in written:
                bump_revisions(self.episodes(tenant_id), users)

    def _write_facts(self, facts: Mapping[tuple[str, str], MemoryRecord]) -> None:
        by_tenant: dict[str, list[MemoryRecord]] = {}
        for (tenant_id, _), record in facts.items():
            by_tenant.setdefault(tenant_id, []).append(record)
        for tenant_id, records in by_tenant.items():
            live = self.collection(tenant_id)
            archive = self.collection(tenant_id, archive=True)
            ids = [r.fact_id for r in records]
            in_live = stored_items(live, ids)
            in_archive = stored_items(archive, [i for i in ids if i not in in_live])
            now = self.clock().timestamp()
            # A version already archived stays archived; everything else is live.
            _upsert(archive, [r for r in records if r.fact_id in in_archive], in_archive, now)
            _upsert(live, [r for r in records if r.fact_id not in in_archive], in_live, now)

    def _erase_user(self, tenant_id: str, user_id: str) -> int:
        """Delete the user's items (facts live and archived, episodes); how many there were."""
        removed = 0
        found_in = [
            self._existing(tenant_id, archive=False),
            self._existing(tenant_id, archive=True),
        ]
        episodes = [self.episodes(tenant_id), self._existing_episodes(tenant_id, archive=True)]
        for found in [*found_in, *episodes]:
            if found is not None:
                ids = get_where(found, {"user": user_id}, [])["ids"]
                for page in in_pages(ids):
                    found.delete(ids=list(page))
                removed += len(ids)
        return removed

    def query(
        self,
        tenant_id: str,
        user_id: str,
        *,
        embedding: Sequence[float] | None = None,
        text: str | None = None,
        k: int = 10,
        at: datetime | None = None,
        session_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest versions of a user's facts; marks them retrieved now.

        ``at`` keeps only the versions current at that time; ``tags`` are equality
        filters on the metadata keys in :data:`TAG_KEYS`. No tenant clause: the
        collection is the tenant's own (the clause cost ~30 % of a query at 10k items).
        """
        if (embedding is None) == (text is None):
            raise ValueError("pass exactly one of embedding or text")
        unknown = set(tags or {}) - TAG_KEYS
        if unknown:
            raise ValueError(f"cannot filter on {sorted(unknown)}; allowed: {sorted(TAG_KEYS)}")
        live = self._existing(tenant_id)
        if live is None:
            return []
        clauses: list[Where] = [{"user": user_id}, *_current_at(at)]
        if session_id is not None:
            clauses.append({"session": session_id})
        clauses += [{key: value} for key, value in (tags or {}).items()]
        result = live.query(
            query_embeddings=[_vector(embedding)] if embedding is not None else None,
            query_texts=[text] if text is not None else None,
            n_results=k,
            where=_where(clauses),
            include=["metadatas", "documents", "distances"],
        )
        ids = result["ids"][0]
        metas = (result["metadatas"] or [[]])[0]
        docs = (result["documents"] or [[]])[0]
        distances = (result["distances"] or [[]])[0]
        # Retrieval is what keeps an item out of the archive; a time within
        # RETRIEVAL_RESOLUTION is recent enough to keep.
        now = self.clock()
        due = (now - RETRIEVAL_RESOLUTION).timestamp()
        stale = [
            i for i, m in zip(ids, metas, strict=True) if cast(float, m["last_retrieved_at"]) < due
        ]
        if stale:
            stamp = now.timestamp()
            live.update(ids=stale, metadatas=[{"last_retrieved_at": stamp} for _ in stale])
        return [
            _hit(i, m, d, 1.0 - dist)
            for i, m, d, dist in zip(ids, metas, docs, distances, strict=True)
        ]

    def get(
        self,
        tenant_id: str,
        user_id: str,
        *,
        archived: bool = False,
        at: datetime | None = None,
    ) -> list[SearchHit]:
        """A user's stored versions (no similarity, not marked retrieved).

        ``at`` keeps only the versions current at that time (a snapshot's read).
        """
        hits = self._get(tenant_id, [{"user": user_id}, *_current_at(at)], archived=archived)
        return sorted(hits, key=lambda h: (h.chain_id, h.version, h.fact_id))

    def chain(self, tenant_id: str, user_id: str, subject: str, predicate: str) -> list[SearchHit]:
        """Every version of one (subject, predicate), live and archived, oldest first.

        Matched by subject and predicate (case-insensitive, as chain ids are),
        not by chain_id: a multi-valued predicate ("likes") keeps one chain per
        object, and its history is all of them. Chroma filters are exact, so
        the match runs here over the user's items (bounded by the review
        state's caps).
        """
        key = (subject.casefold(), predicate.casefold())
        where: list[Where] = [{"user": user_id}]
        hits = [
            h
            for archived in (False, True)
            for h in self._get(tenant_id, where, archived)
            if (h.subject.casefold(), h.predicate.casefold()) == key
        ]
        return sorted(hits, key=lambda h: (h.version, h.valid_from, h.fact_id))

    def _get(self, tenant_id: str, where: list[Where], archived: bool) -> list[SearchHit]:
        found_in = self._existing(tenant_id, archive=archived)
        if found_in is None:
            return []
        found = get_where(found_in, _where(where), ["metadatas", "documents"])
        metas, docs = found["metadatas"], found["documents"]
        return [_hit(i, m, d, None) for i, m, d in zip(found["ids"], metas, docs, strict=True)]

    def archive_stale(self, tenant_id: str, *, max_idle: timedelta = ARCHIVE_AFTER) -> int:
        """Move facts and episodes not retrieved for ``max_idle`` to the archive; how many."""
        cutoff = (self.clock() - max_idle).timestamp()
        moved = 0
        for live, archive in (
            (self._existing(tenant_id), lambda: self.collection(tenant_id, archive=True)),
            (
                self._existing_episodes(tenant_id),
                lambda: self.episodes(tenant_id, archive=True),
            ),
        ):
            if live is not None:
                moved += _move_stale(live, archive, cutoff)
        return moved

    def count_stale(self, tenant_id: str, *, max_idle: timedelta = ARCHIVE_AFTER) -> int:
        """How many items :meth:`archive_stale` would move now; moves nothing (a dry run)."""
        cutoff = (self.clock() - max_idle).timestamp()
        where = _where([_compare("last_retrieved_at", "$lt", cutoff)])
        live = [self._existing(tenant_id), self._existing_episodes(tenant_id)]
        return sum(len(get_where(c, where, [])["ids"]) for c in live if c is not None)

    def mark_retrieved(
        self, tenant_id: str, fact_ids: Sequence[str], episode_ids: Sequence[str]
    ) -> None:
        """Recall served these: their archive clock starts again (at most once a day each)."""
        now = self.clock()
        due = (now - RETRIEVAL_RESOLUTION).timestamp()
        facts, episodes = self._existing(tenant_id), self._existing_episodes(tenant_id)
        if facts is not None:
            touch(facts, fact_ids, now.timestamp(), due)
        if episodes is not None:
            touch(episodes, episode_ids, now.timestamp(), due)

    def tenants(self) -> list[str]:
        """Every tenant with a collection in this namespace, sorted (what the archive sweeps)."""
        found = {
            str(meta["memstream_tenant"])
            for meta in (c.metadata or {} for c in self.client.list_collections())
            if meta.get("memstream_namespace") == (self.namespace or "")
            and "memstream_tenant" in meta
        }
        return sorted(found)

    def archive_all_stale(self, *, max_idle: timedelta = ARCHIVE_AFTER) -> dict[str, int]:
        """:meth:`archive_stale` for every tenant of this namespace; moved count per tenant."""
        moved: dict[str, int] = {}
        for collection in self.client.list_collections():
            meta = collection.metadata or {}
            mine = meta.get("memstream_namespace") == (self.namespace or "")
            # A tenant's episodes move with its facts (archive_stale sweeps both).
            episodic = meta.get("memstream_kind") == "episodes"
            if mine and meta.get("memstream_archive") is False and not episodic:
                tenant_id = str(meta["memstream_tenant"])
                moved[tenant_id] = self.archive_stale(tenant_id, max_idle=max_idle)
        return moved


def _episodes_name(tenant_id: str, namespace: str | None, archive: bool) -> str:
    return collection_name(tenant_id, namespace) + EPISODES_SUFFIX + ("-archive" if archive else "")


def _move_stale(
    live: chromadb.Collection, archive: Callable[[], chromadb.Collection], cutoff: float
) -> int:
    """Move the items of ``live`` last retrieved before ``cutoff`` into the archive."""
    stale = get_where(
        live,
        _where([_compare("last_retrieved_at", "$lt", cutoff)]),
        ["embeddings", "metadatas", "documents"],
    )
    if not stale["ids"]:
        return 0
    # Copy first, then delete: a crash in between leaves a duplicate that the
    # next run resolves, never a loss.
    target = archive()
    fields = ("ids", "embeddings", "metadatas", "documents")
    for ids, embeddings, metadatas, documents in zip(
        *(in_pages(stale[name]) for name in fields), strict=True
    ):
        target.upsert(
            ids=list(ids),
            embeddings=list(embeddings),
            metadatas=list(metadatas),
            documents=list(documents),
        )
    for ids in in_pages(stale["ids"]):
        live.delete(ids=list(ids))
    return len(stale["ids"])


# The operations that change what ``revision`` guards.
_REVISED_BY = frozenset(
    {
        OpType.UPSERT_FACT,
        OpType.CLOSE_FACT,
        OpType.UPSERT_EPISODE,
        OpType.OUTDATE_EPISODE,
        OpType.ERASE_USER,
    }
)


def _merge(earlier: MemoryRecord | None, later: MemoryRecord) -> MemoryRecord:
    """Two writes of one version in a chunk: the later wins, a close is never undone."""
    if earlier is None:
        return later
    update: dict[str, Any] = {}
    if later.valid_until is None and earlier.valid_until is not None:
        update["valid_until"] = earlier.valid_until
    if not (later.encoding and later.encoding.combined) and earlier.encoding:
        update["encoding"] = earlier.encoding
    return later.model_copy(update=update)


def _upsert(
    collection: chromadb.Collection,
    records: Sequence[MemoryRecord],
    stored: Mapping[str, Stored],
    now: float,
) -> None:
    """Write versions, keeping stored retrieval times, closes and vectors.

    A version stored exactly as it would be written (a replay) is skipped; one
    stored with the same vector (a close, a state change, a new text) gets a
    metadata update of the changed keys only, far cheaper than an upsert, which
    re-indexes the vector. The statement travels in the packed metadata, not as
    a Chroma document: nothing searches the documents' full-text index, and
    writing it cost ~15 % of an item (interleaved, load 6: 0.97 against 0.83 ms).
    A version without a vector is the exception: Chroma embeds it from its
    document. Items written with a document keep it; reads prefer the packed text.
    """
    with_vector: list[tuple[MemoryRecord, Metadata]] = []
    inserts: list[tuple[MemoryRecord, Metadata]] = []
    updates: dict[str, dict[str, Any]] = {}
    for record in records:
        old = stored.get(record.fact_id)
        meta = _metadata(record, float(old.metadata["last_retrieved_at"]) if old else now)
        if old is not None and meta["valid_until"] == OPEN_ENDED:
            meta["valid_until"] = old.metadata["valid_until"]
        vector = record.encoding.combined if record.encoding and record.encoding.combined else None
        if old is None:
            # Without a vector, a new item is embedded from its text.
            (with_vector if vector else inserts).append((record, meta))
        elif not same_vector(old.embedding, vector):
            with_vector.append((record, meta))
        # A stored item without a new vector keeps its vector (e.g. a close that
        # carries no encoding), also when its text changes.
        elif diff := changed_keys(old.metadata, meta):
            updates[record.fact_id] = diff
    if with_vector:
        collection.upsert(
            ids=[r.fact_id for r, _ in with_vector],
            embeddings=[_vector(r.encoding.combined) for r, _ in with_vector if r.encoding],
            metadatas=[m for _, m in with_vector],
        )
    if inserts:
        collection.upsert(
            ids=[r.fact_id for r, _ in inserts],
            metadatas=[m for _, m in inserts],
            documents=[r.statement() for r, _ in inserts],
        )
    if updates:
        collection.update(ids=list(updates), metadatas=list(updates.values()))
