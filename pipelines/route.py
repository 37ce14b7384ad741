"""Route: one memory operation per review decision, to the tiers it belongs in.

The review decides *what* changes (the decision types below); route turns an
event's decisions into ``MemoryOperation``s with deterministic ids
(``schemas.ids.op_id(event_id, index, kind)``), so re-running an event yields
the same operations and applying one twice changes nothing.

Tiers: a fact version goes where promotion put it (``record.tiers``: episodic,
plus semantic once promoted); the pending queue, turns and status keys are
working memory (Redis); forgetting a user reaches every tier.

Output topics (``outputs``): the one rule both ingest engines and the ingest
metrics follow — every operation goes to ``memory.ops`` keyed ``tenant:user``,
pending-queue operations (``PENDING_OPS``) to ``memory.pending`` as well, a
dead letter to ``memory.dlq`` under the record's own key. Topics are base
names; the engine puts its namespace in front (``schemas.topics.Topics``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from schemas.deadletter import DeadLetter
from schemas.episodes import Episode
from schemas.hints import HintRequest
from schemas.ids import op_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry, WorkingTurn
from schemas.topics import MEMORY_DLQ, MEMORY_OPS, MEMORY_PENDING

# Ops the pending-queue consumers (HITL tooling) need besides the sink: they
# also go to memory.pending.
PENDING_OPS = frozenset({OpType.ADD_PENDING, OpType.RESOLVE_PENDING})


@dataclass(frozen=True)
class Upsert:
    """Write a committed fact version (new, confirmed again or merged into)."""

    record: MemoryRecord


@dataclass(frozen=True)
class Close:
    """End a superseded or contradicted version (``record.valid_until`` is set)."""

    record: MemoryRecord


@dataclass(frozen=True)
class AddPending:
    """Queue a fact for a human's confirm/reject (``record.state`` is pending)."""

    record: MemoryRecord


@dataclass(frozen=True)
class ResolvePending:
    """A pending item was confirmed or rejected."""

    fact_id: str
    confirmed: bool


@dataclass(frozen=True)
class AppendTurn:
    """Add a dialogue turn to the session's working memory."""

    turn: WorkingTurn


@dataclass(frozen=True)
class SetStatus:
    """Set a status key with a TTL in working memory."""

    status: StatusEntry


@dataclass(frozen=True)
class EraseUser:
    """Forget the user in every tier."""


@dataclass(frozen=True)
class WriteEpisode:
    """Keep a content-bearing turn whole in episodic memory."""

    episode: Episode


@dataclass(frozen=True)
class OutdateEpisode:
    """A fact of this episode was superseded: the turn no longer holds the current value."""

    episode_id: str
    superseded_by: str | None = None  # the episode of the turn that replaced it


@dataclass(frozen=True)
class RequestHint:
    """A trigger fired for the turn: the sink recalls for it and publishes a hint."""

    hint: HintRequest


Decision = (
    Upsert
    | Close
    | AddPending
    | ResolvePending
    | AppendTurn
    | SetStatus
    | EraseUser
    | WriteEpisode
    | OutdateEpisode
    | RequestHint
)

_ALL_TIERS = [Tier.WORKING, Tier.EPISODIC, Tier.SEMANTIC]


def route(
    decisions: Iterable[Decision],
    *,
    tenant_id: str,
    user_id: str,
    lineage: SourceLineage,
    at: datetime,
    first_index: int = 0,
) -> list[MemoryOperation]:
    """The operations of one source event, in decision order, with stable ids.

    ``first_index`` numbers the decisions of a later stage after the ones an
    earlier stage routed for the same event, so their ids never collide.
    """
    ops = []
    for index, decision in enumerate(decisions, start=first_index):
        op_type, fields = _payload(decision)
        ops.append(
            MemoryOperation(
                op_id=op_id(lineage.event_id, index, op_type.value),
                op_type=op_type,
                tenant_id=tenant_id,
                user_id=user_id,
                lineage=lineage,
                at=at,
                **fields,
            )
        )
    return ops


def _payload(decision: Decision) -> tuple[OpType, dict[str, object]]:
    match decision:
        case Upsert(record):
            return OpType.UPSERT_FACT, {"record": record, "tiers": _fact_tiers(record)}
        case Close(record):
            return OpType.CLOSE_FACT, {"record": record, "tiers": _fact_tiers(record)}
        case AddPending(record):
            return OpType.ADD_PENDING, {"record": record, "tiers": [Tier.WORKING]}
        case ResolvePending(fact_id, confirmed):
            resolution = "confirmed" if confirmed else "rejected"
            fields = {"target_fact_id": fact_id, "resolution": resolution}
            return OpType.RESOLVE_PENDING, {**fields, "tiers": [Tier.WORKING]}
        case AppendTurn(turn):
            return OpType.APPEND_TURN, {"turn": turn, "tiers": [Tier.WORKING]}
        case SetStatus(status):
            return OpType.SET_STATUS, {"status": status, "tiers": [Tier.WORKING]}
        case EraseUser():
            return OpType.ERASE_USER, {"tiers": list(_ALL_TIERS)}
        case WriteEpisode(episode):
            return OpType.UPSERT_EPISODE, {"episode": episode, "tiers": [Tier.EPISODIC]}
        case OutdateEpisode(episode_id, superseded_by):
            marks: dict[str, object] = {
                "target_fact_id": episode_id,
                "superseded_by": superseded_by,
            }
            return OpType.OUTDATE_EPISODE, {**marks, "tiers": [Tier.EPISODIC]}
        case RequestHint(hint):
            return OpType.REQUEST_HINT, {"hint": hint, "tiers": []}


def _fact_tiers(record: MemoryRecord) -> list[Tier]:
    if not record.tiers:
        raise ValueError(f"{record.fact_id} has no tiers: promotion must run before route")
    return list(record.tiers)


# -- output topics -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Output:
    """One produced message: a base topic name, its key and the item it carries."""

    topic: str
    item: MemoryOperation | DeadLetter

    @property
    def key(self) -> bytes | None:
        """``tenant:user`` for an operation; the source record's key for a dead letter."""
        if isinstance(self.item, MemoryOperation):
            return f"{self.item.tenant_id}:{self.item.user_id}".encode()
        return self.item.key.encode() if self.item.key is not None else None

    def value(self) -> bytes:
        """The item's JSON, as the output topic carries it."""
        return self.item.model_dump_json().encode("utf-8")


def op_topics(op: MemoryOperation) -> tuple[str, ...]:
    """The base topics an operation is produced to: memory.ops, plus memory.pending."""
    return (MEMORY_OPS, MEMORY_PENDING) if op.op_type in PENDING_OPS else (MEMORY_OPS,)


def outputs(ops: Iterable[MemoryOperation], dead_letter: DeadLetter | None) -> list[Output]:
    """What one source record produces, in order: its operations, then its dead letter."""
    produced = [Output(topic, op) for op in ops for topic in op_topics(op)]
    if dead_letter is not None:
        produced.append(Output(MEMORY_DLQ, dead_letter))
    return produced
