"""``memstream trace`` logic: where one fact version came from, read back from Kafka and the stores.

A trace starts from a bare fact id (an operator tool: any tenant) and gathers

1. the stored version — Neo4j holds promoted (semantic) versions, Chroma every
   committed one; the first store that has the id names the tenant and user;
2. the source event, fetched at the lineage's topic/partition/offset by an
   assigned consumer (no group, nothing committed) and checked against the
   lineage's event id;
3. the stage decisions: parse and extract are *recomputed* by running the pure
   stages again on the fetched event (for a dialogue turn, in the context of the
   session's earlier turns on the same partition, as the ingest job keeps it in
   keyed state); review is *recorded*: the outcomes the reviewer wrote into the
   record, read from the ``memory.ops`` operations that wrote the fact;
4. the whole version chain of the fact's (subject, predicate).

A source record that is gone (below the log start) or does not match still
yields a trace of what the stores know; ``Trace.source.problem`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.chroma_memory import ChromaMemory
from connectors.kafka_io import read_topic
from connectors.neo4j_memory import Neo4jMemory
from jobs.ops.trace_decisions import Decisions, StageLoader, recompute
from jobs.ops.trace_source import SourceFetch, fetch_source, session_context
from schemas._base import partition_key
from schemas.hits import SearchHit
from schemas.ops import MemoryOperation
from schemas.topics import Topics

# Bound on reading the retained memory.ops topic: read_topic's own default
# (connectors/kafka_io.py), so a broker that stops answering fails the trace
# with TimeoutError instead of hanging it.
OPS_READ_TIMEOUT_S = 60.0


class UnknownFact(LookupError):
    """No store of the namespace holds the fact id."""

    def __init__(self, fact_id: str, namespace: str) -> None:
        self.fact_id = fact_id
        self.namespace = namespace
        where = f"namespace {namespace!r}" if namespace else "live memory (namespace '')"
        hint = (
            ""
            if fact_id.startswith(("f_", "e_"))
            else " Fact ids start with 'f_', remembered turns with 'e_'."
        )
        super().__init__(
            f"no memory {fact_id!r} in {where} (looked in Neo4j and Chroma).{hint} "
            "Pass --namespace for a shadow or test namespace; a pending item is not "
            "a stored fact until it is confirmed."
        )


@dataclass(frozen=True)
class OpSighting:
    """An operation on ``memory.ops`` that wrote (or resolved) the fact."""

    partition: int
    offset: int
    op: MemoryOperation


@dataclass(frozen=True)
class Trace:
    """Everything known about one fact version."""

    fact: SearchHit
    found_in: list[str]
    source: SourceFetch
    ops: list[OpSighting]
    chain: list[SearchHit]
    decisions: Decisions | None = None
    notes: list[str] = field(default_factory=list)


def find_fact(
    fact_id: str, neo4j: Neo4jMemory, chroma: ChromaMemory
) -> tuple[SearchHit, list[str]]:
    """The stored version and the stores holding it; raises UnknownFact.

    Neo4j answers from its (ns, fact_id) index; its hit names the tenant and
    user, so Chroma is asked with the connector's typed read. Only a version
    Neo4j does not hold (not promoted) needs the scan of Chroma's collections.
    """
    semantic = neo4j.fact(fact_id)
    if semantic is None:
        episodic = _chroma_scan(chroma, fact_id)
        if episodic is None:
            raise UnknownFact(fact_id, neo4j.namespace)
        return episodic, ["chroma"]
    found_in = ["neo4j"]
    for archived in (False, True):
        hits = chroma.get(semantic.tenant_id, semantic.user_id, archived=archived)
        if any(h.fact_id == fact_id for h in hits):
            found_in.append("chroma")
    # Neo4j's hit first: its node keeps confidence and state, Chroma's hit does not.
    return semantic, found_in


def _chroma_scan(chroma: ChromaMemory, fact_id: str) -> SearchHit | None:
    """The version in any tenant's collection of the namespace (live or archived).

    One id look-up per collection of the namespace (a collection per tenant):
    collections name their tenant in their metadata, and the tenant and user
    found lead to the connector's own typed read.
    """
    namespace = chroma.namespace or ""
    for collection in chroma.client.list_collections():
        meta = collection.metadata or {}
        if meta.get("memstream_namespace") != namespace:
            continue
        got = collection.get(ids=[fact_id], include=["metadatas"])
        if got["ids"] and got["metadatas"]:
            tenant, user = str(meta["memstream_tenant"]), str(got["metadatas"][0]["user"])
            archived = bool(meta.get("memstream_archive"))
            hits = chroma.get(tenant, user, archived=archived)
            return next((h for h in hits if h.fact_id == fact_id), None)
    return None


def ops_of(bootstrap: str, namespace: str, fact: SearchHit) -> list[OpSighting]:
    """The operations on ``<ns>memory.ops`` that name the fact, in offset order.

    Operations are keyed ``tenant:user``, so only that key's records are parsed.
    The whole topic is read (its retained part): which partition an engine
    wrote a key to is the engine's business, and an audit must not miss one.
    """
    key = partition_key(fact.tenant_id, fact.user_id)
    sightings = []
    for record in read_topic(bootstrap, Topics(namespace).memory_ops, timeout_s=OPS_READ_TIMEOUT_S):
        if record.key != key:
            continue
        op = MemoryOperation.model_validate_json(record.value)
        named = op.record.fact_id if op.record is not None else op.target_fact_id
        if named == fact.fact_id:
            sightings.append(OpSighting(record.partition, record.offset, op))
    return sorted(sightings, key=lambda s: (s.partition, s.offset))


def version_chain(fact: SearchHit, neo4j: Neo4jMemory, chroma: ChromaMemory) -> list[SearchHit]:
    """Every version of the fact's (subject, predicate), from both long-term tiers, oldest first.

    Chroma holds every committed version, Neo4j the promoted ones; a version in
    both is shown once (Neo4j's copy, as in ``find_fact``).
    """
    args = (fact.tenant_id, fact.user_id, fact.subject, fact.predicate)
    merged = {h.fact_id: h for h in chroma.chain(*args)}
    merged.update({h.fact_id: h for h in neo4j.chain(*args)})
    return sorted(merged.values(), key=lambda h: (h.version, h.valid_from, h.fact_id))


def trace(
    fact_id: str,
    *,
    bootstrap: str,
    topic_namespace: str,
    neo4j: Neo4jMemory,
    chroma: ChromaMemory,
    stages: StageLoader,
) -> Trace:
    """Trace one fact version; raises UnknownFact when no store holds it.

    The stores are opened on the run's store namespace; ``topic_namespace``
    prefixes its topics (equal for ``memstream run --namespace``; a replay
    writes live topics into a shadow store namespace).
    """
    fact, found_in = find_fact(fact_id, neo4j, chroma)
    assert fact.lineage is not None  # noqa: S101 - both stores' readers always set it
    source = fetch_source(bootstrap, fact.lineage, topic_namespace)
    notes: list[str] = []
    ops_topic = Topics(topic_namespace).memory_ops
    try:
        ops = ops_of(bootstrap, topic_namespace, fact)
    except KeyError:  # read_topic's "no such topic"
        ops = []
        notes.append(f"topic {ops_topic} does not exist: the review outcomes are not recorded")
    else:
        if not ops:
            notes.append(
                f"no operation on {ops_topic} names this fact (removed by retention, or "
                "written without that topic): its review outcomes are recorded nowhere else"
            )
    decisions = None
    if source.event is not None and source.problem is None:
        context = session_context(bootstrap, source)
        decisions = recompute(stages, source.event, context, fact)
    chain = version_chain(fact, neo4j, chroma)
    return Trace(fact, found_in, source, ops, chain, decisions, notes)
