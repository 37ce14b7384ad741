"""Fuzzed input records for the ingest fuzz test and benchmark, reproducible from a seed.

``generate(n, seed)`` returns ``n`` records for the three input topics, in
publication order: valid events (the sample stream, copied under fresh users
and event ids), valid events at the edges of every bound (64-bit integers,
the first and last event times, 64-character ids, maps at their depth, key
and size limits, unicode, emoji and control characters, long texts),
mutated events (a type swapped, a field missing or added, a value one past a
bound, several at once), random bytes and non-JSON, interleaved. Invalid
records mostly carry the key of a valid user, so they sit in the same
partition between that user's valid events.

Whether a record is valid is not decided here: every record goes through the
project's own input validation (``schemas.validate.decode_event``), and what
it says (an event, or the dead-letter reason) is the record's expected fate.
The oracle is the contract the worker enforces.

``run_fuzz`` is one fuzz run of the ingest path on the real broker and stores. It

1. creates two private topic namespaces: the fuzzed log and the valid-only
   log (the same records, each invalid one replaced by a blank, so every valid
   record has the same partition and offset in both);
2. runs ``memstream worker`` (Faust) on the fuzzed log, publishing phase by
   phase (turns, then actions, then CRM webhooks, each phase read to its end
   before the next: a user's events on different topics have no defined order
   otherwise) and watching that it never exits;
3. runs ``memstream sink`` on its ``memory.ops`` into a live store namespace
   until the sink group has committed their end;
4. runs ``memstream replay`` over the valid-only log into a shadow namespace
   and ``memstream audit diff`` of the shadow against the live namespace;
5. removes both topic namespaces, their consumer groups, both store
   namespaces and the private Chroma directory.

The report says what each check needs: the dead letters against the invalid
records (topic, SHA-256 of the original, reason), the valid turns against the
operations (each turn appends itself to working memory), and the audit's
differences. The jobs are subprocesses, as an operator runs them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer, end_offsets, read_topic
from connectors.kafka_offsets import OffsetReader, OffsetsUnavailable
from connectors.neo4j_memory import Neo4jMemory
from memstream.data import sample_dir
from memstream.settings import Settings
from schemas.bounds import (
    INT64_MAX,
    INT64_MIN,
    MAX_CRM_FIELDS,
    MAX_KEY_CHARS,
    MAX_LIST_ITEMS,
    MAX_MAP_DEPTH,
    MAX_MAP_KEYS,
    MAX_OBJECT_CHARS,
    MAX_VALUE_CHARS,
)
from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.events import MAX_TURN_CHARS
from schemas.ops import MemoryOperation, OpType
from schemas.topics import (
    ALL_TOPICS,
    CRM_WEBHOOKS,
    DIALOGUE_EVENTS,
    INPUT_TOPICS,
    MEMORY_DLQ,
    MEMORY_OPS,
    USER_ACTIONS,
    Topics,
)
from schemas.validate import MAX_EVENT_BYTES, InvalidEvent, decode_event

# What stands in for an invalid record in the valid-only log (see ``valid_only``):
# empty bytes, which every engine refuses the same plain way (malformed JSON).
BLANK = b""
# Shares of the record kinds; the rest of the records are valid sample events.
# Valid events are the costly ones (the NLP stages): about two fifths in all.
SHARES = {
    "edge": 0.08,
    "mutated": 0.40,
    "random_bytes": 0.14,
    "non_json": 0.14,
    "too_large": 0.0005,
}
# A valid turn this long is the NLP stages' worst case; far more would make the
# run about their speed, not about the input contract. Longer ones are mutations.
LONG_TURN_CHARS = 5_000
# A few seconds of NLP each on a busy core: one edge turn in 200 is a long one.
LONG_TURN_SHARE = 0.005
_Mutation = Callable[[random.Random, dict[str, Any], str], None]


@dataclass(frozen=True)
class FuzzRecord:
    """One generated input record and what the input contract says of it."""

    topic: str  # the base input topic (no namespace)
    key: str
    value: bytes
    kind: str  # valid, edge, mutated, random_bytes, non_json, too_large
    reason: DeadLetterReason | None  # None: a valid event
    event_id: str | None  # of a valid event

    @property
    def valid(self) -> bool:
        return self.reason is None


def judge(topic: str, value: bytes) -> tuple[DeadLetterReason | None, str | None]:
    """The dead-letter reason ``decode_event`` gives ``value`` (None if valid), and its event id."""
    try:
        event = decode_event(topic, value)
    except InvalidEvent as exc:
        return exc.reason, None
    return None, event.event_id


def _sample(topic: str) -> list[dict[str, Any]]:
    lines = (sample_dir() / f"{topic}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


class _Stream:
    """The sample events of one topic, copied round after round under fresh users and ids."""

    def __init__(self, topic: str, run: str) -> None:
        self.events = _sample(topic)
        self.run = run
        self.next = 0

    def take(self) -> dict[str, Any]:
        round_, index = divmod(self.next, len(self.events))
        self.next += 1
        event = copy.deepcopy(self.events[index])
        tag = f"{self.run}c{round_}"
        event["user_id"] = f"{event['user_id']}.{tag}"
        event["event_id"] = f"{event['event_id']}.{tag}"
        if event.get("session_id"):
            event["session_id"] = f"{event['session_id']}.{tag}"
        return event


def key_of(event: dict[str, Any]) -> str:
    return f"{event.get('tenant_id')}:{event.get('user_id')}"


def _encode(event: Any) -> bytes:
    # ensure_ascii: lone surrogates travel as \\ud800 escapes, as a JSON producer may send them.
    return json.dumps(event, ensure_ascii=True).encode("utf-8")


# -- values at and past the edges -------------------------------------------------

_ODD_TEXT = [
    "🙂" * 50,
    "naïve café — 東京 🚀",
    "\u202eevil\u202c",
    "a\u0000b\u0007c\u001bd",
    "\ufeffBOM inside",
    "line\r\nbreak\ttab",
    "\ud800 lone surrogate",
    "Z\u0351\u0360\u0361a\u0352l\u035bg\u0346o",
    " ",
]
_WRONG_TYPES: list[Any] = [None, True, False, 0, -1, 1.5, "3", "", [], {}, [1], {"a": 1}]
_BAD_TIMES: list[Any] = [
    "1999-12-31T23:59:59Z",
    "2100-01-01T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-03-02T24:00:00Z",
    "2026-03-02T09:00:00",
    "2026-03-02",
    "2026-03-02T09:00:00+24:00",
    "２０２６-03-02T09:00:00Z",
    1_772_442_000,
    "",
]
_EDGE_TIMES = [
    "2000-01-01T00:00:00Z",
    "2099-12-31T23:59:59.999999Z",
    "2000-01-01T00:00:00+23:59",  # still the year 2000 as written, 1999 in UTC
    "2099-12-31T23:59:59-23:59",  # 2100 in UTC
    "2024-02-29T12:00:00+05:30",
    "2000-02-29T00:00:00Z",
]


def _deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _edge_field(rng: random.Random, topic: str) -> dict[str, Any]:
    """One change that keeps an event valid, at the edge of a bound."""
    if topic == DIALOGUE_EVENTS and rng.random() < LONG_TURN_SHARE:
        return {"text": "x " * (LONG_TURN_CHARS // 2)}
    string = rng.choice(_ODD_TEXT)
    common: list[dict[str, Any]] = [
        {"ts": rng.choice(_EDGE_TIMES)},
        {"user_id": "u" * 64},
        {"tenant_id": rng.choice(["t" * 64, "a", "A.b@c-d_e"])},
        {"event_id": "e" * 120 + str(rng.randrange(10**7))},
        {"event_id": "ünïcödé-" + str(rng.randrange(10**9))},
        {"schema_version": 1.0},
    ]
    per_topic: dict[str, list[dict[str, Any]]] = {
        DIALOGUE_EVENTS: [
            {"text": string},
            {"text": ""},
            {"turn_index": rng.choice([0, INT64_MAX, 3.0])},
            {"turn_id": "t" * 128},
            {"lang": rng.choice(["en", "zho", "en-GB", "pt-BR12345"])},
            {"metadata": {"k" * MAX_KEY_CHARS: "v" * MAX_VALUE_CHARS}},
            {"metadata": {f"k{i}": i for i in range(MAX_MAP_KEYS)}},
            {"metadata": {"i": INT64_MIN, "j": INT64_MAX, "f": 1e308, "b": False, "n": None}},
            {"metadata": {"big": 2**64}},  # JSON's number model: read as the float it is
            {"metadata": {"s": string}},
        ],
        USER_ACTIONS: [
            {"duration_ms": rng.choice([0, INT64_MAX, None])},
            {"target_id": "x" * 256},
            {"properties": _deep(MAX_MAP_DEPTH - 1)},
            {"properties": {"l": list(range(MAX_LIST_ITEMS))}},
            {"properties": {f"p{i}": string for i in range(MAX_MAP_KEYS)}},
            {"properties": {"n": {"x": [None, True, -1.5, INT64_MIN, "s"]}}},
            {"session_id": None},
        ],
        CRM_WEBHOOKS: [
            {"changes": {f"f{i}": {"new": i} for i in range(MAX_CRM_FIELDS)}},
            {"changes": {"phone": {"old": "4" * MAX_OBJECT_CHARS, "new": "5" * MAX_OBJECT_CHARS}}},
            {"changes": {"note": {"new": string}}},
            {"changes": {"k" * MAX_KEY_CHARS: {}}},
            {"source": "s" * 64, "entity": "e" * 64},
        ],
    }
    return rng.choice(common + per_topic[topic])


def _past_bound(rng: random.Random, topic: str) -> dict[str, Any]:
    """One value just past a bound (or of a type the bound refuses)."""
    common: list[dict[str, Any]] = [
        {"ts": rng.choice(_BAD_TIMES)},
        {"user_id": "u" * 65},
        {"user_id": rng.choice(["a:b", "a b", "", "ü", "*", "../x"])},
        {"tenant_id": "t" * 65},
        {"event_id": "e" * 129},
        {"event_id": rng.choice(["a b", "\u00a0", "\ufeff", "x\ny", ""])},
        {"schema_version": rng.choice([2, 0, True, "1", 1.5])},
    ]
    per_topic: dict[str, list[dict[str, Any]]] = {
        DIALOGUE_EVENTS: [
            {"turn_index": rng.choice([-1, 2**63, 2**64, True, "3", 1.5, None])},
            {"text": "x" * (MAX_TURN_CHARS + 1)},
            {"turn_id": "t" * 129},
            {"role": rng.choice(["admin", "USER", "", None])},
            {"lang": rng.choice(["EN", "e", "english", "en_GB", ""])},
            {"metadata": {"nested": {"a": 1}}},
            {"metadata": {f"k{i}": i for i in range(MAX_MAP_KEYS + 1)}},
            {"metadata": {"k" * (MAX_KEY_CHARS + 1): 1}},
            {"metadata": {"": 1}},
            {"metadata": {"v": "v" * (MAX_VALUE_CHARS + 1)}},
            {"metadata": {"i": 2**63}},
            {"metadata": []},
        ],
        USER_ACTIONS: [
            {"duration_ms": rng.choice([-1, 2**63, 1.5, "10", True])},
            {"action_type": rng.choice(["delete_everything", "", None, "CLICK"])},
            {"target_id": "x" * 257},
            {"properties": _deep(MAX_MAP_DEPTH)},
            {"properties": {"l": list(range(MAX_LIST_ITEMS + 1))}},
            {"properties": {f"p{i}": 1 for i in range(MAX_MAP_KEYS + 1)}},
            {"properties": {"n": 2**63}},
            {"session_id": "s:1"},
        ],
        CRM_WEBHOOKS: [
            {"changes": {f"f{i}": {"new": i} for i in range(MAX_CRM_FIELDS + 1)}},
            {"changes": {}},
            {"changes": {"phone": {"new": "5" * (MAX_OBJECT_CHARS + 1)}}},
            {"changes": {"phone": {"old": "5" * MAX_VALUE_CHARS}}},
            {"changes": {"phone": {"new": {"nested": 1}}}},
            {"changes": {"phone": {"newer": 1}}},
            {"changes": {"phone": "555"}},
            {"source": "", "entity": "e"},
            {"entity": "e" * 65},
        ],
    }
    return rng.choice(common + per_topic[topic])


def _swap_type(rng: random.Random, event: dict[str, Any], topic: str) -> None:
    if event:
        event[rng.choice(sorted(event))] = rng.choice(_WRONG_TYPES)


def _drop_field(rng: random.Random, event: dict[str, Any], topic: str) -> None:
    if event:
        del event[rng.choice(sorted(event))]


def _add_field(rng: random.Random, event: dict[str, Any], topic: str) -> None:
    event[rng.choice(["extra", "tenant", "__proto__", "ts2", "Event_Id"])] = rng.choice(
        _WRONG_TYPES + ["x"]
    )


def _past(rng: random.Random, event: dict[str, Any], topic: str) -> None:
    event.update(_past_bound(rng, topic))


def _nan(rng: random.Random, event: dict[str, Any], topic: str) -> None:
    # json.dumps writes NaN and Infinity (not JSON); json.loads reads them back.
    field = {DIALOGUE_EVENTS: "metadata", USER_ACTIONS: "properties"}.get(topic)
    if field is None:
        event["changes"] = {"x": {"new": rng.choice([float("nan"), float("inf")])}}
    else:
        event[field] = {"x": rng.choice([float("nan"), float("-inf")])}


_MUTATIONS: list[_Mutation] = [_swap_type, _drop_field, _add_field, _past, _past, _nan]


def _non_json(rng: random.Random, valid: bytes) -> bytes:
    choices: list[Callable[[], bytes]] = [
        lambda: valid[: rng.randrange(len(valid))],  # truncated
        lambda: b"\xef\xbb\xbf" + valid,  # UTF-8 BOM
        lambda: valid.replace(b'"', b"'"),
        lambda: valid + b"}",
        lambda: valid[:-1] + b',"x":}',
        lambda: rng.choice([b"[]", b"1", b"null", b'"str"', b"true", b"[" * 50_000]),
        lambda: b"{" * 5_000 + b"}" * 5_000,  # past json's recursion limit
        lambda: b"\xff\xfe" + valid,  # invalid UTF-8
        lambda: valid.decode().encode("utf-16"),
        lambda: valid.replace(b"{", b"{\x00", 1),
        lambda: b"<xml>" + valid + b"</xml>",
        lambda: b'{"a":' * 1000 + b"1" + b"}" * 1000,
    ]
    return rng.choice(choices)()


def _hostile_key(rng: random.Random, key: str) -> str:
    if rng.random() < 0.8:
        return key  # between the user's own valid events
    return rng.choice(["", ":", "a:b:c", "🙂", "k" * 1000, "x\x00y", key + ":"])


def generate(n: int, seed: int) -> list[FuzzRecord]:
    """``n`` records for the input topics, reproducible from ``seed``, judged by the contract."""
    rng = random.Random(seed)
    run = f"z{seed}"
    streams = {topic: _Stream(topic, run) for topic in INPUT_TOPICS}
    weights = [len(streams[t].events) for t in INPUT_TOPICS]
    seen_ids: set[str] = set()
    records: list[FuzzRecord] = []
    while len(records) < n:
        topic = rng.choices(INPUT_TOPICS, weights)[0]
        base = streams[topic].take()
        record = _one(rng, topic, base, len(records))
        if record.event_id is not None:
            # Event ids are unique per valid event: a repeat is a replayed
            # duplicate (skipped by the pipeline), another test's subject.
            if record.event_id in seen_ids:
                continue
            seen_ids.add(record.event_id)
        records.append(record)
    return records


def _one(rng: random.Random, topic: str, base: dict[str, Any], index: int) -> FuzzRecord:
    draw = rng.random()
    kind = "valid"
    for name, share in SHARES.items():
        if draw < share:
            kind = name
            break
        draw -= share
    event = base
    if kind in ("edge", "mutated"):
        event["event_id"] = f"{base['event_id']}.{kind[0]}{index}"
    if kind == "edge":
        event.update(_edge_field(rng, topic))
        value = _encode(event)
    elif kind == "mutated":
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            rng.choice(_MUTATIONS)(rng, event, topic)
        value = _encode(event)
    elif kind == "random_bytes":
        value = rng.randbytes(rng.randrange(0, 300))
    elif kind == "non_json":
        value = _non_json(rng, _encode(event))
    elif kind == "too_large":
        value = b'{"text": "' + b"x" * MAX_EVENT_BYTES + b'"}'
    else:
        value = _encode(event)
    key = key_of(base) if kind in ("valid", "edge") else _hostile_key(rng, key_of(base))
    reason, event_id = judge(topic, value)
    if reason is None:
        # A mutation the contract accepts is a valid event: key it as its user.
        key = key_of(json.loads(value))
    return FuzzRecord(topic, key, value, kind, reason, event_id)


def valid_only(records: list[FuzzRecord]) -> list[FuzzRecord]:
    """The records with every invalid one replaced by ``BLANK`` under the same key.

    Published in the same order, the valid records keep their partitions and
    offsets (lineage names them: topic, partition, offset), so a replay of this
    log is comparable field for field with memory built from the fuzzed one;
    the blanks are one plain, known refusal in place of each fuzzed record.
    """
    return [
        r
        if r.valid
        else FuzzRecord(r.topic, r.key, BLANK, "blank", DeadLetterReason.MALFORMED_JSON, None)
        for r in records
    ]


def expected_dead_letters(records: list[FuzzRecord]) -> Counter[tuple[str, str, str]]:
    """(topic, SHA-256 of the value, reason) of each invalid record, with multiplicity."""
    return Counter(
        (r.topic, hashlib.sha256(r.value).hexdigest(), str(r.reason))
        for r in records
        if r.reason is not None
    )


def kinds(records: list[FuzzRecord]) -> Iterator[tuple[str, int, int]]:
    """(kind, valid, invalid) counts per kind, for a report."""
    counts: dict[str, list[int]] = {}
    for r in records:
        counts.setdefault(r.kind, [0, 0])[0 if r.valid else 1] += 1
    for kind, (valid, invalid) in sorted(counts.items()):
        yield kind, valid, invalid


# -- one run on the real services ------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
PHASES = (DIALOGUE_EVENTS, USER_ACTIONS, CRM_WEBHOOKS)
# The topics accept what the project's do (settings.kafka.max_message_bytes),
# so a too-large record reaches the worker and is refused there.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# Model loading (20-95 s on 2 busy cores) plus a phase's backlog; beyond this
# the job is stuck.
CATCH_UP_TIMEOUT_S = 1800.0
_READY_TIMEOUT_S = 300.0
# The sink writes every operation straight away: this run is about the input
# contract, not backpressure (a spooled write would be applied later).
_NO_SPOOL_BUDGET_MS = "600000"
_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MEMSTREAM_METRICS__INGEST_PORT": "0",
    "MEMSTREAM_METRICS__SINK_PORT": "0",
}


@dataclass
class DiffResult:
    """What ``replay_and_diff`` saw: each command's exit and output, the differences."""

    replay_exit: int | None = None
    replay_output: str = ""
    diff_exit: int | None = None
    differences: list[dict[str, Any]] = field(default_factory=list)
    users_compared: int = 0
    diff_output: str = ""
    seconds: dict[str, float] = field(default_factory=dict)  # "replay", "audit diff"

    @property
    def clean(self) -> bool:
        """The diff ran, compared some users and found no difference."""
        return self.diff_exit == 0 and not self.differences and self.users_compared > 0

    def summary(self) -> str:
        """One line for a result table."""
        if self.diff_exit == 0 and not self.differences:
            return "no differences"
        return f"exit {self.diff_exit}, {len(self.differences)} difference(s)"


@dataclass
class FuzzReport:
    """What one run saw; every field is a measurement, the caller judges it."""

    events: int
    valid: int
    invalid: int
    dead_letters: int = 0
    worker_exits: int = 0
    worker_log: str = ""
    missing_dead_letters: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    unexpected_dead_letters: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    letters_without_detail: int = 0
    unexpected_details: list[str] = field(default_factory=list)  # what the worker said
    ops: int = 0
    turns_without_op: list[str] = field(default_factory=list)
    ops_of_no_valid_event: list[str] = field(default_factory=list)
    sink_applied: bool = False
    diff: DiffResult = field(default_factory=DiffResult)  # the valid-only replay against the stores
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each step
    worker_seconds: float = 0.0  # the phases, from the worker's readiness
    total_seconds: float = 0.0

    @property
    def throughput(self) -> float:
        """Events per second the worker took in, model loading excluded."""
        return self.events / self.worker_seconds if self.worker_seconds else 0.0


class _Job:
    """A ``memstream`` command as a subprocess, its output in a log file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our interpreter and modules
                [sys.executable, "-m", *args], cwd=ROOT, env=env, stdout=out, stderr=out
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> int:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=120)


def create_topics(bootstrap: str, namespace: str, partitions: int) -> None:
    config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    specs = [
        kafka_admin.TopicSpec(Topics(namespace).name(t), partitions, config) for t in ALL_TOPICS
    ]
    kafka_admin.ensure_topics(bootstrap, specs)
    deadline = time.monotonic() + 30
    names = [Topics(namespace).name(t) for t in ALL_TOPICS]
    while len(kafka_admin.partition_counts(bootstrap, names)) < len(names):
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics of {namespace!r} did not appear")
        time.sleep(0.2)


def _publish(bootstrap: str, topic: str, records: Sequence[FuzzRecord]) -> None:
    producer = KeyedProducer(
        bootstrap, client_id="memstream-fuzz", max_message_bytes=MAX_MESSAGE_BYTES
    )
    for record in records:
        producer.send(topic, record.value, key=record.key)
    producer.flush()


def _committed_all(reader: OffsetReader, group: str, ends: dict[tuple[str, int], int]) -> bool:
    try:
        done = reader.committed(group)
    except OffsetsUnavailable:
        return False
    return all(done.get(position, 0) >= end for position, end in ends.items())


def _wait_committed(bootstrap: str, group: str, topics: Sequence[str], job: _Job) -> None:
    """Until ``group`` has committed every partition end of ``topics``; raise if ``job`` exits."""
    ends = {(t, p): e for t in topics for p, e in end_offsets(bootstrap, t).items()}
    reader = OffsetReader(bootstrap)
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while not _committed_all(reader, group, ends):
        if not job.alive():
            raise _JobExited(job)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{group} did not reach the end of {topics}; see {job.log}")
        time.sleep(0.3)


class _JobExited(RuntimeError):
    def __init__(self, job: _Job) -> None:
        super().__init__(f"{job.log.name} exited")
        self.job = job


def _wait_ready(job: _Job) -> None:
    # Faust's own line once the worker has joined its group and loaded its stages.
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while "Ready" not in job.log.read_text(errors="replace"):
        if not job.alive():
            raise _JobExited(job)
        if time.monotonic() > deadline:
            return  # then the first phase's time includes the loading
        time.sleep(0.3)


def _drop_store_namespace(settings: Settings, namespace: str) -> None:
    """What the sink and the replay wrote under ``namespace`` in Redis and Neo4j."""
    client = redis.Redis.from_url(settings.redis.url)
    try:
        doomed = list(client.scan_iter(match=f"{namespace}*", count=1000))
        if doomed:
            client.delete(*doomed)
    finally:
        client.close()
    neo = settings.neo4j
    password = neo.password.get_secret_value()
    graph = Neo4jMemory.connect(neo.uri, (neo.user, password) if password else None)
    try:
        graph.driver.execute_query("MATCH (n {ns: $ns}) DETACH DELETE n", ns=namespace)
    finally:
        graph.close()


def run_fuzz(settings: Settings, records: Sequence[FuzzRecord], partitions: int = 3) -> FuzzReport:
    """Run the fuzzed records through worker and sink, replay the valid ones, compare."""
    started = time.monotonic()
    run = uuid.uuid4().hex[:10]
    fuzzed_ns, valid_ns = f"fuzz.{run}.", f"fuzz.{run}.valid."
    live, shadow = f"fz{run}", f"fz{run}r"
    bootstrap = settings.kafka.bootstrap
    work = Path(tempfile.mkdtemp(prefix="memstream-fuzz-"))
    # A private embedded Chroma for the sink, the replay and the audit alike.
    env = {**os.environ, **_ENV, "MEMSTREAM_CHROMA__MODE": "embedded"}
    env["MEMSTREAM_CHROMA__PATH"] = str(work / "chroma")
    valid = [r for r in records if r.valid]
    report = FuzzReport(events=len(records), valid=len(valid), invalid=len(records) - len(valid))
    blanks = valid_only(list(records))
    try:
        for namespace in (fuzzed_ns, valid_ns):
            create_topics(bootstrap, namespace, partitions)
        worker = _Job(
            ["jobs.cli.worker", "--namespace", fuzzed_ns, "--metrics-port", "0"],
            work / "worker.log",
            env,
        )
        try:
            _wait_ready(worker)
            phase_start = time.monotonic()
            report.seconds["worker start"] = phase_start - started
            for topic in PHASES:
                _publish(bootstrap, fuzzed_ns + topic, [r for r in records if r.topic == topic])
                _publish(bootstrap, valid_ns + topic, [r for r in blanks if r.topic == topic])
                _wait_committed(
                    bootstrap, fuzzed_ns + settings.ingest.group_id, [fuzzed_ns + topic], worker
                )
            report.worker_seconds = time.monotonic() - phase_start
            report.seconds["worker"] = report.worker_seconds
        except _JobExited:
            report.worker_exits += 1
        finally:
            report.worker_log = worker.tail()
            # A worker that ran to the end stops cleanly on SIGTERM; any other code is an exit.
            if worker.stop() not in (0, -signal.SIGTERM) and report.worker_exits == 0:
                report.worker_exits += 1
        _check_outputs(bootstrap, fuzzed_ns, records, report)
        if report.worker_exits == 0:
            _apply_and_compare(settings, fuzzed_ns, valid_ns, live, shadow, work, env, report)
    finally:
        mine = [t for t in kafka_admin.list_topics(bootstrap) if t.startswith(fuzzed_ns)]
        kafka_admin.delete_topics(bootstrap, mine)
        kafka_admin.delete_groups_with_prefix(bootstrap, fuzzed_ns)
        for namespace in (live, shadow):
            _drop_store_namespace(settings, namespace)
        shutil.rmtree(work, ignore_errors=True)
    report.total_seconds = time.monotonic() - started
    return report


def _check_outputs(
    bootstrap: str, namespace: str, records: Sequence[FuzzRecord], report: FuzzReport
) -> None:
    letters = [
        DeadLetter.model_validate_json(r.value)
        for r in read_topic(bootstrap, namespace + MEMORY_DLQ, timeout_s=600)
    ]
    report.dead_letters = len(letters)
    got = Counter(
        (letter.topic.removeprefix(namespace), letter.original_sha256, str(letter.reason))
        for letter in letters
    )
    expected = expected_dead_letters(list(records))
    report.missing_dead_letters = expected - got
    report.unexpected_dead_letters = got - expected
    report.letters_without_detail = sum(not letter.detail.strip() for letter in letters)
    report.unexpected_details = [
        f"{letter.topic} {letter.reason}: {letter.detail[:300]}"
        for letter in letters
        if (letter.topic.removeprefix(namespace), letter.original_sha256, str(letter.reason))
        in report.unexpected_dead_letters
    ]
    ops = [
        MemoryOperation.model_validate_json(r.value)
        for r in read_topic(bootstrap, namespace + MEMORY_OPS, timeout_s=600)
    ]
    report.ops = len(ops)
    valid_ids = {r.event_id for r in records if r.event_id is not None}
    report.ops_of_no_valid_event = sorted({op.lineage.event_id for op in ops} - valid_ids)
    appended = {op.lineage.event_id for op in ops if op.op_type is OpType.APPEND_TURN}
    report.turns_without_op = sorted(
        r.event_id
        for r in records
        if r.event_id is not None and r.topic == DIALOGUE_EVENTS and r.event_id not in appended
    )


def _apply_and_compare(
    settings: Settings,
    fuzzed_ns: str,
    valid_ns: str,
    live: str,
    shadow: str,
    work: Path,
    env: dict[str, str],
    report: FuzzReport,
) -> None:
    bootstrap = settings.kafka.bootstrap
    sink = _Job(
        [
            "jobs.cli.sink",
            "--namespace",
            fuzzed_ns,
            "--store-namespace",
            live,
            "--latency-budget-ms",
            _NO_SPOOL_BUDGET_MS,
            "--loglevel",
            "warning",
        ],
        work / "sink.log",
        env,
    )
    step = time.monotonic()
    try:
        _wait_committed(
            bootstrap, fuzzed_ns + settings.sink.group_id, [fuzzed_ns + MEMORY_OPS], sink
        )
        report.sink_applied = True
    finally:
        sink.stop()
    report.seconds["sink"] = time.monotonic() - step
    result = replay_and_diff(valid_ns, shadow, live, env)
    report.seconds.update(result.seconds)
    report.diff = result


def replay_and_diff(
    topic_ns: str, shadow: str, live: str, env: dict[str, str], partition: int | None = None
) -> DiffResult:
    """``memstream replay`` of ``topic_ns``'s input log into ``shadow``, then ``audit diff``.

    The replay covers every partition from offset 0, or ``partition`` of each
    input topic only (the complete history of the users keyed there). The
    diff compares the users ``shadow`` holds with ``live``; no diff runs when
    the replay failed.
    """
    result = DiffResult()
    step = time.monotonic()
    # jobs.cli.app has no __main__ guard (it is the `memstream` entry point's module).
    cli = [sys.executable, "-c", "from jobs.cli.app import main; main()"]
    only = [] if partition is None else ["--partition", str(partition)]
    replay = subprocess.run(  # noqa: S603 - our interpreter and module
        [
            *cli,
            "replay",
            "--namespace",
            shadow,
            "--topic-namespace",
            topic_ns,
            "--from-offset",
            "0",
            *only,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    result.replay_exit, result.replay_output = (
        replay.returncode,
        replay.stdout + replay.stderr[-3000:],
    )
    result.seconds["replay"], step = time.monotonic() - step, time.monotonic()
    if replay.returncode != 0:
        return result
    diff = subprocess.run(  # noqa: S603 - our interpreter and module
        [*cli, "audit", "diff", shadow, "--against", live, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    result.seconds["audit diff"] = time.monotonic() - step
    result.diff_exit, result.diff_output = diff.returncode, diff.stderr[-3000:]
    try:
        document = json.loads(diff.stdout)
        result.differences = document["differences"]
        result.users_compared = len(document["users"])
    except (ValueError, KeyError):
        result.diff_output += diff.stdout[-3000:]
    return result
