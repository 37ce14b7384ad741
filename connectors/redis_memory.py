"""Working memory in Redis, and the backpressure spool.

Clients must be created with ``decode_responses=True`` (``from_url`` does so).
redis-py types every sync reply as ``Awaitable | Any``; the ``cast`` calls below
name what the sync client really returns.

Keys (``{ns}:`` only when a namespace is given, e.g. a replay's shadow namespace)::

    {ns}:ms:{tenant}:{user}:turns:{session}   sorted set: turn JSON scored by turn_index,
                                              the last TURNS_KEPT kept
    {ns}:ms:{tenant}:{user}:status:{name}     string: JSON value, absolute expiry
                                              (one key per status: Redis 7.0 has no HEXPIRE)
    {ns}:ms:{tenant}:{user}:pending           sorted set: fact_id scored by expiry (epoch s)
    {ns}:ms:{tenant}:{user}:pending:items     hash: fact_id -> {record, reason, expires_at}
    {ns}:ms:{tenant}:{user}:pending:resolved  hash: fact_id -> confirmed | rejected
    {ns}:ms:spool                             stream: operations waiting for a store
    {ns}:ms:spool:{name}                      the same, for a named spool (one per store)
    {ns}:ms-audit:{tenant}:erasures           stream: one entry per store that applied an
                                              erase (ids and counts, never content)
    {ns}:ms-audit:{tenant}:reviews            stream: one entry per confirm/reject applied
                                              (ids, resolution, reviewer, never content)
    {ns}:ms-hints:{tenant}:{hint_id}          string: the memory.ops position that owns a
                                              hint, with an expiry (connectors/redis_hints.py)

Idempotency: a turn replaces any entry with its turn_index before the list is
trimmed; a status expires at ``op.at + ttl`` (absolute, so a replay sets the same
expiry); a pending item already resolved is not queued again (checked atomically
in a Lua script). Tenant and user ids are ``[A-Za-z0-9_.@-]`` (schemas._base), so
they hold no ``:`` and no glob character.

Erasure audit (:class:`ErasureAudit`): forgetting a user deletes every key under
``{ns}:ms:{tenant}:{user}:``, so the audit lives outside that space — under
``ms-audit``, which no user pattern can match — in one stream per tenant, so an
operator (or a tenant-scoped API call) lists one tenant's erasures with one
XRANGE and never reads another tenant's. A stream is append-only with
server-ordered ids; it is never trimmed (an entry is ~300 bytes). An entry
holds the erase event's id and lineage, the tenant and user ids, the store, how
many items it removed and when: no memory content.

Review audit (:class:`ReviewAudit`): every confirm or reject the writer applies
appends the decision — pending id, confirmed/rejected, the action's event id
and lineage, and the human reviewer when the review console sent it — to the
tenant's ``reviews`` stream beside the erasures, in the same MULTI as the
resolution itself, so a decision is never applied without its audit entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import redis
from pydantic import AwareDatetime, Field

from connectors.protocols import DEFAULT_CHUNK_SIZE, DEFAULT_LATENCY_BUDGET_S, BatchingSink
from schemas._base import Frozen, Scalar
from schemas.hits import SearchHit
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, WorkingTurn

# docs/architecture.md, Tiers: working memory holds "the last 5 turns per session".
TURNS_KEPT = 5
# How long a pending item waits for a confirm/reject action. Neither docs/architecture.md nor
# issue 4 fixes it; a week covers a user coming back after a weekend.
DEFAULT_PENDING_TTL = timedelta(days=7)
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

# KEYS: pending zset, items hash, resolved hash. ARGV: fact_id, expiry, item JSON,
# the operation's event time. Items expired by that time are dropped first, so
# the queue does not grow with items nobody confirmed.
_ADD_PENDING = """
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])) do
  redis.call('HDEL', KEYS[2], gone)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[4])
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
"""

# KEYS: the tenant's erasure audit stream, then every key of the user (found by a
# SCAN, which a script must not run). ARGV: the audit entry without its count.
# Deletes and audits in one atomic step, counting only keys that still existed
# (a status key may expire between the SCAN and this script).
_ERASE = """
local removed = 0
for i = 2, #KEYS do removed = removed + redis.call('DEL', KEYS[i]) end
redis.call('XADD', KEYS[1], '*', 'entry', ARGV[1], 'removed', removed)
return removed
"""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _hold_reason(record: MemoryRecord) -> str:
    """Why the review held the fact: every stage outcome that was not a plain pass."""
    return "; ".join(
        f"{o.stage.value}: {o.reason}" for o in record.review if o.reason and o.decision != "pass"
    )


class RedisKeys:
    """Builds every key of one namespace (the single place key layouts live)."""

    def __init__(self, namespace: str | None = None) -> None:
        if namespace is not None and not _NAMESPACE.match(namespace):
            raise ValueError(f"namespace must match {_NAMESPACE.pattern}")
        self.root = f"{namespace}:ms" if namespace else "ms"

    def user(self, tenant_id: str, user_id: str, *parts: str) -> str:
        """``{root}:{tenant}:{user}[:part…]``."""
        return ":".join((self.root, tenant_id, user_id, *parts))

    def erasures(self, tenant_id: str) -> str:
        """The tenant's erasure audit stream (outside every user's key space)."""
        return f"{self.root}-audit:{tenant_id}:erasures"

    def reviews(self, tenant_id: str) -> str:
        """The tenant's review audit stream (outside every user's key space)."""
        return f"{self.root}-audit:{tenant_id}:reviews"

    def hint_owner(self, tenant_id: str, hint_id: str) -> str:
        """Which ``memory.ops`` record owns a hint (outside every user's key space)."""
        return f"{self.root}-hints:{tenant_id}:{hint_id}"

    def spool(self, name: str | None = None) -> str:
        """The stream of spooled operations (of the spool called ``name``, if given)."""
        if name is None:
            return f"{self.root}:spool"
        if not _NAMESPACE.match(name):
            raise ValueError(f"spool name must match {_NAMESPACE.pattern}")
        return f"{self.root}:spool:{name}"


class RedisMemory(BatchingSink):
    """Writer and reader of the working tier."""

    tier = Tier.WORKING
    store_name = "redis"

    def __init__(
        self,
        client: redis.Redis,
        *,
        namespace: str | None = None,
        turns_kept: int = TURNS_KEPT,
        pending_ttl: timedelta = DEFAULT_PENDING_TTL,
        clock: Callable[[], datetime] = _utcnow,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        latency_budget_s: float = DEFAULT_LATENCY_BUDGET_S,
    ) -> None:
        super().__init__(chunk_size=chunk_size, latency_budget_s=latency_budget_s)
        self.client = client
        self.keys = RedisKeys(namespace)
        self.turns_kept = turns_kept
        self.pending_ttl = pending_ttl
        self.clock = clock
        self.audit = ErasureAudit(client, namespace=namespace, clock=clock)
        self.reviews = ReviewAudit(client, namespace=namespace, clock=clock)
        self._add_pending = client.register_script(_ADD_PENDING)
        self._erase = client.register_script(_ERASE)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisMemory:
        """A writer on a new client for ``url`` (``redis://host:port/db``)."""
        return cls(redis.Redis.from_url(url, decode_responses=True), **kwargs)

    def setup(self) -> None:
        """Check the server answers (Redis needs no schema)."""
        self.client.ping()

    def ping(self) -> None:
        """Raise unless the server answers now (a readiness probe)."""
        self.client.ping()

    def _is_transient(self, error: Exception) -> bool:
        return isinstance(
            error, redis.ConnectionError | redis.TimeoutError | redis.BusyLoadingError
        )

    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        pipe = self.client.pipeline(transaction=True)
        for op in ops:
            if op.op_type is OpType.ERASE_USER:
                # Erasing needs a SCAN (a read), which a MULTI block cannot hold:
                # run what came before, then erase, then go on.
                pipe.execute()
                self._erase_user(op)
            else:
                self._queue(pipe, op)
        pipe.execute()

    def _queue(self, pipe: redis.client.Pipeline, op: MemoryOperation) -> None:
        key = self.keys.user
        if op.op_type is OpType.APPEND_TURN and op.turn:
            turns = key(op.tenant_id, op.user_id, "turns", op.turn.session_id)
            index = op.turn.turn_index
            pipe.zremrangebyscore(turns, index, index)
            pipe.zadd(turns, {op.turn.model_dump_json(): index})
            pipe.zremrangebyrank(turns, 0, -(self.turns_kept + 1))
        elif op.op_type is OpType.SET_STATUS and op.status:
            expiry = op.at + timedelta(seconds=op.status.ttl_s)
            status = key(op.tenant_id, op.user_id, "status", op.status.name)
            pipe.set(status, json.dumps(op.status.value), pxat=int(expiry.timestamp() * 1000))
        elif op.op_type is OpType.ADD_PENDING and op.record:
            expiry = op.at + self.pending_ttl
            item = json.dumps(
                {
                    "record": op.record.model_dump(mode="json"),
                    "reason": _hold_reason(op.record),
                    "expires_at": expiry.isoformat(),
                }
            )
            pending = key(op.tenant_id, op.user_id, "pending")
            keys = [pending, f"{pending}:items", f"{pending}:resolved"]
            args: list[str | float] = [
                op.record.fact_id,
                expiry.timestamp(),
                item,
                op.at.timestamp(),
            ]
            self._add_pending(keys, args, client=pipe)
        elif op.op_type is OpType.RESOLVE_PENDING and op.target_fact_id and op.resolution:
            pending = key(op.tenant_id, op.user_id, "pending")
            pipe.zrem(pending, op.target_fact_id)
            pipe.hdel(f"{pending}:items", op.target_fact_id)
            pipe.hset(f"{pending}:resolved", op.target_fact_id, op.resolution)
            pipe.xadd(self.keys.reviews(op.tenant_id), {"entry": self.reviews.describe(op)})
        # UPSERT_FACT / CLOSE_FACT: facts live in Chroma and Neo4j, not working memory.

    def _erase_user(self, op: MemoryOperation) -> None:
        """Delete every key of the user and append the audit entry, atomically."""
        pattern = self.keys.user(op.tenant_id, op.user_id, "*")
        found = list(self.client.scan_iter(match=pattern, count=500))
        described = self.audit.describe(op, self.store_name)
        self._erase([self.keys.erasures(op.tenant_id), *found], [described])

    def erasures(self, tenant_id: str) -> list[ErasureRecord]:
        """The tenant's audited erasures, oldest first (``ErasureAudit.erasures``)."""
        return self.audit.erasures(tenant_id)

    def recent_turns(self, tenant_id: str, user_id: str, session_id: str) -> list[WorkingTurn]:
        """The last turns of a session, oldest first."""
        turns = self.keys.user(tenant_id, user_id, "turns", session_id)
        raw = cast(list[str], self.client.zrange(turns, 0, -1))
        return [WorkingTurn.model_validate_json(item) for item in raw]

    def statuses(self, tenant_id: str, user_id: str) -> dict[str, Scalar]:
        """Every unexpired status of a user, by name."""
        prefix = self.keys.user(tenant_id, user_id, "status", "")
        names = sorted(self.client.scan_iter(match=prefix + "*", count=500))
        values = cast(list[str | None], self.client.mget(names)) if names else []
        return {
            name.removeprefix(prefix): json.loads(value)
            for name, value in zip(names, values, strict=True)
            if value is not None  # expired between the scan and the read
        }

    def pending(self, tenant_id: str, user_id: str, at: datetime | None = None) -> list[SearchHit]:
        """Pending items not yet expired at ``at`` (default now), soonest expiry first.

        ``extra`` holds the ``reason`` the review held the fact for and its
        ``expires_at`` (ISO 8601).
        """
        return [
            SearchHit.from_record(
                item.record,
                Tier.WORKING,
                extra={"reason": item.reason, "expires_at": item.expires_at.isoformat()},
            )
            for item in self.pending_items(tenant_id, user_id, at)
        ]

    def pending_items(
        self, tenant_id: str, user_id: str, at: datetime | None = None
    ) -> list[PendingEntry]:
        """The queued records themselves (review outcomes included), soonest expiry first."""
        pending = self.keys.user(tenant_id, user_id, "pending")
        moment = (at or self.clock()).timestamp()
        ids = cast(list[str], self.client.zrangebyscore(pending, f"({moment}", "+inf"))
        items = cast(list[str | None], self.client.hmget(f"{pending}:items", ids)) if ids else []
        # None: resolved between the two reads.
        return [PendingEntry.model_validate_json(item) for item in items if item is not None]

    def resolution(self, tenant_id: str, user_id: str, fact_id: str) -> str | None:
        """``confirmed`` / ``rejected`` once a pending fact was resolved, else None."""
        pending = self.keys.user(tenant_id, user_id, "pending")
        return cast(str | None, self.client.hget(f"{pending}:resolved", fact_id))

    def pending_users(self, tenant_id: str) -> list[str]:
        """The tenant's users with a pending queue (possibly of lapsed items only), sorted."""
        prefix = self.keys.user(tenant_id, "")
        users = set()
        for name in self.client.scan_iter(match=f"{prefix}*:pending", count=500):
            user = cast(str, name).removeprefix(prefix).removesuffix(":pending")
            if ":" not in user:  # not a session's turns of a session called "pending"
                users.add(user)
        return sorted(users)

    def review_decisions(self, tenant_id: str) -> list[ReviewEntry]:
        """The tenant's audited confirms and rejects, oldest first (``ReviewAudit.entries``)."""
        return self.reviews.entries(tenant_id)


class PendingEntry(Frozen):
    """One queued pending item as stored: the held record, why, and when it lapses."""

    record: MemoryRecord
    reason: str
    expires_at: AwareDatetime


class ErasureEntry(Frozen):
    """One store's application of one erase: ids, lineage, a count and times — no content."""

    event_id: str
    tenant_id: str
    user_id: str
    store: str
    removed: int = Field(ge=0)
    lineage: SourceLineage
    requested_at: AwareDatetime = Field(description="Event time of the forget request.")
    applied_at: AwareDatetime = Field(description="When the store applied the erase.")


class ErasureRecord(Frozen):
    """One erase event as an operator sees it: every store's count, summed over replays.

    An erase applied twice (the sink re-delivers a batch after a crash) leaves
    two entries, the second removing nothing, so the sums are what was removed.
    A store missing from ``removed`` has not applied the erase yet (spooled).
    """

    event_id: str
    tenant_id: str
    user_id: str
    lineage: SourceLineage
    requested_at: AwareDatetime
    applied_at: AwareDatetime = Field(description="The first application by any store.")
    removed: dict[str, int]


class ErasureAudit:
    """The per-tenant erasure audit stream: appended by the writers, listed by operators."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        namespace: str | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """The audit of ``namespace`` (the writers' namespace) on ``client``."""
        self.client = client
        self.keys = RedisKeys(namespace)
        self.clock = clock

    def describe(self, op: MemoryOperation, store: str) -> str:
        """``store``'s entry for applying the ERASE_USER ``op`` now, as JSON, without the count.

        The count travels as a separate stream field: the Redis writer's erase
        script learns it only as it deletes.
        """
        if op.op_type is not OpType.ERASE_USER:
            raise ValueError(f"{op.op_id} is {op.op_type.value}, not an erase")
        entry = ErasureEntry(
            event_id=op.lineage.event_id,
            tenant_id=op.tenant_id,
            user_id=op.user_id,
            store=store,
            removed=0,
            lineage=op.lineage,
            requested_at=op.at,
            applied_at=self.clock(),
        )
        return entry.model_dump_json(exclude={"removed"})

    def record(self, op: MemoryOperation, store: str, removed: int) -> None:
        """Append ``store``'s entry for ``op`` (for stores outside Redis, after their erase)."""
        self.client.xadd(
            self.keys.erasures(op.tenant_id),
            {"entry": self.describe(op, store), "removed": removed},
        )

    def entries(self, tenant_id: str) -> list[ErasureEntry]:
        """Every entry of the tenant, in append order."""
        raw = cast(
            list[tuple[str, dict[str, str]]],
            self.client.xrange(self.keys.erasures(tenant_id), "-", "+"),
        )
        return [
            ErasureEntry.model_validate(
                json.loads(fields["entry"]) | {"removed": fields["removed"]}
            )
            for _, fields in raw
        ]

    def erasures(self, tenant_id: str) -> list[ErasureRecord]:
        """The tenant's erase events, oldest first, each with its per-store counts."""
        grouped: dict[str, list[ErasureEntry]] = {}
        for entry in self.entries(tenant_id):
            grouped.setdefault(entry.event_id, []).append(entry)
        records = []
        for entries in grouped.values():
            first = entries[0]
            removed: dict[str, int] = {}
            for entry in entries:
                removed[entry.store] = removed.get(entry.store, 0) + entry.removed
            records.append(
                ErasureRecord(
                    event_id=first.event_id,
                    tenant_id=first.tenant_id,
                    user_id=first.user_id,
                    lineage=first.lineage,
                    requested_at=first.requested_at,
                    applied_at=first.applied_at,
                    removed=removed,
                )
            )
        return records


class ReviewEntry(Frozen):
    """One applied confirm or reject: ids, the resolution and who decided — no content."""

    event_id: str
    tenant_id: str
    user_id: str
    pending_id: str
    resolution: str  # confirmed | rejected
    reviewer_id: str | None = Field(
        default=None, description="The review console's reviewer; None for the user's own call."
    )
    lineage: SourceLineage
    decided_at: AwareDatetime = Field(description="Event time of the confirm/reject action.")
    applied_at: AwareDatetime = Field(description="When working memory applied it.")

    @classmethod
    def of(cls, op: MemoryOperation, applied_at: datetime) -> ReviewEntry:
        """The entry of the RESOLVE_PENDING ``op`` applied at ``applied_at``."""
        if op.op_type is not OpType.RESOLVE_PENDING or not op.target_fact_id or not op.resolution:
            raise ValueError(f"{op.op_id} is {op.op_type.value}, not a resolution")
        return cls(
            event_id=op.lineage.event_id,
            tenant_id=op.tenant_id,
            user_id=op.user_id,
            pending_id=op.target_fact_id,
            resolution=op.resolution,
            reviewer_id=op.lineage.reviewer_id,
            lineage=op.lineage,
            decided_at=op.at,
            applied_at=applied_at,
        )


class ReviewAudit:
    """The per-tenant review audit stream: appended by the Redis writer, listed by operators."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        namespace: str | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """The audit of ``namespace`` (the writer's namespace) on ``client``."""
        self.client = client
        self.keys = RedisKeys(namespace)
        self.clock = clock

    def describe(self, op: MemoryOperation) -> str:
        """The entry of applying the RESOLVE_PENDING ``op`` now, as JSON."""
        return ReviewEntry.of(op, self.clock()).model_dump_json()

    def entries(self, tenant_id: str) -> list[ReviewEntry]:
        """The tenant's decisions, oldest first, once each (a re-applied batch appends twice)."""
        raw = cast(
            list[tuple[str, dict[str, str]]],
            self.client.xrange(self.keys.reviews(tenant_id), "-", "+"),
        )
        seen: dict[str, ReviewEntry] = {}
        for _, fields in raw:
            entry = ReviewEntry.model_validate_json(fields["entry"])
            seen.setdefault(f"{entry.event_id}\x1f{entry.pending_id}", entry)
        return list(seen.values())


class RedisSpool:
    """Operations parked while a store is down or slow, replayed in arrival order.

    ``drain`` deletes entries only after ``apply`` returned, so a crash mid-drain
    replays them (harmless: every write is idempotent) rather than losing them.
    """

    def __init__(
        self, client: redis.Redis, *, namespace: str | None = None, name: str | None = None
    ) -> None:
        """The spool ``name`` of ``namespace`` (e.g. ``name="chroma"``: one stream per store).

        Without a name it is the namespace's single unnamed stream, as before names existed.
        """
        self.client = client
        self.key = RedisKeys(namespace).spool(name)

    def spool(self, ops: Sequence[MemoryOperation]) -> None:
        """Append operations at the end of the spool."""
        pipe = self.client.pipeline(transaction=True)
        for op in ops:
            pipe.xadd(self.key, {"op": op.model_dump_json()})
        pipe.execute()

    def spool_depth(self) -> int:
        """How many operations wait in the spool (a metric, docs/guarantees.md)."""
        return cast(int, self.client.xlen(self.key))

    def peek(self, count: int) -> list[MemoryOperation]:
        """The ``count`` oldest spooled operations, left in the spool."""
        entries = cast(
            list[tuple[str, dict[str, str]]], self.client.xrange(self.key, "-", "+", count=count)
        )
        return [MemoryOperation.model_validate_json(fields["op"]) for _, fields in entries]

    def drain(
        self, apply: Callable[[list[MemoryOperation]], bool], batch_size: int = DEFAULT_CHUNK_SIZE
    ) -> int:
        """Feed the spool to ``apply`` oldest first, ``batch_size`` at a time; returns count.

        A batch ``apply`` raises on stays spooled, with the rest, and the error
        propagates. A batch it returns False on was applied, so it leaves the
        spool, and the drain stops there: the caller wants no more for now.
        """
        drained = 0
        while entries := cast(
            list[tuple[str, dict[str, str]]],
            self.client.xrange(self.key, "-", "+", count=batch_size),
        ):
            batch = [MemoryOperation.model_validate_json(fields["op"]) for _, fields in entries]
            go_on = apply(batch)
            self.client.xdel(self.key, *[entry_id for entry_id, _ in entries])
            drained += len(entries)
            if not go_on:
                break
        return drained
