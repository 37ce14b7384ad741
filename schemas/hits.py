"""``SearchHit``: one fact version as any store's reader returns it (the read model).

The Redis, Chroma and Neo4j readers, the in-memory test stores, the query
service, recall ranking, the report, trace and replay all read fact versions
as this model. Its validity and statement rules are ``MemoryRecord``'s
(``schemas.memory``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import AwareDatetime, Field

from schemas._base import Frozen, Scalar
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryRecord, Polarity, Tier, spoken, valid_at


class SearchHit(Frozen):
    """One fact version as read back from any tier.

    ``score`` is set by similarity reads (higher is closer); ``extra`` holds the
    few store-specific values a reader adds (a pending item's reason and expiry,
    a Chroma item's ``last_retrieved_at``).
    """

    tier: Tier
    fact_id: str
    chain_id: str
    tenant_id: str
    user_id: str
    session_id: str | None = None
    subject: str
    predicate: str
    object: str
    polarity: Polarity
    kind: MemoryKind
    text: str = ""
    version: int
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    supersedes: str | None = None
    lineage: SourceLineage | None = None
    score: float | None = None
    extra: dict[str, Scalar] = Field(default_factory=dict)

    @classmethod
    def from_record(
        cls,
        record: MemoryRecord,
        tier: Tier,
        *,
        score: float | None = None,
        extra: dict[str, Scalar] | None = None,
    ) -> Self:
        """The hit for a full record (stores that keep the whole record)."""
        return cls(
            tier=tier,
            fact_id=record.fact_id,
            chain_id=record.chain_id,
            tenant_id=record.tenant_id,
            user_id=record.user_id,
            session_id=record.session_id,
            subject=record.subject,
            predicate=record.predicate,
            object=record.object,
            polarity=record.polarity,
            kind=record.kind,
            text=record.text,
            version=record.version,
            valid_from=record.valid_from,
            valid_until=record.valid_until,
            expires_at=record.expires_at,
            supersedes=record.supersedes,
            lineage=record.lineage,
            score=score,
            extra=extra or {},
        )

    def is_current(self, at: datetime) -> bool:
        """Whether this version holds at ``at`` (``schemas.memory.valid_at``)."""
        return valid_at(at, self.valid_from, self.valid_until, self.expires_at)

    def statement(self) -> str:
        """The version in words, as recall shows it (``schemas.memory.spoken``)."""
        return spoken(self.subject, self.predicate, self.object, self.polarity, self.text)
