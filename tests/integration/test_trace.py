"""``memstream trace`` against the real broker and stores.

A few events are published to private namespaced topics, run through the real
ingest pipeline in-process (``jobs.ingest.stages.load_pipeline``), their operations
published to the namespace's ``memory.ops`` and written to Chroma and Neo4j in
the same store namespace — what ``memstream run --namespace`` leaves behind.
Then facts are traced: the source event must be the exact bytes published at
its offset, the decisions those of the stages, the chain the phone number's
two versions; an unknown id and a source removed from the log (delete-records
moves the log start past it) must give clear errors.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import ingest_helpers
import pytest
import sink_helpers
import typer
from confluent_kafka import TopicPartition
from typer.testing import CliRunner

from connectors.chroma_memory import ChromaMemory
from connectors.kafka_admin import admin_client
from connectors.kafka_io import Record, read_topic
from connectors.neo4j_memory import Neo4jMemory
from jobs.cli import trace as cli_trace
from jobs.ingest.stages import load_pipeline
from jobs.ops.trace import Trace, UnknownFact, fetch_source, trace
from jobs.ops.trace_decisions import Match, NlpStages
from jobs.ops.trace_render import render_text
from memstream.settings import Settings
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.parse import Intent
from pipelines.review import UserMemoryState
from schemas.lineage import SourceLineage
from schemas.memory import Tier
from schemas.ops import MemoryOperation, OpType
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, Topics

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
OLD_PHONE, NEW_PHONE = "07700900123", "07700900999"  # as extract normalises them


@dataclass(frozen=True)
class World:
    """What the module published and ingested, and the stores it wrote to."""

    namespace: str
    tenant: str
    published: dict[tuple[str, int, int], bytes]  # (topic, partition, offset) -> value
    ops: list[MemoryOperation]
    pipeline: IngestPipeline
    neo4j: Neo4jMemory
    chroma: ChromaMemory

    def facts(self, predicate: str) -> list[str]:
        """Ids of the versions of ``predicate`` the pipeline upserted, in order."""
        ids = [
            op.record.fact_id
            for op in self.ops
            if op.op_type is OpType.UPSERT_FACT and op.record and op.record.predicate == predicate
        ]
        return list(dict.fromkeys(ids))

    def stages(self) -> NlpStages:
        return NlpStages(self.pipeline.parser, self.pipeline.extractor)


def _turn(tenant: str, index: int, role: str, text: str) -> tuple[str, bytes]:
    event = {
        "event_id": f"{tenant}-d{index}",
        "tenant_id": tenant,
        "user_id": "u1",
        "session_id": "s1",
        "turn_index": index,
        "role": role,
        "text": text,
        "ts": (T0 + timedelta(minutes=index)).isoformat(),
    }
    return f"{tenant}:u1", json.dumps(event).encode()


def _crm(tenant: str) -> tuple[str, bytes]:
    event = {
        "event_id": f"{tenant}-c1",
        "tenant_id": tenant,
        "user_id": "u1",
        "ts": (T0 + timedelta(minutes=10)).isoformat(),
        "source": "crm",
        "entity": "contact",
        "changes": {"email": {"old": None, "new": "ada@example.com"}},
    }
    return f"{tenant}:u1", json.dumps(event).encode()


def _erase(tenant: str) -> MemoryOperation:
    """Forget the module's user in the stores (its namespace is never read again)."""
    return MemoryOperation(
        op_id=f"o_erase_{tenant}",
        op_type=OpType.ERASE_USER,
        tenant_id=tenant,
        user_id="u1",
        tiers=[Tier.EPISODIC, Tier.SEMANTIC],
        lineage=SourceLineage(topic="test", partition=0, offset=0, event_id="cleanup"),
        at=T0,
    )


def _ingest(
    pipeline: IngestPipeline, namespace: str, records: list[Record]
) -> list[MemoryOperation]:
    states: dict[str, UserMemoryState] = {}

    def state_for(key: str) -> UserMemoryState:
        return states.setdefault(key, pipeline.reviewer.new_state())

    # As the ingest jobs do: records enter under their base topic name.
    sources = [
        SourceRecord(
            r.topic.removeprefix(namespace),
            r.partition,
            r.offset,
            r.key.encode() if r.key else None,
            r.value,
        )
        for r in records
    ]
    results = pipeline.process(sources, state_for)
    assert [r.dead_letter for r in results if r.dead_letter] == []
    return [op for r in results for op in r.ops]


@pytest.fixture(scope="module")
def world(settings: Settings) -> Iterator[World]:
    bootstrap = settings.kafka.bootstrap
    namespace = f"trace{uuid.uuid4().hex[:8]}_"
    tenant = f"t-{namespace[:-1]}"
    ingest_helpers.create_topics(bootstrap, namespace, partitions=2)
    turns = [
        _turn(tenant, 0, "user", "My phone number is 07700 900123."),
        _turn(tenant, 1, "agent", "Thanks, I have noted that."),
        _turn(tenant, 2, "user", "Actually my new number is 07700 900999."),
    ]
    ingest_helpers.publish(bootstrap, Topics(namespace).dialogue_events, turns)
    ingest_helpers.publish(bootstrap, Topics(namespace).crm_webhooks, [_crm(tenant)])
    records = [
        r
        for t in (DIALOGUE_EVENTS, CRM_WEBHOOKS)
        for r in read_topic(bootstrap, Topics(namespace).name(t))
    ]
    pipeline = load_pipeline(settings)
    ops = _ingest(pipeline, namespace, records)
    sink_helpers.publish_ops(bootstrap, Topics(namespace).memory_ops, ops)
    chroma = ChromaMemory.open(settings.chroma_path, namespace=namespace, latency_budget_s=math.inf)
    neo4j = Neo4jMemory.connect(settings.neo4j.uri, namespace=namespace, latency_budget_s=math.inf)
    for store in (chroma, neo4j):
        store.setup()
        store.write(ops)
        store.flush()
    published = {(r.topic, r.partition, r.offset): r.value for r in records}
    yield World(namespace, tenant, published, ops, pipeline, neo4j, chroma)
    for store in (chroma, neo4j):
        store.write([_erase(tenant)])
        store.flush()
    neo4j.close()
    ingest_helpers.delete_topics(bootstrap, namespace)


def _trace(world: World, settings: Settings, fact_id: str) -> Trace:
    return trace(
        fact_id,
        bootstrap=settings.kafka.bootstrap,
        topic_namespace=world.namespace,
        neo4j=world.neo4j,
        chroma=world.chroma,
        stages=world.stages,
    )


def test_a_superseded_phone_number_traces_to_its_turn_and_its_chain(
    world: World, settings: Settings
) -> None:
    old, new = world.facts("phone_number")
    traced = _trace(world, settings, old)
    lineage = traced.fact.lineage
    assert lineage is not None
    assert traced.source.problem is None
    position = (traced.source.topic, lineage.partition, lineage.offset)
    assert traced.source.value == world.published[position]
    assert traced.source.event is not None and traced.source.event.event_id == f"{world.tenant}-d0"
    decisions = traced.decisions
    assert decisions is not None and decisions.parsed is not None
    assert decisions.parsed.intent is Intent.INFORM
    assert decisions.match is Match.EXACT and decisions.fact is not None
    assert decisions.fact.object == OLD_PHONE
    assert decisions.fact.source_span is not None
    assert decisions.fact.source_span.text == "My phone number is 07700 900123."
    # Review is recorded: the upsert that wrote v1, then the close when v2 came,
    # each at the position an independent read of memory.ops finds it.
    assert [s.op.op_type for s in traced.ops] == [OpType.UPSERT_FACT, OpType.CLOSE_FACT]
    on_topic = {
        (r.partition, r.offset): MemoryOperation.model_validate_json(r.value).op_id
        for r in read_topic(settings.kafka.bootstrap, Topics(world.namespace).memory_ops)
    }
    assert [on_topic[(s.partition, s.offset)] for s in traced.ops] == [
        s.op.op_id for s in traced.ops
    ]
    assert traced.ops[0].op.record is not None and traced.ops[0].op.record.review
    assert [(h.fact_id, h.object) for h in traced.chain] == [(old, OLD_PHONE), (new, NEW_PHONE)]
    assert traced.chain[0].valid_until is not None and traced.chain[1].valid_until is None
    assert traced.chain[1].supersedes == old
    traced_line = next(line for line in render_text(traced) if "<= traced" in line)
    assert old in traced_line and f"superseded by {new}" in traced_line


def test_the_correction_is_recomputed_in_the_context_of_its_session(
    world: World, settings: Settings
) -> None:
    _, new = world.facts("phone_number")
    traced = _trace(world, settings, new)
    decisions = traced.decisions
    assert decisions is not None and decisions.parsed is not None
    assert decisions.context_turns == 2  # the turns before it in session s1
    assert decisions.parsed.intent is Intent.CORRECTION
    assert decisions.match is Match.EXACT
    assert traced.source.event is not None and traced.source.event.event_id == f"{world.tenant}-d2"


def test_an_event_id_that_does_not_match_the_lineage_is_reported(
    world: World, settings: Settings
) -> None:
    old, _ = world.facts("phone_number")
    hit = world.chroma.chain(world.tenant, "u1", "user", "phone_number")[0]
    assert hit.fact_id == old and hit.lineage is not None
    wrong = hit.lineage.model_copy(update={"event_id": "someone-else"})
    fetched = fetch_source(settings.kafka.bootstrap, wrong, world.namespace)
    assert fetched.problem is not None and "not the lineage's 'someone-else'" in fetched.problem
    assert fetched.value == world.published[(fetched.topic, wrong.partition, wrong.offset)]


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(cli_trace.trace)
    return app


def test_cli_traces_a_crm_fact_then_reports_it_gone_after_delete_records(
    world: World, settings: Settings
) -> None:
    (email,) = world.facts("email")
    runner = CliRunner()
    result = runner.invoke(_cli(), [email, "--namespace", world.namespace, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    lineage = doc["source"]["lineage"]
    topic = doc["source"]["topic"]
    assert topic == Topics(world.namespace).crm_webhooks
    position = (topic, lineage["partition"], lineage["offset"])
    assert doc["source"]["value"].encode() == world.published[position]
    assert "neo4j" in doc["found_in"] and doc["decisions"]["provenance"] == {
        "extract": "recomputed"
    }
    assert doc["decisions"]["match"] == "exact"
    assert doc["review"]["provenance"] == "recorded" and doc["chain"][0]["traced"] is True

    # delete_records moves the log start past the event, as retention would.
    admin = admin_client(settings.kafka.bootstrap)
    cut = TopicPartition(topic, lineage["partition"], lineage["offset"] + 1)
    for future in admin.delete_records([cut]).values():
        future.result(timeout=15)
    result = runner.invoke(_cli(), [email, "--namespace", world.namespace])
    assert result.exit_code == cli_trace.EXIT_INCOMPLETE, result.output
    assert "below the log start" in result.stderr
    assert f"FACT {email}" in result.stdout and "ada@example.com" in result.stdout


def test_an_unknown_fact_id_exits_2_with_a_suggestion(world: World) -> None:
    result = CliRunner().invoke(_cli(), ["f_000000", "--namespace", world.namespace])
    assert result.exit_code == 2
    assert "no memory 'f_000000'" in result.stderr and "--namespace" in result.stderr
    assert "Fact ids start with 'f_'" in str(UnknownFact("nonsense", world.namespace))
    empty = CliRunner().invoke(_cli(), ["  ", "--namespace", world.namespace])
    assert empty.exit_code == 2 and "ID is empty" in empty.stderr


def test_the_stores_hold_the_fact_only_in_their_namespace(world: World) -> None:
    (email,) = world.facts("email")
    assert world.neo4j.fact(email) is not None
    live = Neo4jMemory(world.neo4j.driver, namespace="")
    assert live.fact(email) is None


def test_cli_traces_a_remembered_turn_to_its_event_its_ops_and_its_facts(
    world: World, settings: Settings
) -> None:
    said = [op.episode for op in world.ops if op.op_type is OpType.UPSERT_EPISODE and op.episode]
    first = next(e for e in said if e.lineage.event_id == f"{world.tenant}-d0")
    newer = next(e for e in said if e.lineage.event_id == f"{world.tenant}-d2")
    result = CliRunner().invoke(
        _cli(), [first.episode_id, "--namespace", world.namespace, "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["episode"]["text"] == "My phone number is 07700 900123."
    assert doc["source"]["verified"] is True
    position = (doc["source"]["topic"], first.lineage.partition, first.lineage.offset)
    assert doc["source"]["value"].encode() == world.published[position]
    # Written at its turn, outdated when the number changed, by the turn with the new one.
    assert [o["op_type"] for o in doc["ops"]] == ["upsert_episode", "outdate_episode"]
    assert doc["outdated"] is True and doc["outdated_by"] == [newer.episode_id]
    old, _ = world.facts("phone_number")
    assert [f["fact_id"] for f in doc["facts"]] == [old]
    text = CliRunner().invoke(_cli(), [first.episode_id, "--namespace", world.namespace])
    assert text.exit_code == 0 and f"EPISODE {first.episode_id}" in text.stdout
    assert f"outdated by {newer.episode_id}" in text.stdout
    unknown = CliRunner().invoke(_cli(), ["e_000000", "--namespace", world.namespace])
    assert unknown.exit_code == 2 and "no memory 'e_000000'" in unknown.stderr
