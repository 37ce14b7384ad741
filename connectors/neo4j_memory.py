"""Semantic memory in Neo4j: users, fact versions with validity, entities, supersedes links.

Graph model (every node carries ``ns`` — the namespace, "" for live memory — and
``tenant_id``)::

    (:User {tenant_id, user_id})-[:HAS_FACT]->(:Fact {fact_id, chain_id, subject,
        predicate, object, polarity, kind, text, confidence, version, valid_from,
        valid_until, expires_at, recorded_at, supersedes, state, lineage_*})
    (:Fact)-[:ABOUT {role: "subject" | "object"}]->(:Entity {tenant_id, name})
    (:Fact)-[:SUPERSEDES]->(:Fact)          newer version -> the version it closed

Relations are reified as Fact nodes, so each version keeps its own validity and
lineage. Relation-style access (preference, commitment, restriction, status) is
:meth:`Neo4jMemory.relations`: the current facts of the matching
:class:`~schemas.memory.MemoryKind` (a restriction is a ``rule``), each naming the
object entity it points at. Queries live in :mod:`connectors.neo4j_cypher`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, overload

import neo4j
from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

from connectors import neo4j_cypher as cypher
from connectors.protocols import DEFAULT_CHUNK_SIZE, DEFAULT_LATENCY_BUDGET_S, BatchingSink
from connectors.redis_memory import ErasureAudit
from schemas.hits import SearchHit
from schemas.memory import MemoryKind, MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType

# How long a write transaction is retried before the error surfaces as backpressure.
# The driver's default is 30 s; docs/guarantees.md spools once a write takes over 200 ms,
# so a store that is down should be reported within about a second.
RETRY_TIME_S = 1.0


class Relation(StrEnum):
    """The relation families of docs/architecture.md, Tiers and the fact kind each one reads."""

    PREFERENCE = "preference"
    COMMITMENT = "commitment"
    RESTRICTION = "restriction"
    STATUS = "status"


_RELATION_KIND = {
    Relation.PREFERENCE: MemoryKind.PREFERENCE,
    Relation.COMMITMENT: MemoryKind.COMMITMENT,
    Relation.RESTRICTION: MemoryKind.RULE,
    Relation.STATUS: MemoryKind.STATUS,
}


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _row(record: MemoryRecord) -> list[Any]:
    """Query parameters of one version, in the order of ``cypher.FACT_COLUMNS``."""
    values: dict[str, Any] = {
        "fact_id": record.fact_id,
        "valid_until": _iso(record.valid_until),
        "tenant_id": record.tenant_id,
        "user_id": record.user_id,
        "chain_id": record.chain_id,
        "session_id": record.session_id,
        "subject": record.subject,
        "predicate": record.predicate,
        "object": record.object,
        "polarity": record.polarity.value,
        "kind": record.kind.value,
        "text": record.text,
        "intent": record.intent,
        "confidence": record.confidence,
        "authoritative": record.authoritative,
        "confirmations": record.confirmations,
        "version": record.version,
        "valid_from": _iso(record.valid_from),
        "recorded_at": _iso(record.recorded_at),
        "expires_at": _iso(record.expires_at),
        "supersedes": record.supersedes,
        "state": record.state.value,
        "lineage_topic": record.lineage.topic,
        "lineage_partition": record.lineage.partition,
        "lineage_offset": record.lineage.offset,
        "lineage_event_id": record.lineage.event_id,
        "lineage_turn_id": record.lineage.turn_id,
        "lineage_reviewer_id": record.lineage.reviewer_id,
    }
    return [values[name] for name in cypher.FACT_COLUMNS]


def _iso(value: datetime | None) -> str | None:
    # In UTC: Neo4j (java.time) accepts offsets up to ±18:00 only (see _utc).
    return _utc(value).isoformat() if value is not None else None


@overload
def _utc(value: datetime) -> datetime: ...
@overload
def _utc(value: None) -> None: ...
def _utc(value: datetime | None) -> datetime | None:
    # Neo4j (java.time) accepts UTC offsets up to ±18:00 only, while Python and
    # ISO 8601 allow up to ±23:59; the instant is what matters, so send UTC.
    return value.astimezone(UTC) if value is not None else None


def _native(value: Any) -> Any:
    return value.to_native() if hasattr(value, "to_native") else value


def _hit(node: Mapping[str, Any]) -> SearchHit:
    f = {key: _native(value) for key, value in dict(node).items()}
    return SearchHit.model_validate(
        {
            "tier": Tier.SEMANTIC,
            **{key: f[key] for key in SearchHit.model_fields if key in f},
            "lineage": {
                "topic": f["lineage_topic"],
                "partition": f["lineage_partition"],
                "offset": f["lineage_offset"],
                "event_id": f["lineage_event_id"],
                "turn_id": f.get("lineage_turn_id"),
                "reviewer_id": f.get("lineage_reviewer_id"),
            },
            "extra": {"confidence": f["confidence"], "state": f["state"]},
        }
    )


def _links(record: MemoryRecord) -> tuple[str, str, str, str, str | None]:
    """What a version's node is linked by (its owner, entities and predecessor)."""
    return (record.tenant_id, record.user_id, record.subject, record.object, record.supersedes)


class _Run:
    """A run of fact writes for one WRITE_FACTS statement, one row per version.

    Several writes of one version in a chunk (an upsert, then its close) fold
    into one row, as applying them one by one would leave the node: the later
    write's properties, a close never undone. So the statement writes each node
    once, and no two of its rows name the same node (which lets it CREATE the
    links of the nodes it creates). A write that cannot fold, one of the same id
    linked otherwise (another tenant, user, subject, object or predecessor),
    needs a statement of its own after this one.
    """

    def __init__(self) -> None:
        self.records: dict[str, MemoryRecord] = {}

    def add(self, record: MemoryRecord) -> list[list[Any]]:
        """Fold ``record`` into the run; the rows of the run it ends, if it cannot fold."""
        earlier = self.records.get(record.fact_id)
        if earlier is not None and _links(earlier) != _links(record):
            ended = self.take()
            self.records[record.fact_id] = record
            return ended
        if earlier is not None and record.valid_until is None and earlier.valid_until is not None:
            record = record.model_copy(update={"valid_until": earlier.valid_until})
        self.records[record.fact_id] = record  # a folded write keeps the first one's place
        return []

    def take(self) -> list[list[Any]]:
        """The run's rows; the run is empty afterwards."""
        rows = [_row(record) for record in self.records.values()]
        self.records = {}
        return rows


class Neo4jMemory(BatchingSink):
    """Writer and reader of the semantic tier."""

    tier = Tier.SEMANTIC
    store_name = "neo4j"

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        namespace: str | None = None,
        clock: Callable[[], datetime] = _utcnow,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        latency_budget_s: float = DEFAULT_LATENCY_BUDGET_S,
        erasure_audit: ErasureAudit | None = None,
    ) -> None:
        super().__init__(chunk_size=chunk_size, latency_budget_s=latency_budget_s)
        self.driver = driver
        self.erasure_audit = erasure_audit
        self.database = database
        self.namespace = namespace or ""  # stored on every node: "" is live memory
        self.clock = clock

    @classmethod
    def connect(
        cls,
        uri: str,
        auth: tuple[str, str] | None = None,
        *,
        retry_time_s: float = RETRY_TIME_S,
        **kwargs: Any,
    ) -> Neo4jMemory:
        """A writer on a new driver for ``uri`` (``bolt://host:port``)."""
        # Notifications off: on an empty graph every read names each label and
        # property "not existing yet" as a warning, one log line per query.
        driver = neo4j.GraphDatabase.driver(
            uri,
            auth=auth,
            max_transaction_retry_time=retry_time_s,
            notifications_min_severity="OFF",
        )
        return cls(driver, **kwargs)

    def close(self) -> None:
        """Close the driver."""
        self.driver.close()

    def ping(self) -> None:
        """Raise unless the server accepts a Bolt session now (a readiness probe)."""
        self.driver.verify_connectivity()

    def setup(self) -> None:
        """Create the uniqueness constraints and the chain index (idempotent)."""
        for statement in cypher.CONSTRAINTS:
            self.driver.execute_query(statement, database_=self.database)

    def _is_transient(self, error: Exception) -> bool:
        return isinstance(error, ServiceUnavailable | SessionExpired | TransientError)

    def _apply(self, ops: Sequence[MemoryOperation]) -> None:
        with self.driver.session(database=self.database) as session:
            erased = session.execute_write(self._apply_in, ops)
        # Audited once the transaction committed: execute_write may run
        # _apply_in again after a transient error, and a rolled-back erase
        # removed nothing.
        if self.erasure_audit is not None:
            for op, removed in erased:
                self.erasure_audit.record(op, self.store_name, removed)

    def _apply_in(
        self, tx: neo4j.ManagedTransaction, ops: Sequence[MemoryOperation]
    ) -> list[tuple[MemoryOperation, int]]:
        """One transaction: runs of fact writes go as one UNWIND each; an erase splits them.

        Returns each erase with the nodes it deleted (user, fact versions, orphaned entities).
        """
        run = _Run()
        erased: list[tuple[MemoryOperation, int]] = []
        for op in ops:
            if op.op_type is OpType.ERASE_USER:
                self._write_rows(tx, run.take())
                params = {"ns": self.namespace, "tenant_id": op.tenant_id, "user_id": op.user_id}
                summary = tx.run(cypher.ERASE_USER, params).consume()
                erased.append((op, summary.counters.nodes_deleted))
            elif op.op_type in (OpType.UPSERT_FACT, OpType.CLOSE_FACT) and op.record:
                self._write_rows(tx, run.add(op.record))  # a run it ends, if any
            # Pending items, turns and statuses live in Redis only.
        self._write_rows(tx, run.take())
        return erased

    def _write_rows(self, tx: neo4j.ManagedTransaction, rows: list[list[Any]]) -> None:
        if rows:
            tx.run(cypher.WRITE_FACTS, rows=rows, ns=self.namespace).consume()

    def _read(self, query: str, **params: Any) -> list[neo4j.Record]:
        records, _, _ = self.driver.execute_query(
            query,
            parameters_={"ns": self.namespace, **params},
            database_=self.database,
            routing_=neo4j.RoutingControl.READ,
        )
        return list(records)

    def facts_as_of(
        self,
        tenant_id: str,
        user_id: str,
        at: datetime,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> list[SearchHit]:
        """The versions of a user's facts that held at ``at`` (validity and TTL)."""
        found = self._read(
            cypher.FACTS_AS_OF,
            tenant_id=tenant_id,
            user_id=user_id,
            at=_utc(at),
            kinds=[k.value for k in kinds] if kinds is not None else None,
        )
        return [_hit(r["f"]) for r in found]

    def current_facts(
        self, tenant_id: str, user_id: str, kinds: Sequence[MemoryKind] | None = None
    ) -> list[SearchHit]:
        """The versions that hold now (by the injected clock)."""
        return self.facts_as_of(tenant_id, user_id, self.clock(), kinds)

    def relations(
        self, tenant_id: str, user_id: str, relation: Relation, at: datetime | None = None
    ) -> list[SearchHit]:
        """A user's current relations of one family (e.g. every preference)."""
        return self.facts_as_of(tenant_id, user_id, at or self.clock(), [_RELATION_KIND[relation]])

    def chain(self, tenant_id: str, user_id: str, subject: str, predicate: str) -> list[SearchHit]:
        """Every version of one (subject, predicate), oldest first.

        A multi-valued predicate gives all its chains, one per object.
        """
        found = self._read(
            cypher.CHAIN,
            tenant_id=tenant_id,
            user_id=user_id,
            subject=subject,
            predicate=predicate,
        )
        return [_hit(r["f"]) for r in found]

    def fact(self, fact_id: str) -> SearchHit | None:
        """One version by id in any tenant of this namespace (an operator's look-up).

        Unlike every other read, this one is not scoped to a tenant: it serves
        tools such as ``memstream trace`` that start from a bare fact id, never
        an agent's request. None when no Fact node has that id.
        """
        found = self._read(cypher.FACT_BY_ID, fact_id=fact_id)
        return _hit(found[0]["f"]) if found else None

    def entity_names(self, tenant_id: str) -> list[str]:
        """The names of a tenant's entities."""
        return [r["name"] for r in self._read(cypher.ENTITY_NAMES, tenant_id=tenant_id)]

    def snapshot(self, tenant_id: str) -> list[dict[str, Any]]:
        """Every node and edge of a tenant, as sorted plain data (for audits and tests)."""
        found = self._read(cypher.TENANT_SNAPSHOT, tenant_id=tenant_id)
        rows = [
            {
                "labels": sorted(r["labels"]),
                "props": {k: _native(v) for k, v in r["props"].items()},
                "rel": r["rel"],
                "rel_props": r["rel_props"],
                "target": {k: _native(v) for k, v in (r["target"] or {}).items()},
            }
            for r in found
        ]
        return sorted(rows, key=repr)
