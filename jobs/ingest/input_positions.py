"""Which input records the Faust worker may process next: per-partition positions, holes, rewinds.

The worker commits its input offsets itself (jobs/ingest/faust_worker.py); a commit
of offset N says "every record below N is done", which is only true if the
worker saw every record below N. Faust does not guarantee that: while a
restarted worker joins the group and recovers its table, Faust already
delivers input records, then clears its in-memory queues at the next
rebalance and seeks only partitions with a committed offset above 0. The
records cleared from the queues are never delivered again — measured here:
after a SIGKILL and restart, a worker processed offsets 0, 2, 3 of a partition
(1 was lost), another 0, 1, 5, 6. (faust-streaming issues 596 and 216
describe the same recovery race.)

``InputPositions`` therefore checks every delivered record against the next
offset it expects per partition:

- the expected offset, or the first record of a partition not yet known:
  admitted, and the partition advances;
- below it: a redelivery of a record already processed — dropped;
- above it: a hole. The caller asks the broker where the partition really
  continues (``first_offset_from``: the expected offset for a hole Faust
  made, a later one where the broker has no record, e.g. a transaction
  marker), seeks the consumer there (``start``), and records past it are
  dropped until that one arrives. Every batch that still drops records past
  the hole seeks again: Faust keeps delivering what it fetched before the
  seek, and such a stale record raises Faust's own read position, so that it
  would discard the re-read records as already seen; the seek after the last
  stale record is the one that holds.

``InputPositions`` is pure bookkeeping; ``first_offset_from`` is the one
broker read it needs.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import TopicPartition

from connectors.kafka_io import consumer

# A broker read of one record; past this the caller waits for the expected
# offset itself (its records then stay held until it arrives).
PROBE_TIMEOUT_S = 10.0


class InputMessage(Protocol):
    """What the bookkeeping reads of a consumed record (Faust's ``Message`` has it)."""

    @property
    def tp(self) -> Hashable: ...

    @property
    def offset(self) -> int: ...


@dataclass
class Admission:
    """The records of a batch that may be processed, and the partitions to rewind."""

    admitted: list[InputMessage] = field(default_factory=list)
    rewind: dict[Hashable, int] = field(default_factory=dict)  # partition → offset to seek to
    dropped: int = 0  # redeliveries and records past a hole


class InputPositions:
    """The next offset to process per partition."""

    def __init__(self) -> None:
        """No partition known yet."""
        self._next: dict[Hashable, int] = {}

    def known(self, tp: Hashable) -> bool:
        """Whether the partition's position is known (started or seen)."""
        return tp in self._next

    def start(self, tp: Hashable, offset: int) -> None:
        """Set where a partition continues: its committed offset, or where a rewind resumes."""
        self._next[tp] = offset

    def forget(self, tps: Iterable[Hashable]) -> None:
        """Drop partitions (revoked): their next owner commits them, they start afresh."""
        for tp in tps:
            self._next.pop(tp, None)

    def next_offset(self, tp: Hashable) -> int:
        """The offset the partition continues at: what a commit should record."""
        return self._next[tp]

    def admit(self, messages: Sequence[InputMessage]) -> Admission:
        """Split a batch (in delivery order) into records to process and to drop."""
        result = Admission()
        for message in messages:
            tp, offset = message.tp, message.offset
            expected = self._next.get(tp)
            if expected is None or offset == expected:
                result.admitted.append(message)
                self._next[tp] = offset + 1
                continue
            result.dropped += 1
            if offset > expected:
                result.rewind[tp] = expected
        return result


def first_offset_from(bootstrap: str, topic: str, partition: int, offset: int) -> int | None:
    """The offset of the broker's first record at or after ``offset`` (None: none in time)."""
    # read_uncommitted, as the worker's own consumer (Faust at_least_once).
    probe = consumer(bootstrap, "memstream-ingest-probe", read_committed=False)
    try:
        probe.assign([TopicPartition(topic, partition, offset)])  # no group join, no commit
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while time.monotonic() < deadline:
            message = probe.poll(0.5)
            if message is not None and message.error() is None:
                return message.offset()
        return None
    finally:
        probe.close()


class Unseen:
    """Assigned partitions no record has come from yet, and since when.

    A partition handed over at a rebalance is known to ``InputPositions`` only
    once its first record arrives. Measured (CI, two workers, one SIGKILLed):
    the survivor processed every record it was given and committed it, yet one
    taken-over partition delivered nothing for 240 s while its log held
    records, so no batch and no stall check ever looked at it. ``due`` says
    which partitions have been silent too long to be looked at again.
    """

    def __init__(self, patience_s: float) -> None:
        """``patience_s``: how long a partition may stay unseen before it is due."""
        self.patience_s = patience_s
        self._since: dict[Hashable, float] = {}

    def due(self, unseen: Iterable[Hashable], now: float) -> list[Hashable]:
        """The partitions unseen for ``patience_s`` or more; each is due once per patience.

        ``unseen``: the assigned partitions without a known position now.
        Partitions no longer in it (seen, or revoked) are forgotten.
        """
        current = set(unseen)
        self._since = {tp: since for tp, since in self._since.items() if tp in current}
        due = []
        for tp in current:
            since = self._since.setdefault(tp, now)
            if now - since >= self.patience_s:
                due.append(tp)
                self._since[tp] = now
        return due
