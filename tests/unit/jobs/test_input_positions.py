"""The Faust worker's input bookkeeping: contiguous records pass, holes rewind, gaps resolve."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobs.ingest.input_positions import InputMessage, InputPositions, Unseen

P0 = ("dialogue.events", 0)
P1 = ("dialogue.events", 1)


@dataclass(frozen=True)
class Msg:
    tp: tuple[str, int]
    offset: int


def _batch(tp: tuple[str, int], *offsets: int) -> list[Msg]:
    return [Msg(tp, o) for o in offsets]


def _offsets(messages: Sequence[InputMessage]) -> list[int]:
    return [m.offset for m in messages]


def test_contiguous_records_pass_and_advance_each_partition() -> None:
    positions = InputPositions()
    positions.start(P0, 3)
    positions.start(P1, 0)
    admission = positions.admit([Msg(P0, 3), Msg(P1, 0), Msg(P0, 4), Msg(P1, 1)])
    assert admission.admitted == [Msg(P0, 3), Msg(P1, 0), Msg(P0, 4), Msg(P1, 1)]
    assert admission.rewind == {}
    assert (positions.next_offset(P0), positions.next_offset(P1)) == (5, 2)


def test_redelivered_records_are_dropped() -> None:
    positions = InputPositions()
    positions.start(P0, 5)
    admission = positions.admit(_batch(P0, 3, 4, 5))
    assert _offsets(admission.admitted) == [5]
    assert admission.dropped == 2
    assert positions.next_offset(P0) == 6


def test_a_hole_rewinds_and_holds_records_until_the_missing_one_arrives() -> None:
    # Measured after a SIGKILL: Faust delivered offsets 0, 2, 3 (1 was lost).
    positions = InputPositions()
    positions.start(P0, 0)
    first = positions.admit(_batch(P0, 0, 2))
    assert _offsets(first.admitted) == [0]
    assert first.rewind == {P0: 1}
    positions.start(P0, 1)  # the broker has offset 1
    # Still queued before the seek took effect: it may have moved Faust's read
    # position past the re-read records, so the partition is sought again.
    later = positions.admit(_batch(P0, 3))
    assert later.admitted == []
    assert later.rewind == {P0: 1}
    reread = positions.admit(_batch(P0, 1, 2, 3))
    assert _offsets(reread.admitted) == [1, 2, 3]
    assert positions.next_offset(P0) == 4


def test_a_gap_the_broker_confirms_resumes_past_it() -> None:
    # Nothing at offset 7 (a transaction marker): the broker's next record is 8.
    positions = InputPositions()
    positions.start(P0, 7)
    opened = positions.admit(_batch(P0, 8, 9))
    assert opened.admitted == []
    assert opened.rewind == {P0: 7}
    positions.start(P0, 8)
    reread = positions.admit(_batch(P0, 8, 9))
    assert _offsets(reread.admitted) == [8, 9]
    assert positions.next_offset(P0) == 10


def test_a_new_hole_after_the_first_closed_rewinds_again() -> None:
    positions = InputPositions()
    positions.start(P0, 0)
    assert positions.admit(_batch(P0, 1)).rewind == {P0: 0}
    positions.start(P0, 0)
    assert _offsets(positions.admit(_batch(P0, 0, 1)).admitted) == [0, 1]
    assert positions.admit(_batch(P0, 4)).rewind == {P0: 2}


def test_a_hole_on_one_partition_does_not_hold_another() -> None:
    positions = InputPositions()
    positions.start(P0, 0)
    positions.start(P1, 0)
    admission = positions.admit([Msg(P0, 2), Msg(P1, 0), Msg(P1, 1)])
    assert admission.admitted == [Msg(P1, 0), Msg(P1, 1)]
    assert admission.rewind == {P0: 0}


def test_forgotten_partitions_start_again_from_where_they_are_told() -> None:
    positions = InputPositions()
    positions.start(P0, 0)
    positions.admit(_batch(P0, 0, 1))
    positions.forget([P0])
    assert not positions.known(P0)
    positions.start(P0, 10)  # another worker owned it meanwhile and committed 10
    assert _offsets(positions.admit(_batch(P0, 10)).admitted) == [10]


def test_an_assigned_partition_silent_for_the_patience_is_due_once_per_patience() -> None:
    unseen = Unseen(patience_s=5.0)
    assert unseen.due([P0], now=100.0) == []
    assert unseen.due([P0], now=104.9) == []
    assert unseen.due([P0], now=105.0) == [P0]
    assert unseen.due([P0], now=106.0) == []  # looked at: the next look is a patience later
    assert unseen.due([P0], now=110.0) == [P0]


def test_a_partition_seen_or_revoked_meanwhile_starts_its_patience_again() -> None:
    unseen = Unseen(patience_s=5.0)
    unseen.due([P0, P1], now=100.0)
    assert unseen.due([P1], now=103.0) == []  # P0 delivered a record (or was revoked)
    assert unseen.due([P0, P1], now=105.0) == [P1]
    assert unseen.due([P0], now=109.0) == []  # P0 unseen again only since 105
    assert unseen.due([P0], now=110.0) == [P0]
