"""Tunable numbers of the write review, with where each default came from.

``ReviewConfig`` is a frozen pydantic model so that memstream/settings.py can
embed it as a section (``MEMSTREAM_REVIEW__COMMIT_THRESHOLD=0.9``); the stage
itself takes it as a plain argument and never reads the environment.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.memory import MemoryKind


def _default_kind_ttls() -> dict[MemoryKind, timedelta]:
    # A status ("busy", "in a meeting", "current_project") with no attribute
    # rule above lives a day before it is re-stated or dropped: our own choice,
    # the order of a working day, to be tuned from recall logs. Status must
    # have a TTL because it is written to Redis status keys with an expiry.
    return {MemoryKind.STATUS: timedelta(days=1)}


class ReviewConfig(BaseModel):
    """Thresholds, TTLs and state caps of the three-stage write review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # HITL gate, docs/architecture.md, Stages: >= 0.82 commit, >= 0.55 pending, below skipped.
    commit_threshold: float = Field(default=0.82, ge=0.0, le=1.0)
    pending_threshold: float = Field(default=0.55, ge=0.0, le=1.0)
    # docs/architecture.md, Stages: MiniLM cosine strictly above 0.85 is a near-duplicate.
    near_duplicate_cosine: float = Field(default=0.85, ge=-1.0, le=1.0)
    # docs/architecture.md, Tiers: a relation enters the semantic tier after 3 independent
    # confirmations (distinct source events).
    promotion_confirmations: int = Field(default=3, ge=1)
    # "Repeated confirmation" is strong evidence (issue 4): a fact held by the
    # fact check is released when this many distinct events have stated it.
    # Two = the original statement plus one independent repeat.
    hold_release_statements: int = Field(default=2, ge=2)
    # Per-attribute overrides of the vocabulary's TTL classes (pipelines/vocabulary/
    # predicates.toml: travel 2 d, order_status 7 d, bookings 30 d). Keys are
    # attributes ((travel, to, Berlin) and (user, travel, Berlin) both set
    # "travel"), matched case-insensitively.
    attribute_ttl: dict[str, timedelta] = Field(default_factory=dict)
    kind_ttl: dict[MemoryKind, timedelta] = Field(default_factory=_default_kind_ttls)
    # A pending item waits this long for a confirm/reject action before it
    # lapses. docs/architecture.md gives no number; a week covers a user who comes back
    # weekly, and keeps the pending queue from growing without end.
    pending_ttl: timedelta = timedelta(days=7)
    # docs/architecture.md, Tiers: working memory keeps the last 5 turns per session. Review
    # emits every turn; the Redis writer trims the list to this length.
    working_turns: int = Field(default=5, ge=1)
    # State size caps (per tenant:user; state.py says what is evicted). A head
    # or pending item with a 384-d MiniLM text vector and a 384-d combined
    # vector is ~17 KB of snapshot JSON: 256 chains + 32 pending measured
    # 4.97 MiB (benchmarks/bench_review.py), under the 8 MiB message limit
    # of the Faust changelog topic (settings.kafka.max_message_bytes).
    max_chains: int = Field(default=256, ge=1)
    # 32 unanswered questions is already more than a person answers; older
    # ones are evicted (and counted) first.
    max_pending: int = Field(default=32, ge=1)
    # Distinct confirming event ids kept per record: enough to prove promotion
    # (the count itself keeps growing in ``confirmations``).
    max_confirmed_by: int = Field(default=16, ge=1)

    @field_validator("attribute_ttl")
    @classmethod
    def _casefold_attributes(cls, ttls: dict[str, timedelta]) -> dict[str, timedelta]:
        return {name.casefold(): ttl for name, ttl in ttls.items()}

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.pending_threshold > self.commit_threshold:
            raise ValueError("pending_threshold must not exceed commit_threshold")
        if self.max_confirmed_by < self.promotion_confirmations:
            raise ValueError("max_confirmed_by must hold promotion_confirmations event ids")
        if self.max_confirmed_by < self.hold_release_statements:
            raise ValueError("max_confirmed_by must hold hold_release_statements event ids")
        if MemoryKind.STATUS not in self.kind_ttl:
            raise ValueError("kind_ttl needs a 'status' entry: status keys are written with a TTL")
        ttls = [*self.attribute_ttl.values(), *self.kind_ttl.values(), self.pending_ttl]
        if any(ttl <= timedelta(0) for ttl in ttls):
            raise ValueError("TTLs must be positive")
        return self

    def base_ttl(
        self, attribute: str, kind: MemoryKind, vocabulary_ttl: timedelta | None = None
    ) -> timedelta | None:
        """The base TTL of a fact: an attribute override, its predicate's class, its kind's.

        A standing rule ("no calls before 9") never expires: it ends only when
        the same value is reversed.
        """
        if kind is MemoryKind.RULE:
            return None
        if attribute.casefold() in self.attribute_ttl:
            return self.attribute_ttl[attribute.casefold()]
        return vocabulary_ttl if vocabulary_ttl is not None else self.kind_ttl.get(kind)
