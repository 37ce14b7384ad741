"""In-memory stand-ins for the stores and the broker, for tests without services.

- :class:`InMemoryWorking`, :class:`InMemoryEpisodic`, :class:`InMemorySemantic`
  are writers (``BatchingSink``: ``write``/``flush``, tier filtering, chunking,
  backpressure) and readers (the protocols of connectors/protocols.py) of the
  working, episodic and semantic tiers, applying operations as the Redis,
  Chroma and Neo4j connectors do: versions upserted by fact id (a close is
  never undone), the last ``TURNS_KEPT`` turns per session, statuses and
  pending items that expire, resolutions that keep a resolved item from being
  queued again, and audited erasures.
- :class:`InMemoryStores` holds one of each (what ``jobs.stores.open_stores``
  returns for the real stores) and reads a namespace whole for the audit.
- :class:`RecordingPublisher` records the actions a ``MemoryService``
  publishes; :class:`HashingEmbedder` is a deterministic query embedder.

Not a model of the stores' performance or of Chroma's approximate search:
similarity is an exact cosine over each version's ``encoding.combined``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from connectors.namespace_dump import UserDump, episode_entry
from connectors.protocols import BatchingSink, SearchHit
from connectors.redis_memory import (
    DEFAULT_PENDING_TTL,
    TURNS_KEPT,
    ErasureAudit,
    ErasureEntry,
    ErasureRecord,
    PendingEntry,
    ReviewEntry,
    _hold_reason,
)
from schemas._base import Scalar
from schemas.episodes import StoredEpisode
from schemas.events import UserAction
from schemas.memory import MemoryKind, MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, WorkingTurn
from schemas.topics import Topics

Clock = Callable[[], datetime]
User = tuple[str, str]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class InMemoryAudit(ErasureAudit):
    """The erasure audit (``ErasureAudit``) kept in a list instead of a Redis stream."""

    def __init__(self, clock: Clock = _utcnow) -> None:  # no Redis client
        """An empty audit."""
        self.clock = clock
        self._entries: list[ErasureEntry] = []

    def record(self, op: MemoryOperation, store: str, removed: int) -> None:
        """Append ``store``'s entry for the erase ``op``."""
        described = json.loads(self.describe(op, store))
        self._entries.append(ErasureEntry.model_validate(described | {"removed": removed}))

    def entries(self, tenant_id: str) -> list[ErasureEntry]:
        """Every entry of the tenant, in append order."""
        return [e for e in self._entries if e.tenant_id == tenant_id]


class _InMemorySink(BatchingSink):
    """Shared by the three: transient errors are injected ``ConnectionError``s."""

    def __init__(self, *, clock: Clock = _utcnow, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.fail_with: Exception | None = None  # set to make the next writes fail
        self.applied: list[MemoryOperation] = []  # every operation applied, in order

    def setup(self) -> None:
        """Nothing to create."""

    def _is_transient(self, error: Exception) -> bool:
        return isinstance(error, ConnectionError | TimeoutError)

    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        for op in ops:
            self._apply_one(op)
            self.applied.append(op)

    def _apply_one(self, op: MemoryOperation) -> None:
        raise NotImplementedError


def _merge(earlier: MemoryRecord | None, later: MemoryRecord) -> MemoryRecord:
    """The later write of a version wins; a close is never undone (as Chroma and Neo4j)."""
    if earlier is None:
        return later
    if later.valid_until is None and earlier.valid_until is not None:
        return later.model_copy(update={"valid_until": earlier.valid_until})
    return later


class _Versions(_InMemorySink):
    """Fact versions by (tenant, fact id): the episodic and semantic tiers."""

    def __init__(self, *, erasure_audit: ErasureAudit | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.erasure_audit = erasure_audit
        self.records: dict[tuple[str, str], MemoryRecord] = {}

    def _apply_one(self, op: MemoryOperation) -> None:
        if op.op_type is OpType.ERASE_USER:
            doomed = [
                key
                for key, r in self.records.items()
                if (r.tenant_id, r.user_id) == (op.tenant_id, op.user_id)
            ]
            for key in doomed:
                del self.records[key]
            if self.erasure_audit is not None:
                self.erasure_audit.record(op, self.store_name, len(doomed))
        elif op.op_type in (OpType.UPSERT_FACT, OpType.CLOSE_FACT) and op.record:
            key = (op.tenant_id, op.record.fact_id)
            self.records[key] = _merge(self.records.get(key), op.record)

    def _of(self, tenant_id: str, user_id: str) -> list[MemoryRecord]:
        return [r for (t, _), r in self.records.items() if t == tenant_id and r.user_id == user_id]

    def chain(self, tenant_id: str, user_id: str, subject: str, predicate: str) -> list[SearchHit]:
        """Every version of one (subject, predicate), case-insensitive, oldest first."""
        key = (subject.casefold(), predicate.casefold())
        found = [
            r
            for r in self._of(tenant_id, user_id)
            if (r.subject.casefold(), r.predicate.casefold()) == key
        ]
        found.sort(key=lambda r: (r.version, r.valid_from, r.fact_id))
        return [SearchHit.from_record(r, self.tier) for r in found]

    def users(self) -> set[User]:
        """Every (tenant, user) with a version here."""
        return {(r.tenant_id, r.user_id) for r in self.records.values()}


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if not a or not b or len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def hashed_text_vector(text: str, dim: int = 384) -> list[float]:
    """A deterministic bag-of-words unit vector: the in-memory stand-in for MiniLM."""
    vector = [0.0] * dim
    for word in text.casefold().split():
        digest = hashlib.blake2b(word.strip(".,;:!?\"'()").encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "big") % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


class InMemoryEpisodic(_Versions):
    """The episodic tier (``EpisodicReader``): versions and episodes, searched by exact cosine.

    An episode keeps the vector its operation carries; one without is embedded
    by ``embed`` (default: ``hashed_text_vector``), as Chroma embeds it with MiniLM.
    """

    tier = Tier.EPISODIC
    store_name = "chroma"

    def __init__(
        self,
        *,
        embed: Callable[[str], list[float]] = hashed_text_vector,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.embed = embed
        self.episodes: dict[tuple[str, str], StoredEpisode] = {}
        self.revisions: dict[tuple[str, str], int] = {}
        # (tenant, fact or episode id) -> when recall last served it.
        self.retrieved: dict[tuple[str, str], datetime] = {}

    def revision(self, tenant_id: str, user_id: str) -> str | None:
        """Changes with every operation applied for the user (None: never written)."""
        count = self.revisions.get((tenant_id, user_id))
        return None if count is None else str(count)

    def _apply_one(self, op: MemoryOperation) -> None:
        key_of_user = (op.tenant_id, op.user_id)
        self.revisions[key_of_user] = self.revisions.get(key_of_user, 0) + 1
        if op.op_type is OpType.UPSERT_EPISODE and op.episode is not None:
            key = (op.tenant_id, op.episode.episode_id)
            old = self.episodes.get(key)
            vector = op.episode.vector or self.embed(op.episode.text)
            kept = (old.outdated, old.outdated_by) if old else (False, ())
            self.episodes[key] = StoredEpisode(op.episode, kept[0], vector, kept[1])
        elif op.op_type is OpType.OUTDATE_EPISODE and op.target_fact_id:
            key = (op.tenant_id, op.target_fact_id)
            if key in self.episodes:
                stored = self.episodes[key]
                newer = op.superseded_by
                by = stored.outdated_by + (
                    (newer,) if newer and newer not in stored.outdated_by else ()
                )
                self.episodes[key] = StoredEpisode(stored.episode, True, stored.vector, by)
        else:
            if op.op_type is OpType.ERASE_USER:
                for key in [
                    k
                    for k, e in self.episodes.items()
                    if k[0] == op.tenant_id and e.episode.user_id == op.user_id
                ]:
                    del self.episodes[key]
            super()._apply_one(op)

    def users(self) -> set[User]:
        """Every (tenant, user) with a version or an episode here."""
        return super().users() | {(t, e.episode.user_id) for (t, _), e in self.episodes.items()}

    def user_facts(self, tenant_id: str, user_id: str) -> list[tuple[SearchHit, list[float]]]:
        """Every version of the user with its combined vector (empty when it has none)."""
        return [
            (
                SearchHit.from_record(r, self.tier),
                list(r.encoding.combined) if r.encoding and r.encoding.combined else [],
            )
            for r in self._of(tenant_id, user_id)
        ]

    def mark_retrieved(
        self, tenant_id: str, fact_ids: Sequence[str], episode_ids: Sequence[str]
    ) -> None:
        """Remember when recall served each item (``ChromaMemory`` feeds its archive with it)."""
        now = self.clock()
        for item_id in [*fact_ids, *episode_ids]:
            self.retrieved[(tenant_id, item_id)] = now

    def user_episodes(self, tenant_id: str, user_id: str) -> list[StoredEpisode]:
        """Every episode of the user, oldest first."""
        found = [
            e
            for (t, _), e in self.episodes.items()
            if t == tenant_id and e.episode.user_id == user_id
        ]
        return sorted(found, key=lambda e: (e.episode.ts, e.episode.episode_id))

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
        """The ``k`` versions nearest ``embedding`` (``text`` is not supported here)."""
        if embedding is None:
            raise ValueError("the in-memory episodic store searches by embedding only")
        wanted = dict(tags or {})
        found = [
            r
            for r in self._of(tenant_id, user_id)
            if (at is None or r.is_current(at))
            and (session_id is None or r.session_id == session_id)
            and all(str(getattr(r, name)) == value for name, value in wanted.items())
        ]
        scored = [(_cosine(embedding, r.encoding.combined if r.encoding else []), r) for r in found]
        scored.sort(key=lambda pair: (-pair[0], pair[1].fact_id))
        return [SearchHit.from_record(r, self.tier, score=s) for s, r in scored[:k]]

    def get(
        self,
        tenant_id: str,
        user_id: str,
        *,
        archived: bool = False,
        at: datetime | None = None,
    ) -> list[SearchHit]:
        """A user's versions (``at``: current then only); nothing is ever archived here."""
        if archived:
            return []
        found = [r for r in self._of(tenant_id, user_id) if at is None or r.is_current(at)]
        found.sort(key=lambda r: (r.chain_id, r.version, r.fact_id))
        return [SearchHit.from_record(r, self.tier) for r in found]


class InMemorySemantic(_Versions):
    """The semantic tier (``SemanticReader``): the versions the review promoted."""

    tier = Tier.SEMANTIC
    store_name = "neo4j"

    def facts_as_of(
        self,
        tenant_id: str,
        user_id: str,
        at: datetime,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> list[SearchHit]:
        """The versions of a user's facts that held at ``at``."""
        found = [
            r
            for r in self._of(tenant_id, user_id)
            if r.is_current(at) and (kinds is None or r.kind in kinds)
        ]
        found.sort(key=lambda r: (r.subject, r.predicate, r.fact_id))
        return [SearchHit.from_record(r, self.tier) for r in found]


class _Pending(NamedTuple):
    record: MemoryRecord
    reason: str
    expires_at: datetime


class InMemoryWorking(_InMemorySink):
    """The working tier (``WorkingMemoryReader``): turns, statuses, pending items, erasures."""

    tier = Tier.WORKING
    store_name = "redis"

    def __init__(
        self,
        *,
        turns_kept: int = TURNS_KEPT,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
        clock: Clock = _utcnow,
        **kwargs: Any,
    ) -> None:
        """Empty working memory; ``audit`` collects every store's erasures."""
        super().__init__(clock=clock, latency_budget_s=math.inf, **kwargs)
        self.turns_kept = turns_kept
        self.pending_ttl = pending_ttl
        self.audit = InMemoryAudit(clock)
        self.turns: dict[tuple[str, str, str], dict[int, WorkingTurn]] = {}
        self.status: dict[User, dict[str, tuple[Scalar, datetime]]] = {}
        self.queue: dict[User, dict[str, _Pending]] = {}
        self.resolved: dict[User, dict[str, str]] = {}
        self.decisions: list[ReviewEntry] = []

    def _apply_one(self, op: MemoryOperation) -> None:
        user = (op.tenant_id, op.user_id)
        if op.op_type is OpType.APPEND_TURN and op.turn:
            session = self.turns.setdefault((*user, op.turn.session_id), {})
            session[op.turn.turn_index] = op.turn
            for index in sorted(session)[: -self.turns_kept]:
                del session[index]
        elif op.op_type is OpType.SET_STATUS and op.status:
            expiry = op.at + timedelta(seconds=op.status.ttl_s)
            self.status.setdefault(user, {})[op.status.name] = (op.status.value, expiry)
        elif op.op_type is OpType.ADD_PENDING and op.record:
            queue = self.queue.setdefault(user, {})
            for fact_id in [f for f, p in queue.items() if p.expires_at <= op.at]:
                del queue[fact_id]
            if op.record.fact_id not in self.resolved.get(user, {}):
                queue[op.record.fact_id] = _Pending(
                    op.record, _hold_reason(op.record), op.at + self.pending_ttl
                )
        elif op.op_type is OpType.RESOLVE_PENDING and op.target_fact_id and op.resolution:
            self.queue.get(user, {}).pop(op.target_fact_id, None)
            self.resolved.setdefault(user, {})[op.target_fact_id] = op.resolution
            entry = ReviewEntry.of(op, self.clock())
            if all(
                (e.event_id, e.pending_id) != (entry.event_id, entry.pending_id)
                for e in self.decisions
            ):
                self.decisions.append(entry)
        elif op.op_type is OpType.ERASE_USER:
            # Counted as the Redis writer counts its keys: one per session's turns,
            # per status, and the pending queue, its items and its resolutions.
            sessions = [key for key in self.turns if key[:2] == user]
            removed = len(sessions) + len(self.status.pop(user, {}))
            removed += 2 if self.queue.pop(user, None) else 0
            removed += 1 if self.resolved.pop(user, None) else 0
            for key in sessions:
                del self.turns[key]
            self.audit.record(op, self.store_name, removed)

    def pending(self, tenant_id: str, user_id: str, at: datetime | None = None) -> list[SearchHit]:
        """Pending items not yet expired at ``at`` (default now), soonest expiry first."""
        moment = at or self.clock()
        queue = self.queue.get((tenant_id, user_id), {})
        items = [p for p in queue.values() if p.expires_at > moment]
        items.sort(key=lambda p: (p.expires_at, p.record.fact_id))
        return [
            SearchHit.from_record(
                p.record,
                Tier.WORKING,
                extra={"reason": p.reason, "expires_at": p.expires_at.isoformat()},
            )
            for p in items
        ]

    def statuses(self, tenant_id: str, user_id: str) -> dict[str, Scalar]:
        """Every unexpired status of a user, by name."""
        now = self.clock()
        found = self.status.get((tenant_id, user_id), {})
        return {name: value for name, (value, expiry) in sorted(found.items()) if expiry > now}

    def recent_turns(self, tenant_id: str, user_id: str, session_id: str) -> list[WorkingTurn]:
        """The last turns of a session, oldest first."""
        session = self.turns.get((tenant_id, user_id, session_id), {})
        return [session[i] for i in sorted(session)]

    def resolution(self, tenant_id: str, user_id: str, fact_id: str) -> str | None:
        """``confirmed`` / ``rejected`` once a pending fact was resolved, else None."""
        return self.resolved.get((tenant_id, user_id), {}).get(fact_id)

    def erasures(self, tenant_id: str) -> list[ErasureRecord]:
        """The tenant's audited erasures, oldest first (every store's counts)."""
        return self.audit.erasures(tenant_id)

    def pending_items(
        self, tenant_id: str, user_id: str, at: datetime | None = None
    ) -> list[PendingEntry]:
        """The queued records (with their review outcomes), soonest expiry first."""
        moment = at or self.clock()
        queue = self.queue.get((tenant_id, user_id), {})
        items = sorted(
            (p for p in queue.values() if p.expires_at > moment),
            key=lambda p: (p.expires_at, p.record.fact_id),
        )
        return [
            PendingEntry(record=p.record, reason=p.reason, expires_at=p.expires_at) for p in items
        ]

    def pending_users(self, tenant_id: str) -> list[str]:
        """The tenant's users with a pending queue, sorted."""
        return sorted(user for tenant, user in self.queue if tenant == tenant_id)

    def review_decisions(self, tenant_id: str) -> list[ReviewEntry]:
        """The tenant's applied confirms and rejects, oldest first, once each."""
        return [entry for entry in self.decisions if entry.tenant_id == tenant_id]

    def users(self) -> set[User]:
        """Every (tenant, user) with something in working memory."""
        return {
            *((t, u) for t, u, _ in self.turns),
            *(u for u, s in self.status.items() if s),
            *(u for u, q in self.queue.items() if q),
            *(u for u, r in self.resolved.items() if r),
        }


class InMemoryStores(NamedTuple):
    """One in-memory store per tier, sharing a clock and the erasure audit (like ``Stores``)."""

    working: InMemoryWorking
    episodic: InMemoryEpisodic
    semantic: InMemorySemantic

    @classmethod
    def create(cls, clock: Clock = _utcnow, **sink_options: Any) -> InMemoryStores:
        """Empty stores; ``sink_options`` (chunk_size, latency_budget_s) go to the fact tiers."""
        working = InMemoryWorking(clock=clock)
        return cls(
            working,
            InMemoryEpisodic(clock=clock, erasure_audit=working.audit, **sink_options),
            InMemorySemantic(clock=clock, erasure_audit=working.audit, **sink_options),
        )

    def setup(self) -> None:
        """Nothing to create (as ``Stores.setup``)."""

    def close(self) -> None:
        """Nothing to release (as ``Stores.close``)."""

    def users(self) -> list[User]:
        """Every (tenant, user) with memory in any tier, sorted (``NamespaceReader``)."""
        return sorted(self.working.users() | self.episodic.users() | self.semantic.users())

    def dump(self, tenant_id: str, user_id: str) -> UserDump:
        """All of one user's memory, as ``connectors.namespace_dump.dump_user`` lays it out.

        Semantic versions are the records' fields (Neo4j keeps them as node
        properties, flattened): compare in-memory dumps with in-memory dumps.
        """
        user = (tenant_id, user_id)
        read = {"tier", "score", "extra"}
        sessions = sorted(s for t, u, s in self.working.turns if (t, u) == user)
        every_pending = datetime(1970, 1, 1, tzinfo=UTC)
        return UserDump(
            tenant_id=tenant_id,
            user_id=user_id,
            episodic={
                h.fact_id: h.model_dump(mode="json", exclude=read)
                for h in self.episodic.get(tenant_id, user_id)
            },
            semantic={
                r.fact_id: r.model_dump(mode="json", exclude={"encoding"})
                for r in self.semantic._of(tenant_id, user_id)
            },
            pending={
                h.fact_id: h.model_dump(mode="json", exclude={"tier", "score"})
                for h in self.working.pending(tenant_id, user_id, at=every_pending)
            },
            resolved=dict(self.working.resolved.get(user, {})),
            statuses=self.working.statuses(tenant_id, user_id),
            turns={
                s: [t.model_dump(mode="json") for t in self.working.recent_turns(*user, s)]
                for s in sessions
            },
            episodes={
                e.episode.episode_id: episode_entry(e) for e in self.episodic.user_episodes(*user)
            },
        )

    def __enter__(self) -> InMemoryStores:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class InMemorySpool:
    """A store's spool (``jobs.sink.lane.OperationSpool``, as ``RedisSpool``) in a list."""

    def __init__(self) -> None:
        """An empty spool."""
        self.ops: list[MemoryOperation] = []

    def spool(self, ops: Sequence[MemoryOperation]) -> None:
        """Append operations at the end of the spool."""
        self.ops.extend(ops)

    def spool_depth(self) -> int:
        """How many operations wait."""
        return len(self.ops)

    def drain(self, apply: Callable[[list[MemoryOperation]], bool], batch_size: int = 256) -> int:
        """As ``RedisSpool.drain``: a batch ``apply`` raises on stays; False stops after it."""
        drained = 0
        while self.ops:
            batch = self.ops[:batch_size]
            go_on = apply(list(batch))
            del self.ops[: len(batch)]
            drained += len(batch)
            if not go_on:
                break
        return drained


class RecordingPublisher:
    """An ``ActionPublisher`` that keeps what it is given: ``actions``, in order."""

    def __init__(self, namespace: str = "") -> None:
        """Records to ``user.actions`` under ``namespace``, partition 0, offsets from 0."""
        self.topic = Topics(namespace).user_actions
        self.actions: list[UserAction] = []

    def publish(self, action: UserAction) -> tuple[str, int, int]:
        """Record ``action``; (topic, 0, its offset)."""
        self.actions.append(action)
        return self.topic, 0, len(self.actions) - 1

    def __iter__(self) -> Iterator[UserAction]:
        return iter(self.actions)


_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """A deterministic ``QueryEmbedder``: hashed bag of words, unit length (no model to load)."""

    def __init__(self, dim: int = 64) -> None:
        """Vectors of ``dim`` floats."""
        self.dim = dim

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text (zero for a text without words)."""
        return [self.embed(text) for text in texts]

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``embed_texts`` as rows of an array (the recall side's call)."""
        return np.asarray(self.embed_texts(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def cached_query(self, text: str) -> npt.NDArray[np.float32] | None:
        """Always None: nothing is cached (a vector costs no model here)."""
        return None

    def embed(self, text: str) -> list[float]:
        """The vector of one text: texts sharing words have a positive cosine."""
        vector = [0.0] * self.dim
        for word in _WORD.findall(text.casefold()):
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "big") % self.dim] += 1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector
