"""Review decisions per second, beside plain-insert baselines measured in the same run.

    python benchmarks/bench_review.py [--users 50] [--events 4000] [--seed 7]

A deterministic synthetic stream (dialogue turns carrying one or two facts,
with repeats, value changes, near-duplicates, low-confidence and
contradicting facts, and confirm actions naming unknown items, which exercise
the lookup only) is fed to:

- ``dict insert``: the "no review" writer, each fact stored under its
  (user, subject, predicate) key — the floor any writer pays;
- ``record insert``: the same, but building the MemoryRecord first (what a
  writer without review would still have to do);
- ``review``: the Reviewer with one keyed state per user, all stages and route;
- ``review + snapshot``: the same, plus ``snapshot()`` after every event as a
  Faust table re-assignment would do.

MiniLM vectors are random unit vectors of the real size (384), so cosine
costs what it costs in production. Prints a table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipelines.review import Reviewer, UserMemoryState
from pipelines.review.commit import candidate
from schemas.events import ActionType, DialogueEvent, Role, UserAction
from schemas.facts import ExtractedFact
from schemas.ids import chain_id
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryKind, MemoryRecord
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

EPOCH = datetime(2026, 3, 2, tzinfo=UTC)
TENANT = "bench"
DIM = 384  # all-MiniLM-L6-v2
PREDICATES = ["phone_number", "city", "employer", "likes", "travel", "diet", "ordered"]
OBJECTS = ["Lyon", "Oslo", "Acme", "sushi", "cilantro", "bacon burger", "vegan", "555 0100"]


@dataclass(frozen=True)
class Item:
    """One input event with what the earlier stages would have produced."""

    event: DialogueEvent | UserAction
    lineage: SourceLineage
    facts: list[ExtractedFact]
    encodings: list[Encoding | None]


def _unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def _near(rng: random.Random, base: list[float]) -> list[float]:
    v = [x + rng.gauss(0.0, 0.01) for x in base]  # cosine ≈ 0.98
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def generate(users: int, events: int, seed: int) -> list[Item]:
    """A deterministic stream of dialogue turns and confirm actions."""
    rng = random.Random(seed)
    vectors: dict[tuple[str, str, str], list[float]] = {}
    items, offsets = [], {DIALOGUE_EVENTS: 0, USER_ACTIONS: 0}
    for n in range(events):
        user = f"u{rng.randrange(users)}"
        ts = EPOCH + timedelta(minutes=n)
        event_id = f"ev{n}"
        if rng.random() < 0.05:  # a confirm action; the target may be stale or unknown
            offsets[USER_ACTIONS] += 1
            action = UserAction(
                event_id=event_id,
                tenant_id=TENANT,
                user_id=user,
                ts=ts,
                action_type=ActionType.CONFIRM_MEMORY,
                target_id=f"f_unknown{n}",
            )
            lineage = SourceLineage(
                topic=USER_ACTIONS, partition=0, offset=offsets[USER_ACTIONS], event_id=event_id
            )
            items.append(Item(action, lineage, [], []))
            continue
        facts: list[ExtractedFact] = []
        encodings: list[Encoding | None] = []
        for _ in range(rng.choice([1, 1, 2])):
            predicate, obj = rng.choice(PREDICATES), rng.choice(OBJECTS)
            key = (user, predicate, obj)
            vec = _near(rng, vectors[key]) if key in vectors else _unit(rng)
            vectors.setdefault(key, vec)
            facts.append(
                ExtractedFact(
                    tenant_id=TENANT,
                    user_id=user,
                    session_id="s1",
                    event_id=event_id,
                    event_ts=ts,
                    subject="user",
                    predicate=predicate,
                    object=obj,
                    kind=MemoryKind.STATUS if predicate == "travel" else MemoryKind.FACT,
                    confidence=rng.choice([0.95, 0.9, 0.85, 0.7, 0.5]),
                    text=f"user {predicate} {obj}",
                    is_update=rng.random() < 0.1,
                )
            )
            encodings.append(Encoding(text=vec, combined=vec))
        offsets[DIALOGUE_EVENTS] += 1
        turn = DialogueEvent(
            event_id=event_id,
            tenant_id=TENANT,
            user_id=user,
            ts=ts,
            session_id="s1",
            turn_index=n,
            role=Role.USER,
            text=" and ".join(f.text for f in facts),
        )
        lineage = SourceLineage(
            topic=DIALOGUE_EVENTS, partition=0, offset=offsets[DIALOGUE_EVENTS], event_id=event_id
        )
        items.append(Item(turn, lineage, facts, encodings))
    return items


def dict_insert(items: list[Item]) -> int:
    """The no-review writer: last write wins under (user, subject, predicate)."""
    store: dict[tuple[str, str, str], ExtractedFact] = {}
    for item in items:
        for fact in item.facts:
            store[(fact.user_id, fact.subject, fact.predicate)] = fact
    return sum(len(item.facts) for item in items)


def record_insert(items: list[Item]) -> int:
    """The no-review writer that still builds a MemoryRecord per fact."""
    store: dict[str, MemoryRecord] = {}
    for item in items:
        for fact, encoding in zip(item.facts, item.encodings, strict=True):
            chain = chain_id(fact.tenant_id, fact.user_id, fact.subject, fact.predicate)
            store[chain] = candidate(
                fact,
                chain,
                at=fact.event_ts,
                expires_at=None,
                review=[],
                lineage=item.lineage,
                encoding=encoding,
            )
    return sum(len(item.facts) for item in items)


def review(items: list[Item], *, snapshot: bool) -> int:
    """The Reviewer over per-user states; returns the facts reviewed."""
    reviewer = Reviewer()
    states: dict[str, UserMemoryState] = {}
    stored: dict[str, dict[str, object]] = {}
    for item in items:
        key = item.event.user_id
        state = states.setdefault(key, reviewer.new_state())
        reviewer.apply(state, item.event, item.lineage, item.facts, item.encodings)
        if snapshot:
            stored[key] = state.snapshot()
    return sum(len(item.facts) for item in items)


def full_state() -> tuple[int, float, float]:
    """A user state filled to its caps: JSON size, snapshot and restore seconds."""
    rng, reviewer = random.Random(1), Reviewer()
    state = reviewer.new_state()
    caps = reviewer.config.max_chains + reviewer.config.max_pending
    for n in range(caps):
        ts = EPOCH + timedelta(seconds=n)
        pending = n >= reviewer.config.max_chains
        fact = ExtractedFact(
            tenant_id=TENANT,
            user_id="u0",
            event_id=f"ev{n}",
            event_ts=ts,
            subject="user",
            predicate=f"attribute_{n}",
            object=f"a value of typical length {n}",
            confidence=0.7 if pending else 0.9,
            text=f"the user's attribute {n} is a value of typical length",
        )
        vec = _unit(rng)
        turn = DialogueEvent(
            event_id=f"ev{n}",
            tenant_id=TENANT,
            user_id="u0",
            ts=ts,
            session_id="s1",
            turn_index=n,
            role=Role.USER,
            text=fact.text,
        )
        lineage = SourceLineage(topic=DIALOGUE_EVENTS, partition=0, offset=n, event_id=f"ev{n}")
        reviewer.on_dialogue(state, turn, lineage, [fact], [Encoding(text=vec, combined=vec)])
    assert len(state.heads) + len(state.pending) == caps
    snap_s = min(_time(lambda: len(state.snapshot()))[1] for _ in range(3))
    data = state.snapshot()
    restore_s = min(_time(lambda: len(UserMemoryState.restore(data).heads))[1] for _ in range(3))
    return len(json.dumps(data)), snap_s, restore_s


def _time(run: Callable[[], int]) -> tuple[int, float]:
    start = time.perf_counter()
    count = run()
    return count, time.perf_counter() - start


def main() -> None:
    """Run every contender on the same stream and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    items = generate(args.users, args.events, args.seed)

    runs = {
        "dict insert (baseline)": lambda: dict_insert(items),
        "record insert (baseline)": lambda: record_insert(items),
        "review": lambda: review(items, snapshot=False),
        "review + snapshot per event": lambda: review(items, snapshot=True),
    }
    results = {name: _time(run) for name, run in runs.items()}
    base = results["dict insert (baseline)"]
    base_rate = base[0] / base[1]
    print(f"{len(items)} events, {base[0]} facts, {args.users} users, {DIM}-d text vectors")
    print(f"{'contender':30} {'facts':>7} {'seconds':>9} {'facts/s':>11} {'vs dict':>9}")
    for name, (count, seconds) in results.items():
        rate = count / seconds
        print(f"{name:30} {count:7d} {seconds:9.3f} {rate:11,.0f} {rate / base_rate:9.4f}")

    size, snap_s, restore_s = full_state()
    print(
        f"state at its caps ({Reviewer().config.max_chains} heads + "
        f"{Reviewer().config.max_pending} pending, {DIM}-d text and combined vectors): "
        f"snapshot JSON {size / 2**20:.2f} MiB, snapshot() {snap_s * 1e3:.1f} ms, "
        f"restore() {restore_s * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
