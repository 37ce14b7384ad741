"""Route: one memory operation per review decision, to the tiers it belongs in.

The review decides *what* changes (the decision types below); route turns an
event's decisions into ``MemoryOperation``s with deterministic ids
(``schemas.ids.op_id(event_id, index, kind)``), so re-running an event yields
the same operations and applying one twice changes nothing.

Tiers: a fact version goes where promotion put it (``record.tiers``: episodic,
plus semantic once promoted); the pending queue, turns and status keys are
working memory (Redis); forgetting a user reaches every tier.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from schemas.ids import op_id
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry, WorkingTurn


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


Decision = Upsert | Close | AddPending | ResolvePending | AppendTurn | SetStatus | EraseUser

_ALL_TIERS = [Tier.WORKING, Tier.EPISODIC, Tier.SEMANTIC]


def route(
    decisions: Iterable[Decision],
    *,
    tenant_id: str,
    user_id: str,
    lineage: SourceLineage,
    at: datetime,
) -> list[MemoryOperation]:
    """The operations of one source event, in decision order, with stable ids."""
    ops = []
    for index, decision in enumerate(decisions):
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


def _fact_tiers(record: MemoryRecord) -> list[Tier]:
    if not record.tiers:
        raise ValueError(f"{record.fact_id} has no tiers: promotion must run before route")
    return list(record.tiers)
