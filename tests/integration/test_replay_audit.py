"""``memstream replay`` and ``memstream audit diff`` against the real broker and stores.

Live memory is built the way the live jobs build it, on private topics and a
private store namespace: a slice of the sample stream is published phase by
phase (turns, then actions, then CRM webhooks, as tests/integration/
test_ingest_flink.py does: a user's events on different topics have no
defined order otherwise), each phase is ingested by ``IngestPipeline``
in-process as the Faust worker runs it (``run_batch`` over batches, states
kept per user), its operations are published to ``memory.ops`` and applied
by the real sink job. The live memory is dumped after the turn phase and at
the end.

Then:

- a full replay (the CLI, all three topics from offset 0) into an empty shadow
  namespace equals live memory: ``audit diff`` reports no difference;
- a partial replay (turns of one partition only) equals live memory as it was
  after the turn phase, and ``audit diff`` lists exactly how that differs from
  live memory now;
- live memory and the Kafka topics are the same before and after the replays;
- every bad argument exits 2 with a message saying what to do, and leaves no
  trace of the shadow namespace in any store.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import typer
from confluent_kafka import TopicPartition
from ingest_helpers import create_topics, delete_topics, publish, sample_messages
from sink_helpers import config_for, publish_ops, run_to_end, wait_until
from typer.testing import CliRunner

from connectors import kafka_admin
from connectors.kafka_io import end_offsets, read_topic
from connectors.kafka_range import RangeReader
from connectors.namespace_dump import User, UserDump, dump_user, namespace_users
from jobs.cli import replay as cli_replay
from jobs.ingest.stages import load_pipeline, run_batch
from jobs.ops.audit_diff import diff_user
from jobs.ops.replay import merge_by_time, open_writers, run_replay
from jobs.ops.replay_plan import ReplayRequest, plan_ranges
from jobs.sink.job import open_lanes
from jobs.stores import open_stores
from memstream.settings import Settings
from pipelines.backpressure import BackpressureConfig
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.ops import MemoryOperation
from schemas.topics import (
    ALL_TOPICS,
    CRM_WEBHOOKS,
    DIALOGUE_EVENTS,
    MEMORY_OPS,
    USER_ACTIONS,
    Topics,
)

PARTITIONS = 3
PHASES = (DIALOGUE_EVENTS, USER_ACTIONS, CRM_WEBHOOKS)
# Events per topic from the sample stream: several users of two tenants, with
# facts, changed values, pending items and their confirmations, CRM changes.
SAMPLE_LIMIT = {DIALOGUE_EVENTS: 40, USER_ACTIONS: 20, CRM_WEBHOOKS: 10}
# One record the pipeline dead-letters, live and in the replay alike.
BAD_TURN = ("acme:mallory", b"{not json")
# The live worker's default batch (settings.ingest.batch_size).
BATCH_SIZE = 64
# The live sink may spool a slow store's operations and apply them at a later
# drain; this test is about replay, not backpressure, so every write is direct.
NO_SPOOLING = BackpressureConfig(latency_budget_s=600.0)


@dataclass
class Live:
    """Private topics, a live store namespace built by the live path, and its dumps."""

    settings: Settings
    pipeline: IngestPipeline
    topics: str  # topic namespace
    store: str  # live store namespace
    after_turns: dict[User, UserDump]
    final: dict[User, UserDump]
    partitions: dict[str, int]  # "tenant:user" -> partition of their turns


def wait_visible(bootstrap: str, topics: list[str]) -> None:
    """Wait until the broker's metadata lists newly created topics (it can lag a moment)."""
    wait_until(
        lambda: len(kafka_admin.partition_counts(bootstrap, topics)) == len(topics),
        f"topics {topics} to appear in the metadata",
        timeout_s=30.0,
    )


def dump_all(settings: Settings, namespace: str) -> dict[User, UserDump]:
    """Every user's memory in a store namespace."""
    with open_stores(settings, namespace) as readers:
        return {user: dump_user(*readers, *user) for user in namespace_users(*readers)}


def ingest_phase(
    live: Live,
    topic: str,
    messages: list[tuple[str | None, bytes]],
    states: dict[str, UserMemoryState],
) -> list[MemoryOperation]:
    """Publish one phase, ingest it as the worker does, and return its operations."""
    bootstrap, name = live.settings.kafka.bootstrap, live.topics + topic
    start = end_offsets(bootstrap, name)
    publish(bootstrap, name, messages)
    records = [
        SourceRecord(topic, r.partition, r.offset, r.key.encode() if r.key else None, r.value)
        for r in read_topic(bootstrap, name, start=start)
    ]
    if topic == DIALOGUE_EVENTS:
        live.partitions.update({str(r.key.decode()): r.partition for r in records if r.key})
    ops: list[MemoryOperation] = []
    for first in range(0, len(records), BATCH_SIZE):
        batch = run_batch(live.pipeline, records[first : first + BATCH_SIZE], states.get)
        states.update(batch.states)
        ops += [op for result in batch.results for op in result.ops]
    return ops


@pytest.fixture(scope="module")
def live(settings: Settings) -> Iterator[Live]:
    """Live memory of a sample slice, built phase by phase by the live path."""
    bootstrap = settings.kafka.bootstrap
    suffix = uuid.uuid4().hex[:10]
    state = Live(
        settings=settings,
        pipeline=load_pipeline(settings),
        topics=f"test.replay.{suffix}.",
        store=f"live{suffix}",
        after_turns={},
        final={},
        partitions={},
    )
    create_topics(bootstrap, state.topics, PARTITIONS)
    wait_visible(bootstrap, [state.topics + t for t in ALL_TOPICS])
    sink = replace(
        config_for(settings, state.topics, state.store, settings.chroma_path),
        backpressure=NO_SPOOLING,
    )
    states: dict[str, UserMemoryState] = {}
    try:
        for topic in PHASES:
            messages = sample_messages(topic, SAMPLE_LIMIT[topic])
            if topic == DIALOGUE_EVENTS:
                messages.append(BAD_TURN)
            ops = ingest_phase(state, topic, messages, states)
            publish_ops(bootstrap, state.topics + MEMORY_OPS, ops)
            run_to_end(sink, open_lanes(sink))
            if topic == DIALOGUE_EVENTS:
                state.after_turns = dump_all(settings, state.store)
        state.final = dump_all(settings, state.store)
        yield state
    finally:
        delete_topics(bootstrap, state.topics)


def cli(*args: str) -> Any:
    app = typer.Typer()
    app.command("replay")(cli_replay.replay)
    app.add_typer(cli_replay.audit_app, name="audit")
    return CliRunner().invoke(app, list(args))


def traces(settings: Settings, namespace: str) -> tuple[list[User], list[str]]:
    """Users and Chroma collections a store namespace holds."""
    with open_stores(settings, namespace) as readers:
        users = namespace_users(*readers)
        collections = [
            c.name
            for c in readers.episodic.client.list_collections()
            if (c.metadata or {}).get("memstream_namespace") == namespace
        ]
    return users, collections


def topic_ends(live: Live) -> dict[str, dict[int, int]]:
    bootstrap = live.settings.kafka.bootstrap
    return {t: end_offsets(bootstrap, live.topics + t) for t in ALL_TOPICS}


@dataclass
class Replays:
    """The two replays and what live memory and the topics looked like around them."""

    full: str
    full_output: Any
    full_audit: Any
    partial: str
    partial_partition: int
    partial_audit: Any
    live_before: dict[User, UserDump]
    live_after: dict[User, UserDump]
    ends_before: dict[str, dict[int, int]]
    ends_after: dict[str, dict[int, int]]


@pytest.fixture(scope="module")
def replays(live: Live) -> Replays:
    """A full replay through the CLI, a partial one through the same functions the CLI runs."""
    suffix = uuid.uuid4().hex[:8]
    full, partial = f"shadowfull{suffix}", f"shadowpart{suffix}"
    live_before, ends_before = dump_all(live.settings, live.store), topic_ends(live)
    full_output = cli(
        "replay", "--namespace", full, "--topic-namespace", live.topics, "--from-offset", "0"
    )
    # The partition holding the most users' turns: a range of one topic and partition.
    counts: dict[int, int] = {}
    for p in live.partitions.values():
        counts[p] = counts.get(p, 0) + 1
    partition = max(counts, key=lambda p: counts[p])
    request = ReplayRequest(
        namespace=partial,
        topics=(DIALOGUE_EVENTS,),
        partition=partition,
        from_offset=0,
        topic_namespace=live.topics,
    )
    reader = RangeReader(live.settings.kafka.bootstrap)
    plan = plan_ranges(reader, request)
    ranges = [(r.topic, r.partition, r.start, r.end) for r in plan.ranges]
    records = merge_by_time(reader.read(ranges), live.topics)
    with open_writers(live.settings, partial) as writers:
        run_replay(live.pipeline, records, list(writers), batch_size=BATCH_SIZE)
    return Replays(
        full=full,
        full_output=full_output,
        full_audit=cli("audit", "diff", full, "--against", live.store, "--json"),
        partial=partial,
        partial_partition=partition,
        partial_audit=cli("audit", "diff", partial, "--against", live.store, "--json"),
        live_before=live_before,
        live_after=dump_all(live.settings, live.store),
        ends_before=ends_before,
        ends_after=topic_ends(live),
    )


def test_live_memory_holds_what_the_slice_decides(live: Live) -> None:
    # Guards the comparisons below against a vacuous pass on empty memory.
    assert len(live.final) >= 4
    assert sum(len(d.episodic) for d in live.final.values()) >= 20
    assert any(d.semantic for d in live.final.values())
    assert any(d.resolved for d in live.final.values()), "no confirmation in the slice"
    assert any(d.turns for d in live.final.values())
    assert live.after_turns != {u: live.final[u] for u in live.after_turns}


def test_a_full_replay_into_an_empty_namespace_equals_live_memory(
    live: Live, replays: Replays
) -> None:
    result = replays.full_output
    assert result.exit_code == 0, result.output + result.stderr
    assert "events read" in result.stdout and "71" in result.stdout  # 40 + 20 + 10 + 1 bad
    assert "dead letters (not published)" in result.stdout
    assert "vocabulary size" not in result.stdout  # Flair's loading log stays off stdout
    shadow = dump_all(live.settings, replays.full)
    assert set(shadow) == set(live.final)
    assert shadow == live.final
    audit = replays.full_audit
    assert audit.exit_code == 0, audit.output + audit.stderr
    document = json.loads(audit.stdout)
    assert document["equal"] is True and document["differences"] == []
    assert len(document["users"]) == len(live.final)


def test_a_partial_replay_equals_live_memory_at_that_point_and_the_diff_says_how(
    live: Live, replays: Replays
) -> None:
    mine = {k for k, p in live.partitions.items() if p == replays.partial_partition}
    shadow = dump_all(live.settings, replays.partial)
    assert {f"{t}:{u}" for t, u in shadow} == mine - {BAD_TURN[0]}
    # What the turns of one partition alone decide is what live memory held
    # for those users once the turn phase was applied.
    assert shadow == {user: live.after_turns[user] for user in shadow}
    expected = [asdict(d) for user in shadow for d in diff_user(live.final[user], shadow[user])]
    assert expected, "the later phases changed nothing for these users: pick a richer slice"
    audit = replays.partial_audit
    assert audit.exit_code == 1, audit.output + audit.stderr
    document = json.loads(audit.stdout)
    assert document["equal"] is False
    assert document["differences"] == json.loads(json.dumps(expected, default=str))


def test_replays_leave_live_memory_and_the_topics_untouched(replays: Replays) -> None:
    assert replays.live_after == replays.live_before
    assert replays.ends_after == replays.ends_before


def test_the_audit_table_lists_every_difference(live: Live, replays: Replays) -> None:
    differences = json.loads(replays.partial_audit.stdout)["differences"]
    result = cli("audit", "diff", replays.partial, "--against", live.store)
    assert result.exit_code == 1
    users = {f"{d['tenant_id']}/{d['user_id']}" for d in differences}
    assert f"{len(differences)} difference(s) for {len(users)} user(s)" in result.stdout
    for user in users:
        assert user in result.stdout


@pytest.fixture(scope="module")
def retained(settings: Settings) -> Iterator[str]:
    """A one-partition turn topic whose first two records retention deleted; its namespace."""
    bootstrap = settings.kafka.bootstrap
    namespace = f"test.retained.{uuid.uuid4().hex[:10]}."
    name = Topics(namespace).dialogue_events
    kafka_admin.ensure_topics(bootstrap, [kafka_admin.TopicSpec(name, 1)])
    wait_visible(bootstrap, [name])
    try:
        publish(bootstrap, name, sample_messages(DIALOGUE_EVENTS, 5))
        admin = kafka_admin.admin_client(bootstrap)
        for future in admin.delete_records([TopicPartition(name, 0, 2)]).values():
            future.result(timeout=30)
        yield namespace
    finally:
        kafka_admin.delete_topics(bootstrap, [name])


def bad_arguments(live: Live, retained: str) -> list[tuple[list[str], str]]:
    ns = ["--topic-namespace", live.topics]
    old = ["--topic-namespace", retained, "--topic", DIALOGUE_EVENTS]
    before_retention = (datetime.now(UTC) - timedelta(days=365)).isoformat()
    return [
        ([*ns, "--topic", "nope.events", "--from-offset", "0"], "unknown topic nope.events"),
        ([*ns, "--partition", "7", "--from-offset", "0"], "has partitions 0..2"),
        ([*ns, "--from-offset", "100000"], "--from-offset 100000 is outside what"),
        ([*ns, "--from-offset", "0", "--to-offset", "100000"], "--to-offset 100000 is outside"),
        ([*ns, "--from-offset", "5", "--to-offset", "2"], "--from-offset 5 is after --to-offset 2"),
        ([*ns, "--from-time", "yesterday"], "is not an ISO 8601 time"),
        ([*ns], "give exactly one of --from-offset and --from-time"),
        (["--topic-namespace", "test.nothing.here.", "--from-offset", "0"], "does not exist"),
        ([*old, "--from-offset", "0"], "holds offsets 2..5"),
        ([*old, "--from-time", before_retention], "before the retention start"),
        ([*ns, "--from-offset", "0", "--to-offset", "0"], "holds no records"),
    ]


def test_every_bad_argument_is_refused_and_writes_nothing(live: Live, retained: str) -> None:
    shadow = f"refused{uuid.uuid4().hex[:8]}"
    for args, message in bad_arguments(live, retained):
        result = cli("replay", "--namespace", shadow, *args)
        assert result.exit_code == 2, (args, result.output, result.stderr)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
    assert traces(live.settings, shadow) == ([], [])


def test_times_resolve_to_the_offsets_the_stamps_give(settings: Settings, retained: str) -> None:
    reader = RangeReader(settings.kafka.bootstrap)
    topic = retained + DIALOGUE_EVENTS
    stamps = {r.offset: r.timestamp_ms for r in reader.read([(topic, 0, 2, 5)])}
    assert sorted(stamps) == [2, 3, 4]
    at = datetime.fromtimestamp(stamps[3] / 1000, UTC)
    request = ReplayRequest(
        namespace="unused",
        topics=(DIALOGUE_EVENTS,),
        from_time=at,
        to_time=at,
        topic_namespace=retained,
    )
    plan = plan_ranges(reader, request)
    # Independently: the first offset stamped at or after, and the first stamped after.
    start = min(o for o, ms in stamps.items() if ms >= stamps[3])
    end = min([o for o, ms in stamps.items() if ms > stamps[3]], default=5)
    assert [(r.start, r.end) for r in plan.ranges] == [(start, end)]


def test_the_namespace_must_be_new_and_not_live(live: Live) -> None:
    before = dump_all(live.settings, live.store)
    args = ["--topic-namespace", live.topics, "--from-offset", "0"]
    taken = cli("replay", "--namespace", live.store, *args)
    assert taken.exit_code == 2
    assert "already holds memory" in taken.stderr and "choose another --namespace" in taken.stderr
    empty = cli("replay", "--namespace", "", *args)
    assert empty.exit_code == 2
    assert "the empty namespace is live memory" in " ".join(empty.stderr.split())
    assert dump_all(live.settings, live.store) == before


def test_audit_diff_refuses_bad_arguments(live: Live) -> None:
    nothing = f"never{uuid.uuid4().hex[:8]}"
    cases = [
        (["audit", "diff", ""], "'' is live memory"),
        (["audit", "diff", live.store, "--against", live.store], "with itself"),
        (["audit", "diff", nothing], f"namespace {nothing!r} holds no memory"),
        (["audit", "diff", "bad:name"], "namespace must match"),
    ]
    for args, message in cases:
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
    assert traces(live.settings, nothing) == ([], [])


def _plain(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_help_texts_document_the_decisions() -> None:
    replay = _plain(cli("replay", "--help").stdout)
    for phrase in (
        "starts from EMPTY state",
        "merged in record-timestamp order",
        "rebuilds the live state",
        "--topic-namespace",
        "Stop BEFORE this offset",
        "2 bad argument (nothing written)",
    ):
        assert phrase in replay, phrase
    diff = _plain(cli("audit", "diff", "--help").stdout)
    for phrase in ("--against", "--json", "0 no difference; 1 differences"):
        assert phrase in diff, phrase
