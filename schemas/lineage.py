"""Where a memory came from: the exact Kafka record of its source event."""

from __future__ import annotations

from pydantic import Field

from schemas._base import Frozen, Identifier
from schemas.bounds import INT64_MAX


class SourceLineage(Frozen):
    topic: str
    # Kafka's own types: a 32-bit partition, a 64-bit offset.
    partition: int = Field(ge=0, le=2**31 - 1)
    offset: int = Field(ge=0, le=INT64_MAX)
    event_id: str
    turn_id: str | None = None
    # Set when a human reviewer (the review console's operator) confirmed or
    # rejected the item: who decided is part of where a memory came from.
    reviewer_id: Identifier | None = None

    @property
    def trace_id(self) -> str:
        """``topic/partition/offset``: enough to fetch the event back from Kafka."""
        return f"{self.topic}/{self.partition}/{self.offset}"
