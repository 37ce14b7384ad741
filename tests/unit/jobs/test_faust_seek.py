"""The Faust worker's stall checks never crash on a partition a rebalance took away."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from aiokafka.errors import IllegalStateError
from faust.types import TP

from jobs.ingest.faust_worker import IngestAgent

KEPT = TP("dialogue.events", 1)
GONE = TP("dialogue.events", 0)


class Consumer:
    """The two consumer calls ``IngestAgent._seek`` makes, recorded."""

    def __init__(self, assigned: set[TP], *, revoke_on_seek: bool = False) -> None:
        self.assigned = assigned
        self.revoke_on_seek = revoke_on_seek
        self.seeks: list[tuple[TP, int]] = []

    def assignment(self) -> set[TP]:
        return self.assigned

    async def seek_wait(self, partitions: dict[TP, int]) -> None:
        if self.revoke_on_seek:
            raise IllegalStateError(f"No current assignment for partition {next(iter(partitions))}")
        self.seeks += partitions.items()


def _agent(consumer: Consumer) -> IngestAgent:
    agent = object.__new__(IngestAgent)  # only ``app.consumer`` is read
    agent.app = SimpleNamespace(consumer=consumer)  # type: ignore[assignment]
    return agent


def test_an_assigned_partition_is_sought() -> None:
    consumer = Consumer({KEPT})
    asyncio.run(_agent(consumer)._seek(KEPT, 46))
    assert consumer.seeks == [(KEPT, 46)]


def test_a_partition_no_longer_assigned_is_not_sought() -> None:
    consumer = Consumer({KEPT})
    asyncio.run(_agent(consumer)._seek(GONE, 46))
    assert consumer.seeks == []


def test_a_partition_revoked_during_the_seek_does_not_raise() -> None:
    # Measured in CI: the recommit timer raised this and the worker crashed.
    consumer = Consumer({GONE}, revoke_on_seek=True)
    asyncio.run(_agent(consumer)._seek(GONE, 46))
    assert consumer.seeks == []
