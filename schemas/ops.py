"""Memory operations: what the ingest job decides, and the sink job applies.

Every operation has a deterministic ``op_id`` derived from its source event, so
applying the same operation twice leaves every store unchanged.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, Self

from pydantic import AwareDatetime, Field, model_validator

from schemas._base import Frozen, Identifier, Scalar
from schemas.episodes import Episode
from schemas.hints import HintRequest
from schemas.lineage import SourceLineage
from schemas.memory import MemoryRecord, Tier


class OpType(StrEnum):
    UPSERT_FACT = "upsert_fact"  # write a new or updated fact version
    CLOSE_FACT = "close_fact"  # set valid_until on a superseded version
    ADD_PENDING = "add_pending"  # queue a fact for human confirmation
    RESOLVE_PENDING = "resolve_pending"  # confirmed or rejected
    APPEND_TURN = "append_turn"  # working memory: last turns of a session
    SET_STATUS = "set_status"  # working memory: status key with TTL
    ERASE_USER = "erase_user"  # forget a user everywhere
    UPSERT_EPISODE = "upsert_episode"  # episodic memory: a content-bearing turn, whole
    OUTDATE_EPISODE = "outdate_episode"  # its fact was superseded: rank it below the new one
    # Not a store write: the sink runs recall for the turn and publishes a hint.
    REQUEST_HINT = "request_hint"


class WorkingTurn(Frozen):
    session_id: str
    turn_index: int = Field(ge=0)
    role: str
    text: str
    intent: str | None = None
    ts: AwareDatetime


class StatusEntry(Frozen):
    name: str = Field(min_length=1, max_length=64)
    value: Scalar
    ttl_s: int = Field(gt=0)


_REQUIRED: dict[OpType, tuple[str, ...]] = {
    OpType.UPSERT_FACT: ("record",),
    OpType.CLOSE_FACT: ("record",),
    OpType.ADD_PENDING: ("record",),
    OpType.RESOLVE_PENDING: ("target_fact_id", "resolution"),
    OpType.APPEND_TURN: ("turn",),
    OpType.SET_STATUS: ("status",),
    OpType.ERASE_USER: (),
    OpType.UPSERT_EPISODE: ("episode",),
    OpType.OUTDATE_EPISODE: ("target_fact_id",),
    OpType.REQUEST_HINT: ("hint",),
}


class MemoryOperation(Frozen):
    """One idempotent change to one or more memory tiers (topic ``memory.ops``)."""

    schema_version: Literal[1] = 1
    op_id: str
    op_type: OpType
    tenant_id: Identifier
    user_id: Identifier
    tiers: list[Tier] = Field(
        description="The tiers written; empty exactly for request_hint, which writes none."
    )
    lineage: SourceLineage
    at: AwareDatetime = Field(description="Event time of the decision.")
    record: MemoryRecord | None = None
    turn: WorkingTurn | None = None
    status: StatusEntry | None = None
    target_fact_id: str | None = Field(
        default=None, description="resolve_pending: the pending fact; outdate_episode: the episode."
    )
    episode: Episode | None = None
    superseded_by: str | None = Field(
        default=None, description="outdate_episode: the episode that holds the newer value."
    )
    resolution: Literal["confirmed", "rejected"] | None = None
    hint: HintRequest | None = Field(
        default=None, description="request_hint: what fired for the turn, for the sink's recall."
    )

    @model_validator(mode="after")
    def _payload_matches_type(self) -> Self:
        missing = [f for f in _REQUIRED[self.op_type] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"{self.op_type.value} needs {', '.join(missing)}")
        # A hint request reaches no store writer (they take the ops of their tier).
        if (self.op_type is OpType.REQUEST_HINT) == bool(self.tiers):
            raise ValueError("tiers must be empty for request_hint and only for it")
        return self
