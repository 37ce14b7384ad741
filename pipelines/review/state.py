"""The review's keyed state for one ``tenant:user``: small, explicit, serialisable.

The state is the source of truth for the current head of every version chain
(docs/architecture.md); the stores are views that replaying Kafka rebuilds. A Faust
table and Flink keyed state both hold it as ``snapshot()`` (a JSON-ready dict)
and rebuild it with ``UserMemoryState.restore``.

Size is bounded by ``ReviewConfig`` caps, evicting the least recently touched:
- ``heads`` (current version per chain, with its encoding): ``max_chains``.
  An evicted head becomes a tail, so its chain keeps counting versions; a
  later version supersedes it but cannot close it (its record is gone), which
  the ``heads_evicted`` counter makes visible.
- ``tails`` (last fact id and version of chains without a current head,
  ~100 bytes each): ``TAILS_PER_CHAIN × max_chains``; an evicted tail's chain
  starts again at version 1.
- ``pending`` (items waiting for a confirm/reject action): ``max_pending``.
- ``offsets`` has one entry per source (topic, partition) and ``counters`` a
  fixed set of names, so neither grows with traffic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pipelines.behaviour.window import BehaviourWindow
from pipelines.review.rules import attribute
from pipelines.snapshot_vectors import pack_record, unpack_record
from pipelines.triggers.state import TriggerState
from pipelines.vocabulary import PredicateSpec, default_vocabulary
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Polarity, Tier

# Tails are ~100 bytes against a head's ~7 KB (its vectors packed), so keeping 8 per head
# costs about a tenth of the heads' budget while remembering the chains of facts
# that expired long ago.
TAILS_PER_CHAIN = 8
# Closed values remembered per chain, so a statement that arrives after a newer
# one (Kafka keeps order within a partition only, and CRM webhooks come on a
# topic of their own) can be recognised as what held at its time.
PAST_PER_CHAIN = 4
# Turn context matters only within a live conversation; a user rarely has more
# than a few sessions open at once, and a context is a few hundred bytes.
MAX_DIALOGUE_SESSIONS = 16
# The previous turn an episode quotes is cut to this (pipelines/episodes.py cuts the same).
MAX_LAST_TURN_CHARS = 400
# 2: dense vectors packed as base64 (pipelines/snapshot_vectors.py);
# version 1 snapshots (JSON number lists) still restore.
SNAPSHOT_VERSION = 2
READABLE_SNAPSHOT_VERSIONS = frozenset({1, SNAPSHOT_VERSION})


class PendingCause(StrEnum):
    """Why an item waits for a human: decides whether a repeat can release it."""

    CONTRADICTION = "contradiction"  # held by the fact check; released by a repeat
    LOW_CONFIDENCE = "low_confidence"  # between the pending and commit thresholds
    NOT_USER = "not_user"  # asserted by the agent/system: only the user can confirm
    INVALID_VALUE = "invalid_value"  # does not fit its predicate's type: a human decides
    SOURCES_DISAGREE = "sources_disagree"  # a CRM's first record against the user's word
    LATE = "late"  # said before the current value, arrived after it: a human decides


@dataclass(frozen=True)
class ChainTail:
    """The last version of a chain that has no current head in the state."""

    fact_id: str
    version: int
    semantic: bool  # the chain has reached the semantic tier


@dataclass(frozen=True)
class PastValue:
    """A closed version of a chain: the value, and when it held."""

    object: str
    polarity: Polarity
    valid_from: datetime
    valid_until: datetime

    def held(self, obj: str, polarity: Polarity, at: datetime, spec: PredicateSpec) -> bool:
        """Whether ``obj`` (with ``polarity``) is this value and ``at`` lies in its time."""
        if polarity is not self.polarity or not self.valid_from <= at < self.valid_until:
            return False
        return _states(spec, self.object, obj, self.valid_from, at)

    def to_json(self) -> list[str]:
        """JSON-ready form for the snapshot."""
        return [
            self.object,
            self.polarity.value,
            self.valid_from.isoformat(),
            self.valid_until.isoformat(),
        ]

    @classmethod
    def from_json(cls, data: list[str]) -> PastValue:
        """Inverse of ``to_json``."""
        obj, polarity, since, until = data
        return cls(
            obj, Polarity(polarity), datetime.fromisoformat(since), datetime.fromisoformat(until)
        )


@dataclass(frozen=True)
class PendingItem:
    """A fact waiting for confirm_memory / reject_memory.

    ``record.expires_at`` is when the pending item lapses (what the pending
    queue needs); ``fact_expires_at`` is the fact's own TTL expiry, restored
    on the committed version when the item is confirmed.
    """

    record: MemoryRecord  # its review says why it is held
    cause: PendingCause
    fact_expires_at: datetime | None
    may_merge: bool  # conflict.resolve's flag, kept for the commit on confirmation

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form for the snapshot."""
        expires = self.fact_expires_at
        return {
            "record": pack_record(self.record.model_dump(mode="json")),
            "cause": self.cause.value,
            "fact_expires_at": None if expires is None else expires.isoformat(),
            "may_merge": self.may_merge,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingItem:
        """Inverse of ``to_json``."""
        expires = data["fact_expires_at"]
        return cls(
            record=MemoryRecord.model_validate(unpack_record(data["record"])),
            cause=PendingCause(data["cause"]),
            fact_expires_at=None if expires is None else datetime.fromisoformat(expires),
            may_merge=bool(data["may_merge"]),
        )


def same_statement(
    record: MemoryRecord,
    chain: str,
    obj: str,
    polarity: Polarity,
    said_at: datetime | None = None,
) -> bool:
    """Whether ``obj`` (said at ``said_at``) states ``record``'s value on its chain again.

    "fiber-500" re-states "500mbps fiber", "+1 555 0178" re-states "5550178"
    and "monday 2pm" said on 2 March re-states a CRM's "2026-03-09 2pm" (the
    value type's identity, pipelines/vocabulary/values.py): a confirmation,
    not a new version.
    """
    if record.chain_id != chain or record.polarity is not polarity:
        return False
    spec = default_vocabulary().spec(attribute(record.subject, record.predicate))
    return _states(spec, record.object, obj, record.valid_from, said_at)


def _states(
    spec: PredicateSpec, held: str, obj: str, held_at: datetime, said_at: datetime | None
) -> bool:
    """Whether ``obj`` states the value ``held`` again: the same text, or the type's identity."""
    if held.casefold().strip() == obj.casefold().strip():
        return True
    return spec.same_value(held, obj, held_at, said_at)


class UserMemoryState:
    """Everything the review remembers about one user between events."""

    def __init__(self, *, max_chains: int, max_pending: int) -> None:
        """Start empty; the caps come from ``ReviewConfig``."""
        self.max_chains = max_chains
        self.max_pending = max_pending
        self.heads: dict[str, MemoryRecord] = {}
        self.tails: dict[str, ChainTail] = {}
        # The last closed values of each chain, oldest first (``PAST_PER_CHAIN``);
        # chains are evicted least recently closed first, as many as ``tails``.
        self.past: dict[str, list[PastValue]] = {}
        self.pending: dict[str, PendingItem] = {}
        self.offsets: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        # The extract stage's turn context per session (pipelines/extract/context.py),
        # kept here so one keyed-state snapshot restores everything the ingest
        # job knows about the user: the facts then never depend on how an
        # engine happens to batch records.
        self.dialogue: dict[str, dict[str, Any]] = {}
        # The last turn of each session as [role, text]: what a short answer answers
        # (pipelines/episodes.py). Same sessions and LRU order as ``dialogue``.
        self.last_turns: dict[str, list[str]] = {}
        # The predictive stages' keyed state (pipelines/triggers, pipelines/behaviour),
        # in the same snapshot so both engines checkpoint it with the rest: a crash
        # and restart counts nothing twice, a redelivered turn gets its first decision.
        self.triggers = TriggerState()
        self.behaviour = BehaviourWindow()
        # How often each side was called each name (pipelines/speakers.py): side -> name -> times.
        self.speakers: dict[str, dict[str, int]] = {}

    # -- exactly-once bookkeeping -------------------------------------------
    @staticmethod
    def _source(lineage: SourceLineage) -> str:
        return f"{lineage.topic}:{lineage.partition}"

    def already_applied(self, lineage: SourceLineage) -> bool:
        """Whether the event at ``lineage`` (or a later one) was applied already."""
        last = self.offsets.get(self._source(lineage))
        return last is not None and lineage.offset <= last

    def mark_applied(self, lineage: SourceLineage) -> None:
        """Remember the offset; later copies of this event yield nothing."""
        self.offsets[self._source(lineage)] = lineage.offset

    def put_dialogue(self, session_id: str, context: dict[str, Any]) -> None:
        """Store a session's turn context (most recent last), evicting the oldest."""
        self.dialogue.pop(session_id, None)
        self.dialogue[session_id] = context
        while len(self.dialogue) > MAX_DIALOGUE_SESSIONS:
            del self.dialogue[next(iter(self.dialogue))]

    def put_last_turn(self, session_id: str, role: str, text: str) -> None:
        """Remember a session's latest turn (cut to the context an episode keeps)."""
        self.last_turns.pop(session_id, None)
        self.last_turns[session_id] = [role, text[-MAX_LAST_TURN_CHARS:]]
        while len(self.last_turns) > MAX_DIALOGUE_SESSIONS:
            del self.last_turns[next(iter(self.last_turns))]

    def count(self, name: str, n: int = 1) -> None:
        """Add to a named counter (skipped, held, merged, ...)."""
        self.counters[name] = self.counters.get(name, 0) + n

    def all_counters(self) -> dict[str, int]:
        """The review's counters plus the predictive stages' (``behaviour_*``, ``trigger_*``)."""
        behaviour = {f"behaviour_{k}": v for k, v in self.behaviour.counters.items()}
        evicted = {"trigger_sessions_evicted": self.triggers.sessions_evicted}
        return {**self.counters, **behaviour, **evicted}

    # -- version chains ------------------------------------------------------
    def current(self, at: datetime) -> Iterator[MemoryRecord]:
        """The heads that hold at ``at``."""
        return (head for head in self.heads.values() if head.is_current(at))

    def last_version(self, chain: str) -> ChainTail | None:
        """The newest version of a chain, current or not."""
        head = self.heads.get(chain)
        if head is not None:
            return ChainTail(head.fact_id, head.version, Tier.SEMANTIC in head.tiers)
        return self.tails.get(chain)

    def put_head(self, record: MemoryRecord) -> None:
        """Make ``record`` the current head of its chain (most recently touched)."""
        self.heads.pop(record.chain_id, None)
        self.tails.pop(record.chain_id, None)
        self.heads[record.chain_id] = record
        while len(self.heads) > self.max_chains:
            self.retire(next(iter(self.heads)))
            self.count("heads_evicted")

    def retire(self, chain: str) -> None:
        """Drop a chain's head (closed, expired or evicted), keeping it as a tail."""
        head = self.heads.pop(chain)
        self.tails[chain] = ChainTail(head.fact_id, head.version, Tier.SEMANTIC in head.tiers)
        while len(self.tails) > TAILS_PER_CHAIN * self.max_chains:
            del self.tails[next(iter(self.tails))]

    def remember_closed(self, record: MemoryRecord) -> None:
        """Keep a closed version's value and time (``record.valid_until`` set)."""
        if record.valid_until is None:
            return
        past = self.past.pop(record.chain_id, [])
        value = PastValue(record.object, record.polarity, record.valid_from, record.valid_until)
        self.past[record.chain_id] = [*past, value][-PAST_PER_CHAIN:]
        while len(self.past) > TAILS_PER_CHAIN * self.max_chains:
            del self.past[next(iter(self.past))]

    def held_then(
        self, chain: str, obj: str, polarity: Polarity, at: datetime, spec: PredicateSpec
    ) -> bool:
        """Whether a closed version of ``chain`` held this value at ``at``."""
        return any(p.held(obj, polarity, at, spec) for p in self.past.get(chain, ()))

    def expire(self, at: datetime) -> None:
        """Let time pass: expired heads stop being current, lapsed pending items go."""
        for chain in [c for c, head in self.heads.items() if _ended(head, at)]:
            self.retire(chain)
            self.count("expired")
        for fact in [f for f, item in self.pending.items() if _lapsed(item, at)]:
            del self.pending[fact]
            self.count("pending_lapsed")

    # -- pending queue -------------------------------------------------------
    def add_pending(self, item: PendingItem) -> None:
        """Queue (or refresh) a pending item, evicting the oldest past the cap."""
        self.pending.pop(item.record.fact_id, None)
        self.pending[item.record.fact_id] = item
        while len(self.pending) > self.max_pending:
            del self.pending[next(iter(self.pending))]
            self.count("pending_evicted")

    def find_pending(
        self, chain: str, obj: str, polarity: Polarity, said_at: datetime | None = None
    ) -> PendingItem | None:
        """The pending item stating this value, in any surface form, if any."""
        for item in self.pending.values():
            if same_statement(item.record, chain, obj, polarity, said_at):
                return item
        return None

    def forget(self) -> None:
        """Erase everything known about the user; offsets and counters stay."""
        self.heads.clear()
        self.tails.clear()
        self.past.clear()
        self.pending.clear()
        self.dialogue.clear()
        self.last_turns.clear()
        self.speakers.clear()
        # What the user did and said is memory too (the window's own counters stay).
        self.triggers = TriggerState(sessions_evicted=self.triggers.sessions_evicted)
        self.behaviour.erase()

    # -- copy / rollback ----------------------------------------------------
    def copy(self, *, predictive: bool = True) -> UserMemoryState:
        """A cheap copy: the containers are new, the frozen records are shared.

        ``predictive=False`` shares the trigger state and behaviour window
        instead of copying them: the review's own rollback (which never
        changes them) need not pay for their copy on every event.
        """
        other = UserMemoryState(max_chains=self.max_chains, max_pending=self.max_pending)
        other.rollback(self)
        if predictive:
            other.triggers = TriggerState.from_dict(self.triggers.to_dict())
            other.behaviour = BehaviourWindow.from_dict(self.behaviour.to_dict())
        return other

    def rollback(self, saved: UserMemoryState) -> None:
        """Become a copy of ``saved`` (taken with ``copy()`` before a failed event)."""
        self.heads = dict(saved.heads)
        self.tails = dict(saved.tails)
        self.past = dict(saved.past)
        self.pending = dict(saved.pending)
        self.offsets = dict(saved.offsets)
        self.counters = dict(saved.counters)
        self.dialogue = dict(saved.dialogue)
        self.last_turns = dict(saved.last_turns)
        self.speakers = {side: dict(names) for side, names in saved.speakers.items()}
        self.triggers = saved.triggers
        self.behaviour = saved.behaviour

    # -- snapshot / restore --------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-serialisable copy of the whole state (order kept: it is the LRU order)."""
        return {
            "snapshot_version": SNAPSHOT_VERSION,
            "max_chains": self.max_chains,
            "max_pending": self.max_pending,
            "heads": [pack_record(head.model_dump(mode="json")) for head in self.heads.values()],
            "tails": [[c, t.fact_id, t.version, t.semantic] for c, t in self.tails.items()],
            "past": {c: [v.to_json() for v in past] for c, past in self.past.items()},
            "pending": [item.to_json() for item in self.pending.values()],
            "offsets": dict(self.offsets),
            "counters": dict(self.counters),
            "dialogue": dict(self.dialogue),
            "last_turns": dict(self.last_turns),
            "speakers": {side: dict(names) for side, names in self.speakers.items()},
            "triggers": self.triggers.to_dict(),
            "behaviour": self.behaviour.to_dict(),
        }

    @classmethod
    def restore(cls, data: dict[str, Any]) -> UserMemoryState:
        """Rebuild a state from ``snapshot()`` output (also after a JSON round trip)."""
        if data.get("snapshot_version") not in READABLE_SNAPSHOT_VERSIONS:
            raise ValueError(f"unknown snapshot_version {data.get('snapshot_version')!r}")
        state = cls(max_chains=data["max_chains"], max_pending=data["max_pending"])
        for raw in data["heads"]:
            head = MemoryRecord.model_validate(unpack_record(raw))
            state.heads[head.chain_id] = head
        for chain, fact, version, semantic in data["tails"]:
            state.tails[chain] = ChainTail(fact, version, semantic)
        # Absent from snapshots written before late statements were recognised.
        for chain, past in data.get("past", {}).items():
            state.past[chain] = [PastValue.from_json(v) for v in past]
        for raw in data["pending"]:
            item = PendingItem.from_json(raw)
            state.pending[item.record.fact_id] = item
        state.offsets = {k: int(v) for k, v in data["offsets"].items()}
        state.counters = {k: int(v) for k, v in data["counters"].items()}
        state.dialogue = dict(data.get("dialogue", {}))
        # Absent from snapshots written before episodes: no previous turn known.
        state.last_turns = {k: list(v) for k, v in data.get("last_turns", {}).items()}
        # Absent from snapshots written before speakers were named: no name known yet.
        state.speakers = {
            side: {name: int(times) for name, times in names.items()}
            for side, names in data.get("speakers", {}).items()
        }
        # Absent from snapshots written before the predictive stages: they start empty.
        state.triggers = TriggerState.from_dict(data.get("triggers", {}))
        state.behaviour = BehaviourWindow.from_dict(data.get("behaviour", {}))
        return state


def _ended(head: MemoryRecord, at: datetime) -> bool:
    # Not ``is_current``: a head whose valid_from lies ahead of ``at`` has not
    # ended, it has not started yet, and must stay the head.
    return any(end is not None and end <= at for end in (head.valid_until, head.expires_at))


def _lapsed(item: PendingItem, at: datetime) -> bool:
    return item.record.expires_at is not None and item.record.expires_at <= at
