"""Where a memory came from: the exact Kafka record of its source event."""

from __future__ import annotations

from pydantic import Field

from schemas._base import Frozen


class SourceLineage(Frozen):
    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)
    event_id: str
    turn_id: str | None = None

    @property
    def trace_id(self) -> str:
        """``topic/partition/offset``: enough to fetch the event back from Kafka."""
        return f"{self.topic}/{self.partition}/{self.offset}"
