"""What a replay reads: the request checked, then resolved to offset ranges per partition.

Every argument is checked before anything is written (``memstream replay``
exits 2 and the shadow namespace stays as it was): :func:`check_request` needs
nothing but the request; :func:`plan_ranges` asks the broker for the topics'
partitions and bounds and resolves times to offsets; :func:`resolve_ranges` is
the pure rule in between, so every refusal is unit-tested without a broker.

Ranges are half-open, ``[start, end)`` per partition, like Kafka's own log-end
offset: ``--to-offset M`` stops before offset M. Offsets and times apply to
every selected partition (``--partition`` narrows the selection). Both offsets
must lie within what the partition holds now, ``[log start, log end]``. A time
is resolved per partition to the first record whose timestamp is at or after
it (``--to-time`` is inclusive: records stamped at that instant are replayed).
A ``--from-time`` before the oldest retained record of a partition whose older
records retention deleted is refused: the replay would silently miss them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from connectors.kafka_range import PartitionBounds, RangeReader
from connectors.redis_memory import RedisKeys
from schemas.topics import INPUT_TOPICS, Topics

# Kafka timestamps have millisecond resolution: the first record after an
# inclusive --to-time is the first one stamped at least this much later.
_KAFKA_TICK = timedelta(milliseconds=1)


class ReplayError(ValueError):
    """A bad replay argument; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class ReplayRequest:
    """What ``memstream replay`` was asked to do."""

    namespace: str  # the shadow store namespace written to; never "" (live memory)
    topics: tuple[str, ...] = INPUT_TOPICS  # base names; read under Topics(topic_namespace)
    partition: int | None = None  # None: every partition
    from_offset: int | None = None
    from_time: datetime | None = None
    to_offset: int | None = None  # exclusive
    to_time: datetime | None = None  # inclusive
    topic_namespace: str = ""  # prefix of the topic names (tests' private topics)


@dataclass(frozen=True)
class PartitionFacts:
    """What the broker says about one partition, as far as the request needs it."""

    bounds: PartitionBounds
    from_time_offset: int | None = None  # first offset stamped >= from_time; None: none
    to_time_offset: int | None = None  # first offset stamped > to_time; None: none
    first_time: datetime | None = None  # stamp of the oldest retained record, if any


@dataclass(frozen=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one partition of one input topic (the full topic name)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def count(self) -> int:
        """How many offsets the range spans (records, unless transaction markers sit there)."""
        return self.end - self.start


@dataclass(frozen=True)
class ReplayPlan:
    """A checked request and the ranges it reads."""

    request: ReplayRequest
    ranges: list[PartitionRange] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Offsets spanned by all ranges."""
        return sum(r.count for r in self.ranges)


def check_request(request: ReplayRequest) -> None:
    """Refuse what is wrong without asking the broker (ReplayError)."""
    if not request.namespace:
        raise ReplayError(
            "--namespace must name a shadow namespace; the empty namespace is live memory, "
            "which a replay never writes"
        )
    try:
        RedisKeys(request.namespace)  # the strictest of the three stores' rules
    except ValueError as exc:
        raise ReplayError(f"--namespace {request.namespace!r}: {exc}") from None
    unknown = [t for t in request.topics if t not in INPUT_TOPICS]
    if unknown:
        raise ReplayError(
            f"unknown topic {', '.join(unknown)}: a replay reads the input topics "
            f"{', '.join(INPUT_TOPICS)} (give the base name; --topic-namespace adds a prefix)"
        )
    if (request.from_offset is None) == (request.from_time is None):
        raise ReplayError("give exactly one of --from-offset and --from-time")
    if request.to_offset is not None and request.to_time is not None:
        raise ReplayError("give at most one of --to-offset and --to-time")
    for name, value in (("--from-offset", request.from_offset), ("--to-offset", request.to_offset)):
        if value is not None and value < 0:
            raise ReplayError(f"{name} must be 0 or more, got {value}")
    if request.partition is not None and request.partition < 0:
        raise ReplayError(f"--partition must be 0 or more, got {request.partition}")
    offsets = (request.from_offset, request.to_offset)
    if offsets[0] is not None and offsets[1] is not None and offsets[0] > offsets[1]:
        raise ReplayError(
            f"--from-offset {offsets[0]} is after --to-offset {offsets[1]} (the end is exclusive)"
        )
    times = (request.from_time, request.to_time)
    if times[0] is not None and times[1] is not None and times[0] > times[1]:
        raise ReplayError(f"--from-time {times[0]} is after --to-time {times[1]}")


def _where(bounds: PartitionBounds) -> str:
    return (
        f"{bounds.topic}[{bounds.partition}] holds offsets {bounds.log_start}..{bounds.log_end}"
        f" (log start..log end)"
    )


def _offset(name: str, value: int, bounds: PartitionBounds, hint: str) -> int:
    if not bounds.log_start <= value <= bounds.log_end:
        raise ReplayError(f"{name} {value} is outside what {_where(bounds)}; {hint}")
    return value


def _resolve(request: ReplayRequest, facts: PartitionFacts) -> PartitionRange:
    b = facts.bounds
    hint = "choose an offset in that interval, or narrow the replay with --partition"
    if request.from_offset is not None:
        start = _offset("--from-offset", request.from_offset, b, hint)
    else:
        retained = facts.first_time
        assert request.from_time is not None  # noqa: S101  # check_request: one of the two
        if b.log_start > 0 and (retained is None or request.from_time < retained):
            oldest = f"is {retained.isoformat()}" if retained else "is gone too (none is left)"
            raise ReplayError(
                f"--from-time {request.from_time.isoformat()} is before the retention start of "
                f"{b.topic}[{b.partition}]: offsets below {b.log_start} were deleted and its "
                f"oldest retained record {oldest}; give a later --from-time, or --from-offset "
                f"{b.log_start} with --partition {b.partition}"
            )
        start = facts.from_time_offset if facts.from_time_offset is not None else b.log_end
    if request.to_offset is not None:
        end = _offset("--to-offset", request.to_offset, b, hint)
    elif request.to_time is not None:
        end = facts.to_time_offset if facts.to_time_offset is not None else b.log_end
    else:
        end = b.log_end
    # Only mixed bounds (an offset and a time) can cross here; same-kind ones were
    # checked in check_request. A partition whose range is empty reads nothing.
    return PartitionRange(b.topic, b.partition, start, max(start, end))


def resolve_ranges(request: ReplayRequest, facts: Sequence[PartitionFacts]) -> ReplayPlan:
    """The ranges of a checked request (pure); ReplayError when any partition refuses it."""
    plan = ReplayPlan(request, [_resolve(request, f) for f in facts])
    if plan.total == 0:
        raise ReplayError(
            "the range holds no records on any selected partition; check the offsets or "
            "times (`memstream lag` and `kcat -C -o beginning` show what the topics hold)"
        )
    return plan


def plan_ranges(reader: RangeReader, request: ReplayRequest) -> ReplayPlan:
    """Check ``request`` against the broker and resolve it to ranges (ReplayError if refused)."""
    check_request(request)
    names = Topics(request.topic_namespace).names(request.topics)
    counts = reader.partition_counts(names)
    missing = [n for n in names if n not in counts]
    if missing:
        raise ReplayError(
            f"topic {', '.join(missing)} does not exist on {reader.bootstrap} "
            "(check --topic-namespace; `memstream infra up` creates the default topics)"
        )
    facts: list[PartitionFacts] = []
    for name in names:
        if request.partition is not None and request.partition >= counts[name]:
            raise ReplayError(
                f"--partition {request.partition} is out of range: {name} has partitions "
                f"0..{counts[name] - 1}"
            )
        selected = [request.partition] if request.partition is not None else range(counts[name])
        facts += _facts(reader, request, name, list(selected))
    return resolve_ranges(request, facts)


def _facts(
    reader: RangeReader, request: ReplayRequest, topic: str, partitions: list[int]
) -> list[PartitionFacts]:
    bounds = reader.bounds(topic, partitions)
    starts: dict[int, int | None] = {}
    ends: dict[int, int | None] = {}
    first: dict[int, datetime] = {}
    if request.from_time is not None:
        starts = reader.offsets_for_time(topic, partitions, request.from_time)
        first = reader.first_times([b for b in bounds if b.log_start > 0])
    if request.to_time is not None:
        ends = reader.offsets_for_time(topic, partitions, request.to_time + _KAFKA_TICK)
    return [
        PartitionFacts(
            bounds=b,
            from_time_offset=starts.get(b.partition),
            to_time_offset=ends.get(b.partition),
            first_time=first.get(b.partition),
        )
        for b in bounds
    ]
