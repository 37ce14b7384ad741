"""Everything one store namespace holds about a user, read whole, for audits.

The tier connectors read what agents need (current facts, one chain, the
pending items not yet expired). ``memstream audit diff`` compares two
namespaces user by user, and needs a few whole-namespace reads besides, which
live here (on the connectors' own clients and key layout):

- which users a namespace holds, in any of the three stores;
- every fact version of a user in Neo4j (all versions, closed ones too);
- a user's sessions in working memory, and its resolved pending items.

A :class:`UserDump` is plain JSON-ready data: two dumps compare with ``==``.
Write-time bookkeeping that differs between two identical histories is left
out: the namespace itself and Chroma's ``last_retrieved_at`` (when an agent last
read the item). Whether a Chroma item sits in the live or the archive
collection is left out too: archiving follows retrieval, not the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from connectors.chroma_memory import ChromaMemory
from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisMemory
from schemas._base import Scalar
from schemas.episodes import StoredEpisode
from schemas.hits import SearchHit

# Every user node of a namespace (a user with a fact in the semantic tier).
NAMESPACE_USERS = """
MATCH (u:User {ns: $ns}) RETURN u.tenant_id AS tenant_id, u.user_id AS user_id
"""
# Every version of every fact of one user, closed ones included.
USER_FACTS = """
MATCH (:User {ns: $ns, tenant_id: $tenant_id, user_id: $user_id})-[:HAS_FACT]->(f:Fact)
RETURN properties(f) AS props ORDER BY f.fact_id
"""
# A pending item expiring after this moment is listed: every item ever queued.
_EVERY_PENDING = datetime(1970, 1, 1, tzinfo=UTC)
# SearchHit fields that say where and when a hit was read, not what it holds.
_READ_FIELDS = {"tier", "score", "extra"}

User = tuple[str, str]  # (tenant_id, user_id)


@dataclass(frozen=True)
class UserDump:
    """One user's memory in one namespace, as comparable plain data."""

    tenant_id: str
    user_id: str
    episodic: dict[str, dict[str, Any]] = field(default_factory=dict)  # fact_id -> version
    semantic: dict[str, dict[str, Any]] = field(default_factory=dict)  # fact_id -> node props
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # fact_id -> item
    resolved: dict[str, str] = field(default_factory=dict)  # fact_id -> confirmed | rejected
    statuses: dict[str, Scalar] = field(default_factory=dict)
    turns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # session -> turns
    episodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # episode_id -> episode


def episode_entry(stored: StoredEpisode) -> dict[str, Any]:
    """An episode as dump data: the model without its vector, and whether it is outdated."""
    return {
        **stored.episode.model_dump(mode="json", exclude={"vector"}),
        "outdated": stored.outdated,
        "outdated_by": list(stored.outdated_by),
    }


def _plain(value: Any) -> Any:
    """A Neo4j property as JSON-ready data (temporal values as ISO 8601 in UTC)."""
    native = value.to_native() if hasattr(value, "to_native") else value
    if isinstance(native, datetime):
        return native.astimezone(UTC).isoformat()
    return native


def _version(hit: SearchHit) -> dict[str, Any]:
    return hit.model_dump(mode="json", exclude=_READ_FIELDS)


def namespace_users(
    working: RedisMemory, episodic: ChromaMemory, semantic: Neo4jMemory
) -> list[User]:
    """Every (tenant, user) with memory in any store of the readers' namespace, sorted."""
    users: set[User] = set()
    root = working.keys.root + ":"
    for key in working.client.scan_iter(match=root + "*", count=500):
        parts = cast(str, key).removeprefix(root).split(":")
        if len(parts) >= 3:  # tenant:user:kind[...]; the spools have one or two parts
            users.add((parts[0], parts[1]))
    namespace = episodic.namespace or ""
    for collection in episodic.client.list_collections():
        meta = collection.metadata or {}
        if meta.get("memstream_namespace") != namespace:
            continue
        tenant = str(meta["memstream_tenant"])
        found = collection.get(include=["metadatas"])
        # Every item names its user, but for the revision records of episode collections.
        users.update((tenant, str(m["user"])) for m in found["metadatas"] or [] if "user" in m)
    records, _, _ = semantic.driver.execute_query(
        NAMESPACE_USERS, ns=semantic.namespace, database_=semantic.database
    )
    users.update((str(r["tenant_id"]), str(r["user_id"])) for r in records)
    return sorted(users)


def dump_user(
    working: RedisMemory,
    episodic: ChromaMemory,
    semantic: Neo4jMemory,
    tenant_id: str,
    user_id: str,
) -> UserDump:
    """Read all of one user's memory from the three stores of the readers' namespace."""
    versions = [
        *episodic.get(tenant_id, user_id),
        *episodic.get(tenant_id, user_id, archived=True),
    ]
    records, _, _ = semantic.driver.execute_query(
        USER_FACTS,
        ns=semantic.namespace,
        tenant_id=tenant_id,
        user_id=user_id,
        database_=semantic.database,
    )
    nodes = [{k: _plain(v) for k, v in r["props"].items() if k != "ns"} for r in records]
    pending = working.pending(tenant_id, user_id, at=_EVERY_PENDING)
    return UserDump(
        tenant_id=tenant_id,
        user_id=user_id,
        episodic={h.fact_id: _version(h) for h in versions},
        semantic={str(n["fact_id"]): n for n in nodes},
        pending={h.fact_id: h.model_dump(mode="json", exclude={"tier", "score"}) for h in pending},
        resolved=_resolved(working, tenant_id, user_id),
        statuses=working.statuses(tenant_id, user_id),
        turns={
            session: [
                t.model_dump(mode="json") for t in working.recent_turns(tenant_id, user_id, session)
            ]
            for session in _sessions(working, tenant_id, user_id)
        },
        episodes={
            s.episode.episode_id: episode_entry(s)
            for s in episodic.user_episodes(tenant_id, user_id)
        },
    )


def _sessions(working: RedisMemory, tenant_id: str, user_id: str) -> list[str]:
    prefix = working.keys.user(tenant_id, user_id, "turns", "")
    found = working.client.scan_iter(match=prefix + "*", count=500)
    return sorted(cast(str, key).removeprefix(prefix) for key in found)


def _resolved(working: RedisMemory, tenant_id: str, user_id: str) -> dict[str, str]:
    # RedisMemory keeps resolutions in "<pending>:resolved" (connectors/redis_memory.py).
    key = working.keys.user(tenant_id, user_id, "pending", "resolved")
    return dict(cast(dict[str, str], working.client.hgetall(key)))
