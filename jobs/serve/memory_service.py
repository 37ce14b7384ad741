"""The service layer every query interface calls: SDK, HTTP API and MCP tools.

Reads go to the stores, always scoped by the tenant and user the caller gives
(the interfaces decide the tenant from an API key, never from a request body).
Writes never touch a store: confirm, reject, store and forget publish a
``UserAction`` to ``user.actions`` and return where it went, so the ingest
pipeline stays the single writer of memory (docs/architecture.md).

Recall ranks every item the user has (jobs/serve/recall_items.py builds a
``pipelines.recall_index.UserIndex`` from the tiers): the episodic tier's fact
versions and episodes (Chroma), the semantic tier's facts (Neo4j) and the
items pending confirmation (Redis, flagged ``pending``), with one hybrid score
(0.6 vector + 0.3 BM25/exact + 0.1 time, docs/recall.md).

Forgets are audited: ``erasures(tenant)`` lists what each store removed per
erase event, without content.

History versions come from the one chain asked for, in Chroma (live and
archive) and Neo4j; a snapshot reads only the versions current now. Neo4j's
reader has no "all versions of a user" query, so ``include_history`` recall
finds old versions through the episodic tier.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import numpy as np
from pydantic import TypeAdapter

from connectors.kafka_admin import ping_broker
from connectors.kafka_io import KeyedProducer
from connectors.protocols import EpisodicReader, SemanticReader, WorkingMemoryReader
from connectors.redis_memory import ErasureRecord
from jobs.serve.hint_feed import HintFeed, KafkaHintFeed
from jobs.serve.query_batcher import QueryBatcher
from jobs.serve.recall_items import UserItems, build_items, keep_for, to_hits
from jobs.stores import open_stores
from memstream.settings import ApiSettings, Settings, get_settings
from pipelines.actions import action_facts
from pipelines.context import render_context
from pipelines.encode import Encoder
from pipelines.recall import RecallWeights, query_values, render_statement, to_hit
from pipelines.recall_index import in_first_person, terms
from pipelines.time_focus import time_focus
from schemas._base import Identifier
from schemas.bounds import MAX_OBJECT_CHARS
from schemas.events import EDITED_OBJECT_PROPERTY, REVIEWER_PROPERTY, ActionType, UserAction
from schemas.hints import MemoryHint
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, MemoryState, Polarity, Tier
from schemas.query import (
    ActionReceipt,
    MemorySnapshot,
    PendingMemory,
    RecallFilters,
    RecallHit,
)
from schemas.topics import USER_ACTIONS, Topics

# MiniLM reads 256 word pieces (~1,000 characters of English) and truncates the
# rest; twice that leaves room for BM25 keywords without inviting documents.
# The HTTP API and MCP tools take their bound from here.
MAX_QUERY_CHARS = 2_000
# Recall returns at most this many hits: a prompt holds a few dozen facts at most.
MAX_K = 100
# Chroma candidates per recall = POOL_FACTOR x k, at least POOL_MIN: keyword and
# time may lift an item from below the vector top-k (hybrid search oversamples
# the vector side); 5x is our choice, POOL_MIN keeps BM25's idf meaningful.
POOL_FACTOR = 5
POOL_MIN = 50
# Statement vectors kept per process, cached by fact id and statement (a version
# is immutable): 20k x 384 float32 ~ 30 MB.
VECTOR_CACHE_SIZE = 20_000
# Rows of recall indexes kept per process: ~1.6 KB each (a 384-d float32 vector,
# postings, the item), so 500k rows ~ 0.8 GB. Mirrors ApiSettings' default.
RECALL_CACHE_ITEMS = 500_000
# Recall marks what it served in Chroma at most this often per item (the archive
# counts idle days; connectors/chroma_memory.py's RETRIEVAL_RESOLUTION, not
# imported: chromadb is slow to import), and remembers that many marks per
# process (~100 B each).
RETRIEVAL_RESOLUTION = timedelta(days=1)
SERVED_MEMO = 200_000
# A write call fails rather than hangs when the broker does not acknowledge.
PUBLISH_TIMEOUT_S = 30.0
# The metadata keys ChromaMemory.query filters on that RecallFilters also has.
_CHROMA_TAGS = ("subject", "predicate", "kind", "polarity")
_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)
_LOG = logging.getLogger(__name__)


class UnknownPendingError(LookupError):
    """The pending id is not waiting for this tenant's user (unknown, resolved or lapsed)."""


class QueryEmbedder(Protocol):
    """Embeds query text into the vector store's space (``pipelines.encode.Encoder``)."""

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text (statements to index, many at a time)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """One unit vector per recall query, a row each: a few at a time, cached by text."""
        ...

    def cached_query(self, text: str) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        """The vector of a query embedded before, if still cached; None otherwise."""
        ...


class ActionPublisher(Protocol):
    """Publishes an action event and says where the broker put it."""

    def publish(self, action: UserAction) -> tuple[str, int, int]:
        """Send ``action``, wait for its acknowledgement; (topic, partition, offset)."""
        ...


class KafkaActionPublisher:
    """Publishes to ``user.actions`` through the project's keyed idempotent producer."""

    def __init__(self, bootstrap: str, topic: str = USER_ACTIONS) -> None:
        """A producer on ``bootstrap`` (acks=all, idempotent, Java's partitioner)."""
        self.topic = topic
        self._producer = KeyedProducer(
            bootstrap, client_id="memstream-memory-service", delivery_timeout_s=PUBLISH_TIMEOUT_S
        )

    def publish(self, action: UserAction) -> tuple[str, int, int]:
        """Send ``action`` keyed by ``tenant:user``; raise DeliveryFailed if not acknowledged."""
        partition, offset = self._producer.send_and_wait(
            self.topic, action.model_dump_json().encode(), key=action.key
        )
        return self.topic, partition, offset


@dataclass
class MemoryStores:
    """The readers, query embedder and action publisher a MemoryService uses.

    Typed on the reader protocols (connectors/protocols.py): the real
    connectors from :meth:`open`, or ``memstream.testing``'s in-memory ones.
    """

    redis: WorkingMemoryReader
    chroma: EpisodicReader
    neo4j: SemanticReader
    embedder: QueryEmbedder
    publisher: ActionPublisher
    # What ``/readyz`` probes, by name (jobs/serve/readiness.py): each store and
    # the broker for the real connectors; nothing for in-memory stand-ins.
    probes: dict[str, Callable[[], object]] = field(default_factory=dict)
    # memory.hints, for subscribers (``MemoryService.hints``); None: no broker.
    hints: HintFeed | None = None

    @classmethod
    def open(cls, settings: Settings, namespace: str | None = None) -> MemoryStores:
        """Connect to the stores and broker named by ``settings``; load MiniLM.

        The stores come from ``jobs.stores.open_stores`` (the sink's, so the
        service reads what the sink writes, Chroma server included);
        ``namespace`` is the store namespace and the prefix of ``user.actions``.
        """
        import torch  # loaded with MiniLM below; process-wide, so set where the process is wired

        torch.set_num_threads(settings.api.torch_threads)
        stores = open_stores(settings, namespace)
        return cls(
            redis=stores.working,
            chroma=stores.episodic,
            neo4j=stores.semantic,
            embedder=Encoder.load(query_cache_items=settings.api.query_cache_items),
            publisher=KafkaActionPublisher(
                settings.kafka.bootstrap, topic=Topics(namespace or "").user_actions
            ),
            probes={
                "redis": stores.working.ping,
                "chroma": stores.episodic.ping,
                "neo4j": stores.semantic.ping,
                "kafka": lambda: ping_broker(settings.kafka.bootstrap),
            },
            hints=KafkaHintFeed(settings.kafka.bootstrap, Topics(namespace or "").hints),
        )


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _check_ids(*values: str) -> None:
    for value in values:
        _IDENTIFIER.validate_python(value)  # ValidationError is a ValueError


class MemoryService:
    """Recall, snapshot, history and the memory actions of one deployment."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        stores: MemoryStores | None = None,
        weights: RecallWeights | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """From ``settings`` (connects to everything), or from ready ``stores``."""
        if stores is None:
            if settings is None:
                raise ValueError("pass settings or stores")
            stores = MemoryStores.open(settings)
        self.stores = stores
        self.weights = weights or (settings.recall if settings else RecallWeights())
        self.clock = clock
        self._vectors: OrderedDict[str, np.ndarray[Any, np.dtype[np.float32]]] = OrderedDict()
        # Each user's recall index, least recently used first, bounded by rows.
        self._indexes: OrderedDict[tuple[str, str], UserItems] = OrderedDict()
        self.cache_items = settings.api.recall_cache_items if settings else RECALL_CACHE_ITEMS
        self._lock = threading.Lock()  # the HTTP API calls from a thread pool
        self._dim: int | None = None
        self._served: OrderedDict[tuple[str, str], datetime] = OrderedDict()
        # Marks run after the reply, one at a time: a Chroma write (~10 ms on a busy
        # machine) on every recall's path doubled its latency under load.
        self._marker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-marks")
        api = settings.api if settings else ApiSettings()
        # Concurrent recalls share MiniLM forward passes (jobs/serve/query_batcher.py);
        # None: each caller embeds its own query on its own thread.
        self.query_batcher: QueryBatcher | None = (
            QueryBatcher(
                self.stores.embedder.embed_queries,
                max_batch=api.query_batch_max,
                max_wait_s=api.query_batch_wait_ms / 1000,
            )
            if api.query_batching
            else None
        )

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, namespace: str | None = None
    ) -> MemoryService:
        """The service over the stores and broker the settings name (default: the environment's).

        ``namespace`` reads a shadow or test run's stores and publishes to its
        ``user.actions``; None is live memory.
        """
        settings = settings or get_settings()
        return cls(settings, stores=MemoryStores.open(settings, namespace))

    # -- reads ---------------------------------------------------------------
    def recall(
        self,
        tenant_id: str,
        user_id: str,
        query: str,
        k: int = 10,
        as_of: datetime | None = None,
        tiers: Sequence[Tier] | None = None,
        filters: RecallFilters | None = None,
        include_history: bool = False,
    ) -> list[RecallHit]:
        """The ``k`` facts best matching ``query`` that held at ``as_of`` (default now)."""
        _check_ids(tenant_id, user_id)
        if not query.strip():
            raise ValueError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"the query is longer than {MAX_QUERY_CHARS} characters")
        if not terms(query) and not any(ch.isdigit() for ch in query):
            # Only stop words, emoji or a script BM25 does not read (no Chinese
            # pipeline offline): nothing to match, so nothing is recalled.
            return []
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}")
        if as_of is not None and as_of.utcoffset() is None:
            raise ValueError("as_of must be timezone-aware")
        at = as_of or self.clock()
        wanted = set(tiers) if tiers is not None else set(Tier)
        dim = self._vector_dim()
        if Tier.EPISODIC in wanted:
            # Chroma holds every fact version and every episode: the user's cached index.
            committed = self._committed(tenant_id, user_id, dim)
        else:
            semantic = (
                self.stores.neo4j.facts_as_of(tenant_id, user_id, at, None)
                if Tier.SEMANTIC in wanted
                else []
            )
            committed = build_items(semantic_facts=semantic, embed=self._statement_vectors, dim=dim)
        query = in_first_person(query, committed.own_name)
        query_vector = self._query_vector(query)
        focus = time_focus(query, at)
        exact = frozenset(query_values(query))
        weights = (self.weights.vector, self.weights.keyword, self.weights.time)

        def find(items: UserItems, n: int) -> list[RecallHit]:
            ranked = items.index.search(
                query,
                query_vector,
                at=at,
                k=n,
                weights=weights,
                focus=focus,
                exact_keys=exact,
                include_history=include_history,
                keep=keep_for(items, filters),
            )
            return to_hits(items, ranked)

        hits = find(committed, k)
        if len(hits) < k and Tier.WORKING in wanted:
            # Pending items only fill the slots committed memory leaves empty.
            waiting = build_items(
                pending=self.stores.redis.pending(tenant_id, user_id, at),
                embed=self._statement_vectors,
                dim=dim,
            )
            hits += find(waiting, k - len(hits))
        self._mark_served(tenant_id, hits)
        return hits

    def _vector_dim(self) -> int:
        """The length of the embedder's vectors (measured once: an index needs it up front)."""
        if self._dim is None:
            self._dim = len(self.stores.embedder.embed_queries(["memory"])[0])
        return self._dim

    def _query_vector(self, query: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        """MiniLM of ``query``: from the cache, else through the batcher (or alone)."""
        embedder = self.stores.embedder
        cached = embedder.cached_query(query)
        if cached is not None:
            return cached  # a hit need not wait for a batch
        if self.query_batcher is None:
            return embedder.embed_queries([query])[0]
        return self.query_batcher.embed(query)

    def close(self) -> None:
        """Stop the query batcher and write the pending retrieval marks (shutdown, tests)."""
        if self.query_batcher is not None:
            self.query_batcher.close()
        self._marker.shutdown(wait=True)

    def _mark_served(self, tenant_id: str, hits: Sequence[RecallHit]) -> None:
        """Tell Chroma what recall served, so the 30-day archive keeps it live.

        Recall ranks a cached index, not a Chroma query, so nothing else would.
        Each item is marked at most once per RETRIEVAL_RESOLUTION by this
        process; a failing mark costs the recall nothing (the item's clock
        just moves on the next one).
        """
        now = self.clock()
        fresh = []
        with self._lock:
            for hit in hits:
                key = (tenant_id, hit.fact_id)
                last = self._served.get(key)
                if hit.state is MemoryState.COMMITTED and (
                    last is None or now - last >= RETRIEVAL_RESOLUTION
                ):
                    fresh.append(hit)
                    self._served[key] = now
                    self._served.move_to_end(key)
            while len(self._served) > SERVED_MEMO:
                self._served.popitem(last=False)
        if not fresh:
            return
        facts = [h.fact_id for h in fresh if h.hit_kind == "fact"]
        episodes = [h.fact_id for h in fresh if h.hit_kind == "episode"]
        self._marker.submit(self._mark, tenant_id, facts, episodes)

    def _mark(self, tenant_id: str, facts: list[str], episodes: list[str]) -> None:
        try:
            self.stores.chroma.mark_retrieved(tenant_id, facts, episodes)
        except Exception:  # noqa: BLE001 - a store hiccup must not fail a read
            count = len(facts) + len(episodes)
            _LOG.warning("could not mark %d recalled items as retrieved", count, exc_info=True)

    def wait_for_marks(self) -> None:
        """Block until every retrieval mark submitted so far is written (tests, shutdown)."""
        self._marker.submit(lambda: None).result()

    def _committed(self, tenant_id: str, user_id: str, dim: int) -> UserItems:
        """The user's index over the episodic tier, rebuilt when its revision moved."""
        key = (tenant_id, user_id)
        revision = self.stores.chroma.revision(tenant_id, user_id)
        with self._lock:
            cached = self._indexes.get(key)
            if cached is not None and cached.revision == revision and revision is not None:
                self._indexes.move_to_end(key)
                return cached
        # The semantic tier's versions are the promoted copies of Chroma's; one
        # that only it holds (a producer writing there alone) still counts.
        items = build_items(
            chroma_facts=self.stores.chroma.user_facts(tenant_id, user_id),
            semantic_facts=self.stores.neo4j.facts_as_of(tenant_id, user_id, self.clock(), None),
            episodes=self.stores.chroma.user_episodes(tenant_id, user_id),
            embed=self._statement_vectors,
            dim=dim,
            revision=revision,
        )
        with self._lock:
            self._indexes[key] = items
            self._indexes.move_to_end(key)
            total = sum(len(entry.index) for entry in self._indexes.values())
            while total > self.cache_items and len(self._indexes) > 1:
                _, dropped = self._indexes.popitem(last=False)
                total -= len(dropped.index)
        return items

    def context(self, tenant_id: str, user_id: str, query: str, k: int = 10) -> str:
        """The prompt-ready memory block for ``query`` (``pipelines.context``)."""
        return render_context(query, self.recall(tenant_id, user_id, query, k))

    def hints(
        self, tenant_id: str, user_id: str | None = None, *, from_beginning: bool = False
    ) -> Generator[MemoryHint | None]:
        """Hints pushed for the tenant's user (all its users: None) as they come.

        From now on, or from the oldest kept (``from_beginning``). Yields None
        after each quiet poll (half a second), so a caller can stop or send a
        keep-alive; close the iterator to stop following.
        """
        _check_ids(tenant_id, *([user_id] if user_id is not None else []))
        if self.stores.hints is None:
            raise RuntimeError("these stores have no hint feed (no broker)")
        return self.stores.hints.follow(tenant_id, user_id, from_beginning=from_beginning)

    def snapshot(self, tenant_id: str, user_id: str) -> MemorySnapshot:
        """Current rules and facts (episodic and semantic), statuses and pending items."""
        _check_ids(tenant_id, user_id)
        at = self.clock()
        current = {hit.fact_id: hit for hit in self.stores.chroma.get(tenant_id, user_id, at=at)}
        for hit in self.stores.neo4j.facts_as_of(tenant_id, user_id, at):
            current[hit.fact_id] = hit  # the consolidated copy wins
        ordered = sorted(current.values(), key=lambda h: (h.subject, h.predicate, h.fact_id))
        return MemorySnapshot(
            tenant_id=tenant_id,
            user_id=user_id,
            at=at,
            rules=[to_hit(h) for h in ordered if h.kind is MemoryKind.RULE],
            facts=[to_hit(h) for h in ordered if h.kind is not MemoryKind.RULE],
            status=self.stores.redis.statuses(tenant_id, user_id),
            pending=[
                PendingMemory(
                    pending_id=hit.fact_id,
                    hit=to_hit(hit, state=MemoryState.PENDING),
                    reason=str(hit.extra.get("reason") or ""),
                    expires_at=hit.extra.get("expires_at"),  # ISO 8601, validated here
                )
                for hit in self.stores.redis.pending(tenant_id, user_id, at)
            ],
        )

    def history(
        self, tenant_id: str, user_id: str, subject: str, predicate: str
    ) -> list[RecallHit]:
        """Every version of (subject, predicate), oldest first, each with its validity."""
        _check_ids(tenant_id, user_id)
        versions = {
            hit.fact_id: hit
            for hit in self.stores.chroma.chain(tenant_id, user_id, subject, predicate)
        }
        for hit in self.stores.neo4j.chain(tenant_id, user_id, subject, predicate):
            versions[hit.fact_id] = hit
        ordered = sorted(versions.values(), key=lambda h: (h.valid_from, h.version, h.fact_id))
        return [to_hit(h) for h in ordered]

    def erasures(self, tenant_id: str) -> list[ErasureRecord]:
        """The tenant's audited forgets, oldest first: ids, lineage, times, per-store counts.

        Written by the stores as they apply each erase (connectors/redis_memory.py
        ``ErasureAudit``); an audit record never holds memory content.
        """
        _check_ids(tenant_id)
        return self.stores.redis.erasures(tenant_id)

    # -- actions (events, never direct writes) --------------------------------
    def confirm(
        self,
        tenant_id: str,
        user_id: str,
        pending_id: str,
        *,
        reviewer_id: str | None = None,
        object: str | None = None,  # noqa: A002 - the triple's field name everywhere in memstream
    ) -> ActionReceipt:
        """Publish a confirm_memory action for one of this user's pending items.

        ``reviewer_id``: the human reviewer deciding (the review console);
        ``object``: a corrected value to commit instead of the held one.
        """
        properties: dict[str, Any] = {}
        if reviewer_id is not None:
            properties[REVIEWER_PROPERTY] = reviewer_id
        if object is not None:
            properties[EDITED_OBJECT_PROPERTY] = object
        return self._resolve(ActionType.CONFIRM_MEMORY, tenant_id, user_id, pending_id, properties)

    def reject(
        self, tenant_id: str, user_id: str, pending_id: str, *, reviewer_id: str | None = None
    ) -> ActionReceipt:
        """Publish a reject_memory action for one of this user's pending items."""
        properties = {REVIEWER_PROPERTY: reviewer_id} if reviewer_id is not None else {}
        return self._resolve(ActionType.REJECT_MEMORY, tenant_id, user_id, pending_id, properties)

    def store(
        self,
        tenant_id: str,
        user_id: str,
        predicate: str,
        object: str,  # noqa: A002 - the triple's field name everywhere in memstream
        subject: str = "user",
        polarity: Polarity = Polarity.AFFIRMED,
        kind: MemoryKind = MemoryKind.FACT,
        text: str = "",
        confidence: float | None = None,
    ) -> ActionReceipt:
        """Publish a store_memory action; the review decides (agent facts go pending)."""
        properties: dict[str, Any] = {
            "subject": subject,
            "predicate": predicate,
            "object": object,
            "polarity": polarity.value,
            "kind": kind.value,
            "text": text,
        }
        if confidence is not None:
            properties["confidence"] = confidence
        action = self._action(ActionType.STORE_MEMORY, tenant_id, user_id, properties=properties)
        action_facts(action)  # refuse what the pipeline would refuse, before publishing
        return self._publish(action)

    def forget(self, tenant_id: str, user_id: str) -> ActionReceipt:
        """Publish a forget_user action: the pipeline erases the user from every tier."""
        return self._publish(self._action(ActionType.FORGET_USER, tenant_id, user_id))

    # -- helpers ---------------------------------------------------------------
    def _resolve(
        self,
        action_type: ActionType,
        tenant_id: str,
        user_id: str,
        pending_id: str,
        properties: dict[str, Any] | None = None,
    ) -> ActionReceipt:
        properties = properties or {}
        _check_ids(tenant_id, user_id)
        if REVIEWER_PROPERTY in properties:
            _check_ids(properties[REVIEWER_PROPERTY])
        edited = properties.get(EDITED_OBJECT_PROPERTY)
        if edited is not None and not 1 <= len(edited.strip()) <= MAX_OBJECT_CHARS:
            raise ValueError(f"the corrected value must be 1-{MAX_OBJECT_CHARS} characters")
        waiting = {hit.fact_id for hit in self.stores.redis.pending(tenant_id, user_id)}
        if pending_id not in waiting:
            raise UnknownPendingError(
                f"no pending memory {pending_id!r} waits for user {user_id!r} of this tenant"
            )
        # One id per (action, item): a retried call publishes the same event.
        event_id = f"{action_type.value}-{pending_id}"
        action = self._action(
            action_type, tenant_id, user_id, target_id=pending_id, properties=properties
        )
        return self._publish(action.model_copy(update={"event_id": event_id}))

    def _action(
        self, action_type: ActionType, tenant_id: str, user_id: str, **fields: Any
    ) -> UserAction:
        return UserAction(
            event_id=f"{action_type.value}-{uuid.uuid4().hex}",
            tenant_id=tenant_id,
            user_id=user_id,
            ts=self.clock(),
            action_type=action_type,
            **fields,
        )

    def _publish(self, action: UserAction) -> ActionReceipt:
        topic, partition, offset = self.stores.publisher.publish(action)
        return ActionReceipt(
            action_type=action.action_type.value,
            event_id=action.event_id,
            tenant_id=action.tenant_id,
            user_id=action.user_id,
            topic=topic,
            partition=partition,
            offset=offset,
            target_id=action.target_id,
        )

    def _statement_vectors(self, hits: Sequence[SearchHit]) -> list[np.ndarray[Any, Any]]:
        """MiniLM of each hit's statement, cached by fact id and statement."""
        with self._lock:
            keys = [f"{h.fact_id}\x1f{render_statement(h)}" for h in hits]
            missing = list(dict.fromkeys(key for key in keys if key not in self._vectors))
            if missing:
                texts = [key.split("\x1f", 1)[1] for key in missing]
                for key, vec in zip(missing, self.stores.embedder.embed_texts(texts), strict=True):
                    self._vectors[key] = np.asarray(vec, dtype=np.float32)
            vectors = []
            for key in keys:
                self._vectors.move_to_end(key)
                vectors.append(self._vectors[key])
            while len(self._vectors) > VECTOR_CACHE_SIZE:
                self._vectors.popitem(last=False)
        return vectors


def _chroma_tags(filters: RecallFilters | None) -> dict[str, str] | None:
    """The filter conditions Chroma can apply itself (ranking re-checks them all)."""
    if filters is None:
        return None
    tags: dict[str, str] = {k: v for k, v in filters.tags.items() if k in _CHROMA_TAGS}
    if filters.kinds is not None and len(filters.kinds) == 1:
        tags["kind"] = filters.kinds[0].value
    return tags or None
