"""Two ``memstream worker`` processes in one group on 6 partitions: SIGKILL one, start it again.

Issue 13's proof that the Faust worker scales out. Two workers run as
subprocesses (``python -m jobs.cli.worker``, as an operator starts them) in one
consumer group on private topics of 6 partitions. The dialogue sample, copied
under several users per sample user so that every partition carries some, is
published in two parts: each user's first turns, then the rest.

1. Both workers join and split the partitions; then part 1 is published, so
   both work on it.
2. Once the victim has processed a batch of part 1, it is SIGKILLed while the
   group has not committed its partitions to their end. The survivor must own
   all 6 partitions once the group drops the dead member (after its session
   timeout, ``faust_worker.SESSION_TIMEOUT_S``) and commit every partition to
   its end.
3. The victim is started again and part 2 is published the moment its stages
   are loaded (Faust starts): the survivor is in the middle of part 2 when the
   group rebalances. Both must own partitions again, the restarted worker must
   process records of its own, and every partition must be committed to its end.

After 2 and after 3, ``memory.ops`` (read_committed) must hold exactly the
operations of the reference — the pure pipeline run in this process over the
records the workers consumed: none lost, none the pipeline does not make, each
the same decision. Each once, but for what a SIGKILL may leave by design
(docs/guarantees.md: the worker's output is at least once, its effect exactly
once, the sink applying an op id once): operations the victim published from
its batch in hand before it died, which the survivor decides again,
identically. Those may appear twice, and only those: records of the victim's
partitions at or past the group's commit at the kill, one batch at most. The
rebalance of step 3 adds no copy at all.

The group, the assignment and the owners are read from Kafka (the group's
description: members and their partitions); a member is matched to its
process by the member id the worker logs when it joins.
"""

from __future__ import annotations

import json
import random
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import ConsumerGroupState
from ingest_helpers import (
    CATCH_UP_TIMEOUT_S,
    GROUP_ID,
    Message,
    Worker,
    committed,
    create_topics,
    delete_topics,
    log_ends,
    parse_op,
    publish,
    same_op,
    sample_messages,
)

from connectors.kafka_admin import admin_client
from connectors.kafka_io import Record, read_topic
from connectors.kafka_offsets import OffsetReader
from jobs.ingest.stages import load_pipeline, run_batch
from memstream.settings import Settings
from pipelines.ingest import SourceRecord
from pipelines.review import UserMemoryState
from schemas.ops import MemoryOperation
from schemas.topics import DIALOGUE_EVENTS, Topics

PARTITIONS = 6
# Copies of each of the sample's 8 users: 24 users, so that every one of the
# 6 partitions carries several (checked), 702 turns in all.
COPIES = 3
# Small batches: many batch boundaries to die between, and a victim that is
# far from done with its partitions after its first batch.
BATCH_SIZE = 8
# How far past the victim's first batch the kill may land: up to about a
# batch, so that it falls inside one (NLP, outputs, states, commit) or between two.
KILL_DELAY_S = (0.0, 1.5)
_MEMBER_ID = re.compile(r"with member_id (\S+)")
_BATCH = re.compile(r"batch: (\d+) records")
# Faust's first line, once the stages are loaded: the worker joins the group
# a few seconds later (3.5 s measured under load).
_STARTING = "[^Worker]: Starting"

ALL_PARTITIONS = set(range(PARTITIONS))
Assignment = dict[str, set[int]]  # member id or role → its partitions of the input topic
Offsets = dict[tuple[str, int], int]  # (topic, partition) → offset
Ops = dict[str, str]  # op id → op JSON
_T = TypeVar("_T")


def _copy(line: bytes, copy: int) -> Message:
    """The sample event as the same turn of another user, with ids of its own."""
    event = json.loads(line)
    for name in ("user_id", "event_id", "session_id", "turn_id"):
        if event.get(name) is not None:
            event[name] = f"{event[name]}-{copy}"
    return f"{event['tenant_id']}:{event['user_id']}", json.dumps(event).encode()


def _parts() -> tuple[list[Message], list[Message]]:
    """Part 1 (each user's first half of the sample's turns) and part 2 (the rest)."""
    sample = sample_messages(DIALOGUE_EVENTS)
    per_user = Counter(key for key, _ in sample)
    seen: Counter[str | None] = Counter()
    first: list[Message] = []
    second: list[Message] = []
    for key, line in sample:
        seen[key] += 1
        part = first if seen[key] <= per_user[key] // 2 else second
        part.extend(_copy(line, copy) for copy in range(COPIES))
    return first, second


@dataclass
class Scenario:
    """What the two workers did, as read from Kafka and their logs.

    Assignments are keyed by role: ``victim`` and ``survivor``, then
    ``survivor`` alone, then ``survivor`` and ``restarted``.
    """

    namespace: str
    source: str
    before_kill: Assignment = field(default_factory=dict)
    ends_part1: Offsets = field(default_factory=dict)
    committed_at_kill: Offsets = field(default_factory=dict)
    after_kill: Assignment = field(default_factory=dict)
    committed_part1: Offsets = field(default_factory=dict)
    ops_part1: list[Record] = field(default_factory=list)
    inputs_part1: list[Record] = field(default_factory=list)
    after_restart: Assignment = field(default_factory=dict)
    restarted_records: int = 0
    ends_final: Offsets = field(default_factory=dict)
    committed_final: Offsets = field(default_factory=dict)
    ops_final: list[Record] = field(default_factory=list)
    inputs_final: list[Record] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    reference_part1: Ops = field(default_factory=dict)
    reference_final: Ops = field(default_factory=dict)


def _assignment(bootstrap: str, group: str, topic: str) -> Assignment | None:
    """Each member's partitions of ``topic`` by member id; None while the group is not stable."""
    # The client held while its future is pending: a future of a client already
    # collected is never answered.
    admin = admin_client(bootstrap)
    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    if description.state != ConsumerGroupState.STABLE:
        return None
    return {
        member.member_id: {
            tp.partition for tp in member.assignment.topic_partitions if tp.topic == topic
        }
        for member in description.members
    }


def _log(worker: Worker, since: int = 0) -> str:
    return worker.log_path.read_text(errors="replace")[since:]


def _member_id(worker: Worker, since: int = 0) -> str | None:
    """The member id the worker last joined the group with (after ``since`` in its log)."""
    found = _MEMBER_ID.findall(_log(worker, since))
    return found[-1] if found else None


def _records_processed(worker: Worker, since: int = 0) -> int:
    return sum(int(n) for n in _BATCH.findall(_log(worker, since)))


def _wait(what: str, check: Callable[[], _T | None], workers: Sequence[Worker]) -> _T:
    """Poll ``check`` until it returns a value; every worker must stay alive meanwhile."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while time.monotonic() < deadline:
        for worker in workers:
            assert worker.alive(), f"worker exited waiting for {what}:\n{worker.log_tail()}"
        found = check()
        if found is not None:
            return found
        time.sleep(0.25)
    tails = "\n---\n".join(w.log_tail() for w in workers)
    raise AssertionError(f"no {what} within {CATCH_UP_TIMEOUT_S} s:\n{tails}")


def _wait_assignment(
    bootstrap: str, namespace: str, roles: Mapping[str, tuple[Worker, int]]
) -> Assignment:
    """The stable assignment, by role, once its members are exactly these workers.

    ``roles``: role → (worker, where its current run starts in its log). Every
    member must own partitions and together they must own them all.
    """
    source = Topics(namespace).name(DIALOGUE_EVENTS)
    workers = [worker for worker, _ in roles.values()]

    def settled() -> Assignment | None:
        ids = {role: _member_id(worker, since) for role, (worker, since) in roles.items()}
        current = _assignment(bootstrap, namespace + GROUP_ID, source)
        if current is None or set(current) != set(ids.values()):
            return None
        by_role = {role: current[member] for role, member in ids.items() if member}
        owned = set().union(*by_role.values())
        return by_role if all(by_role.values()) and owned == ALL_PARTITIONS else None

    return _wait("the group's assignment", settled, workers)


def _wait_committed(
    bootstrap: str, namespace: str, ends: Offsets, workers: Sequence[Worker]
) -> Offsets:
    reader = OffsetReader(bootstrap)
    last: Offsets = {}

    def done() -> Offsets | None:
        positions = committed(reader, namespace, ends)
        last.clear()
        last.update(positions)
        return positions if positions == ends else None

    try:
        return _wait("commit of every partition to its end", done, workers)
    except AssertionError as error:
        behind = {tp: (last.get(tp), end) for tp, end in ends.items() if last.get(tp) != end}
        raise AssertionError(f"{error}\nbehind, (committed, end): {behind}") from None


class ReferencePipeline:
    """The pure pipeline in this process, fed part after part, its user states carried over."""

    def __init__(self, settings: Settings) -> None:
        """Load the stages (as a worker does)."""
        self.pipeline = load_pipeline(settings)
        self.states: dict[str, UserMemoryState] = {}

    def ops_of(self, records: Sequence[Record]) -> Ops:
        """The operations of ``records`` after every part fed before."""
        # Per partition in offset order: each user's events in the order a worker sees them.
        ordered = sorted(records, key=lambda r: (r.partition, r.offset))
        source = [
            SourceRecord(
                DIALOGUE_EVENTS, r.partition, r.offset, r.key.encode() if r.key else None, r.value
            )
            for r in ordered
        ]
        batch = run_batch(self.pipeline, source, self._load_state)
        assert not any(r.dead_letter for r in batch.results), "the sample stream is all valid"
        self.states.update(batch.states)
        return {op.op_id: op.model_dump_json() for r in batch.results for op in r.ops}

    def _load_state(self, key: str) -> UserMemoryState | None:
        # A copy, as a worker restores one from its table.
        return self.states[key].copy() if key in self.states else None


def _run(settings: Settings, log_dir: Path) -> Iterator[Scenario]:
    bootstrap = settings.kafka.bootstrap
    namespace = f"test.workers.{uuid.uuid4().hex[:10]}."
    source = Topics(namespace).name(DIALOGUE_EVENTS)
    rng = random.Random(namespace)  # noqa: S311 - victim and kill timing, not security
    part1, part2 = _parts()
    create_topics(bootstrap, namespace, PARTITIONS)
    # The reference runs in a thread while the workers load and while the
    # victim restarts: the module's time is mostly model loading.
    background = ThreadPoolExecutor(max_workers=1)
    loading = background.submit(ReferencePipeline, settings)
    options = ("--batch-size", str(BATCH_SIZE), "--metrics-port", "0")
    victim, survivor = (Worker(namespace, log_dir / f"{n}.log", *options) for n in ("a", "b"))
    if rng.random() < 0.5:  # either may be the first to join and lead the group
        victim, survivor = survivor, victim
    workers = [victim, survivor]
    run = Scenario(namespace, source)
    try:
        # 1. Both in the group before any input, so that both work on part 1.
        roles = {"victim": (victim, 0), "survivor": (survivor, 0)}
        run.before_kill = _wait_assignment(bootstrap, namespace, roles)
        since = len(_log(victim))
        publish(bootstrap, source, part1)
        run.ends_part1 = log_ends(bootstrap, [source])
        _wait(
            "the victim's first batch", lambda: _records_processed(victim, since) or None, workers
        )
        time.sleep(rng.uniform(*KILL_DELAY_S))
        victim.kill()
        run.committed_at_kill = committed(OffsetReader(bootstrap), namespace, run.ends_part1)

        # 2. The survivor alone: every partition, every record of part 1.
        workers = [survivor]
        run.after_kill = _wait_assignment(bootstrap, namespace, {"survivor": (survivor, 0)})
        run.committed_part1 = _wait_committed(bootstrap, namespace, run.ends_part1, workers)
        run.ops_part1 = read_topic(bootstrap, Topics(namespace).memory_ops)
        run.inputs_part1 = read_topic(bootstrap, source)
        reference1 = background.submit(lambda: loading.result().ops_of(run.inputs_part1))

        # 3. The victim again; part 2 lands on the survivor just before the rebalance.
        since = len(_log(victim))
        restarted = victim.restart()
        workers = [survivor, restarted]
        _wait(
            "the restarted worker's start",
            lambda: _STARTING in _log(restarted, since) or None,
            workers,
        )
        publish(bootstrap, source, part2)
        run.ends_final = log_ends(bootstrap, [source])
        roles = {"survivor": (survivor, 0), "restarted": (restarted, since)}
        run.after_restart = _wait_assignment(bootstrap, namespace, roles)
        run.committed_final = _wait_committed(bootstrap, namespace, run.ends_final, workers)
        run.restarted_records = _records_processed(restarted, since)
        run.ops_final = read_topic(bootstrap, Topics(namespace).memory_ops)
        run.inputs_final = read_topic(bootstrap, source)
        for worker in workers:  # both at once: each stop waits out a rebalance
            worker.process.send_signal(signal.SIGTERM)
        run.exit_codes = [worker.process.wait(timeout=60) for worker in workers]
        part1 = {(r.partition, r.offset) for r in run.inputs_part1}
        part2 = [r for r in run.inputs_final if (r.partition, r.offset) not in part1]
        run.reference_part1 = reference1.result()
        run.reference_final = run.reference_part1 | loading.result().ops_of(part2)
        yield run
    finally:
        for worker in workers:
            if worker.alive():
                worker.kill()
        background.shutdown(wait=True, cancel_futures=True)
        delete_topics(bootstrap, namespace)


@pytest.fixture(scope="module")
def scenario(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    yield from _run(settings, tmp_path_factory.mktemp("faust-workers"))


Source = tuple[int, int]  # (partition, offset) of an op's input record


def _source(record: Record) -> Source:
    lineage = parse_op(record).lineage
    return lineage.partition, lineage.offset


def _described(ops: Sequence[MemoryOperation]) -> list[str]:
    return sorted(
        f"{op.op_type.value} p{op.lineage.partition}@{op.lineage.offset} {op.lineage.event_id}"
        for op in ops
    )[:40]


def _assert_exactly(
    ops: Sequence[Record], expected: Ops, may_repeat: Callable[[Source], bool]
) -> set[Source]:
    """``ops`` are the expected operations, each the same decision, each once but where allowed.

    Returns the input records whose operations are there more than once.
    """
    assert expected, "the stream must yield operations"
    counts = Counter(parse_op(r).op_id for r in ops)
    extra = [parse_op(r) for r in ops if parse_op(r).op_id not in expected]
    lost = [MemoryOperation.model_validate_json(expected[i]) for i in set(expected) - set(counts)]
    assert not extra and not lost, (
        f"operations the pipeline does not make: {_described(extra)}; lost: {_described(lost)}"
    )
    for record in ops:
        assert same_op(record.value, expected[parse_op(record).op_id])
    repeated = {_source(r) for r in ops if counts[parse_op(r).op_id] > 1}
    assert all(may_repeat(source) for source in repeated), sorted(repeated)
    return repeated


def test_every_partition_carries_both_parts(scenario: Scenario) -> None:
    ends1 = {p: end for (_, p), end in scenario.ends_part1.items()}
    ends = {p: end for (_, p), end in scenario.ends_final.items()}
    assert set(ends) == ALL_PARTITIONS
    for partition in ALL_PARTITIONS:
        assert 0 < ends1[partition] < ends[partition], partition


def test_both_workers_share_the_partitions_before_the_kill(scenario: Scenario) -> None:
    victim, survivor = scenario.before_kill["victim"], scenario.before_kill["survivor"]
    assert victim and survivor
    assert not victim & survivor
    assert victim | survivor == ALL_PARTITIONS


def test_the_kill_lands_mid_stream_on_the_victims_partitions(scenario: Scenario) -> None:
    unfinished = {
        p
        for (topic, p), end in scenario.ends_part1.items()
        if scenario.committed_at_kill[(topic, p)] < end
    }
    assert unfinished & scenario.before_kill["victim"], "killed after its partitions were done"


def _in_the_victims_last_batch(scenario: Scenario) -> Callable[[Source], bool]:
    """Whether an input record may have been in the victim's batch in hand at the kill."""
    victims = scenario.before_kill["victim"]
    return lambda s: s[0] in victims and s[1] >= scenario.committed_at_kill[(scenario.source, s[0])]


def test_the_survivor_takes_over_every_partition_and_loses_nothing(scenario: Scenario) -> None:
    assert scenario.after_kill == {"survivor": ALL_PARTITIONS}
    assert scenario.committed_part1 == scenario.ends_part1
    for position, offset in scenario.committed_at_kill.items():
        assert scenario.committed_part1[position] >= offset
    may_repeat = _in_the_victims_last_batch(scenario)
    repeated = _assert_exactly(scenario.ops_part1, scenario.reference_part1, may_repeat)
    assert len(repeated) <= BATCH_SIZE, sorted(repeated)


def test_the_restarted_worker_gets_partitions_back_and_the_output_stays_exact(
    scenario: Scenario,
) -> None:
    assert scenario.after_restart["survivor"] and scenario.after_restart["restarted"]
    assert scenario.restarted_records > 0, "the restarted worker processed none of part 2"
    assert scenario.committed_final == scenario.ends_final
    _assert_exactly(
        scenario.ops_final, scenario.reference_final, _in_the_victims_last_batch(scenario)
    )
    # Step 3 adds no copy: part 1's operations as they were, part 2's once each.
    in_part1 = {(r.partition, r.offset) for r in scenario.inputs_part1}
    again = [r for r in scenario.ops_final if _source(r) in in_part1]
    assert Counter(r.value for r in again) == Counter(r.value for r in scenario.ops_part1)
    part2 = Counter(parse_op(r).op_id for r in scenario.ops_final if _source(r) not in in_part1)
    assert part2 and max(part2.values()) == 1
    assert scenario.exit_codes == [0, 0]  # SIGTERM: both stop cleanly
