"""Every Cypher statement of the semantic tier, parameterised, one per aggregate operation.

No statement is ever built from data: values (entity names included) only travel
as parameters, so text such as ``x'}) DETACH DELETE n //`` is stored as text.
Every MATCH/MERGE names ``ns`` (the namespace, "" for live memory) and the
tenant id, so one tenant's statements can never reach another tenant's nodes.
"""

from __future__ import annotations

# Composite property uniqueness constraints exist in Neo4j 5 Community (key
# constraints would need Enterprise). ``IF NOT EXISTS`` makes setup idempotent.
CONSTRAINTS = (
    "CREATE CONSTRAINT ms_user IF NOT EXISTS "
    "FOR (u:User) REQUIRE (u.ns, u.tenant_id, u.user_id) IS UNIQUE",
    "CREATE CONSTRAINT ms_fact IF NOT EXISTS FOR (f:Fact) REQUIRE (f.ns, f.fact_id) IS UNIQUE",
    "CREATE CONSTRAINT ms_entity IF NOT EXISTS "
    "FOR (e:Entity) REQUIRE (e.ns, e.tenant_id, e.name) IS UNIQUE",
    "CREATE INDEX ms_fact_chain IF NOT EXISTS FOR (f:Fact) ON (f.ns, f.tenant_id, f.chain_id)",
    # LINK_SUPERSEDES looks versions up by the id they supersede; without this
    # index that is a label scan per row (the batched writer ran ~10x slower).
    "CREATE INDEX ms_fact_supersedes IF NOT EXISTS FOR (f:Fact) ON (f.supersedes)",
)

# A fact row travels as a list of plain values in this order, not as a map of
# Neo4j DateTimes: the Python driver packs every map key and every DateTime
# field by field in pure Python, which was ~1 ms a row and most of a chunk's
# time; a list with ISO-8601 text times packs ~5x faster and ``datetime()``
# restores the same instant in the server. ``fact_id`` and ``valid_until`` are
# written apart from the other properties (see UPSERT_FACTS).
FACT_COLUMNS = (
    "fact_id",
    "valid_until",
    "tenant_id",
    "user_id",
    "chain_id",
    "session_id",
    "subject",
    "predicate",
    "object",
    "polarity",
    "kind",
    "text",
    "intent",
    "confidence",
    "authoritative",
    "confirmations",
    "version",
    "valid_from",
    "recorded_at",
    "expires_at",
    "supersedes",
    "state",
    "lineage_topic",
    "lineage_partition",
    "lineage_offset",
    "lineage_event_id",
    "lineage_turn_id",
    "lineage_reviewer_id",
)
TIME_COLUMNS = frozenset({"valid_until", "valid_from", "recorded_at", "expires_at"})


def _column(name: str) -> str:
    value = f"r[{FACT_COLUMNS.index(name)}]"
    return f"datetime({value})" if name in TIME_COLUMNS else value


# The properties SET by ``+=``; a None (null) removes the property, so a replay
# converges on the record.
_PROPS = ", ".join(f"{name}: {_column(name)}" for name in FACT_COLUMNS[2:])

# One row per fact version: the writer folds a chunk's writes of one version
# into one row (connectors/neo4j_memory.py), so no two rows name the same node.
# A version already stored is updated in place; its valid_until only ever goes
# from open to a time (a replayed upsert of a closed version does not re-open
# it). A Fact node of another tenant with the same id is left untouched (the
# WHERE after the MERGE). A version already stored with the same user, subject,
# object and supersedes (a close, a replay) already has its links: they were
# merged in the statement that set those properties, and only an erase removes
# them, with the version. A node this statement creates (no user_id yet) has no
# relationship at all, so its HAS_FACT and ABOUT links are CREATEd: a MERGE would
# look for them first and lock both ends.
# Then, once every row is written (the aggregation is a barrier), each new
# version is linked to the one it supersedes, in both directions so the order
# in which the two versions arrive does not matter; those stay MERGEs, as two
# new versions of one chain in one statement would each link the pair.
# One statement: one round trip.
WRITE_FACTS = f"""
UNWIND $rows AS r
WITH r, {{{_PROPS}}} AS props
MERGE (f:Fact {{ns: $ns, fact_id: r[0]}})
  ON CREATE SET f.tenant_id = props.tenant_id
WITH f, r, props WHERE f.tenant_id = props.tenant_id
WITH f, r, props, f.user_id IS NULL AS created, coalesce(
  f.user_id = props.user_id AND f.subject = props.subject AND f.object = props.object
  AND coalesce(f.supersedes, '') = coalesce(props.supersedes, ''), false) AS linked
SET f += props, f.valid_until = coalesce({_column("valid_until")}, f.valid_until)
WITH f, r, props, created, linked
CALL (f, props, created, linked) {{
  WITH f, props, created WHERE NOT linked
  MERGE (u:User {{ns: $ns, tenant_id: props.tenant_id, user_id: props.user_id}})
  MERGE (s:Entity {{ns: $ns, tenant_id: props.tenant_id, name: props.subject}})
  FOREACH (_ IN CASE WHEN created THEN [1] ELSE [] END |
    CREATE (u)-[:HAS_FACT]->(f)
    CREATE (f)-[:ABOUT {{role: 'subject'}}]->(s))
  FOREACH (_ IN CASE WHEN created THEN [] ELSE [1] END |
    MERGE (u)-[:HAS_FACT]->(f)
    MERGE (f)-[:ABOUT {{role: 'subject'}}]->(s))
  FOREACH (name IN CASE WHEN props.object = '' THEN [] ELSE [props.object] END |
    MERGE (o:Entity {{ns: $ns, tenant_id: props.tenant_id, name: name}})
    FOREACH (_ IN CASE WHEN created THEN [1] ELSE [] END |
      CREATE (f)-[:ABOUT {{role: 'object'}}]->(o))
    FOREACH (_ IN CASE WHEN created THEN [] ELSE [1] END |
      MERGE (f)-[:ABOUT {{role: 'object'}}]->(o)))
}}
WITH collect(CASE WHEN linked THEN null ELSE r END) AS fresh
UNWIND fresh AS r
WITH DISTINCT {_column("tenant_id")} AS tenant_id, r[0] AS fact_id,
  {_column("supersedes")} AS supersedes
MATCH (f:Fact {{ns: $ns, tenant_id: tenant_id, fact_id: fact_id}})
OPTIONAL MATCH (older:Fact {{ns: $ns, tenant_id: tenant_id, fact_id: supersedes}})
OPTIONAL MATCH (newer:Fact {{ns: $ns, tenant_id: tenant_id, supersedes: fact_id}})
FOREACH (o IN CASE WHEN older IS NULL THEN [] ELSE [older] END | MERGE (f)-[:SUPERSEDES]->(o))
FOREACH (n IN CASE WHEN newer IS NULL THEN [] ELSE [newer] END | MERGE (n)-[:SUPERSEDES]->(f))
"""

# Forgets a user: the user node, every fact version, and the entities no other
# fact of the tenant is about any more.
ERASE_USER = """
MATCH (u:User {ns: $ns, tenant_id: $tenant_id, user_id: $user_id})
OPTIONAL MATCH (u)-[:HAS_FACT]->(f:Fact)
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
WITH u, collect(DISTINCT f) AS facts, collect(DISTINCT e) AS entities
FOREACH (f IN facts | DETACH DELETE f)
DETACH DELETE u
WITH entities
UNWIND entities AS e
WITH e WHERE NOT (e)<-[:ABOUT]-()
DELETE e
"""

# The versions that hold at $at (validity and TTL), optionally of some kinds only.
FACTS_AS_OF = """
MATCH (:User {ns: $ns, tenant_id: $tenant_id, user_id: $user_id})-[:HAS_FACT]->(f:Fact)
WHERE f.valid_from <= $at
  AND (f.valid_until IS NULL OR f.valid_until > $at)
  AND (f.expires_at IS NULL OR f.expires_at > $at)
  AND ($kinds IS NULL OR f.kind IN $kinds)
RETURN f ORDER BY f.subject, f.predicate, f.version, f.fact_id
"""

# Every version of one (subject, predicate) chain, oldest first.
# By subject and predicate, not chain_id: a multi-valued predicate ("likes")
# keeps one chain per object (pipelines/review/rules.toml), and the history of
# (subject, predicate) is all of them.
CHAIN = """
MATCH (f:Fact {ns: $ns, tenant_id: $tenant_id})
WHERE f.user_id = $user_id
  AND toLower(f.subject) = toLower($subject) AND toLower(f.predicate) = toLower($predicate)
RETURN f ORDER BY f.version, f.valid_from, f.fact_id
"""

# One version by id, whichever tenant holds it: the operator's look-up
# (``memstream trace``) starts from a bare fact id. The ms_fact constraint makes
# (ns, fact_id) unique, so this matches at most one node, served by its index.
FACT_BY_ID = """
MATCH (f:Fact {ns: $ns, fact_id: $fact_id})
RETURN f
"""

# Everything one tenant holds, for audits and for the idempotency tests.
TENANT_SNAPSHOT = """
MATCH (n {ns: $ns, tenant_id: $tenant_id})
OPTIONAL MATCH (n)-[r]->(m {ns: $ns, tenant_id: $tenant_id})
RETURN labels(n) AS labels, properties(n) AS props,
       type(r) AS rel, properties(r) AS rel_props, properties(m) AS target
"""

# The names of the entities of a tenant (the injection test reads them back).
ENTITY_NAMES = """
MATCH (e:Entity {ns: $ns, tenant_id: $tenant_id}) RETURN e.name AS name ORDER BY name
"""
