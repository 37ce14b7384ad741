"""What the bundled sample stream must leave in memory (issue 12: the demo report is right).

Shared by the unit test (in-memory stores) and the integration test (the real
stores after ``memstream run --sample``): the current facts and version chains
of the sample users whose report was wrong, read from every stored version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from schemas.hits import SearchHit
from schemas.memory import Polarity

Versions = Callable[[str, str], Sequence[SearchHit]]  # (tenant, user) -> every version
Fact = tuple[str, str, str]  # (predicate, object, "affirmed" / "negated")


def _current(versions: Sequence[SearchHit], at: datetime) -> set[Fact]:
    return {(h.predicate, h.object, h.polarity.value) for h in versions if h.is_current(at)}


def _chain(versions: Sequence[SearchHit], predicate: str) -> list[str]:
    """The affirmed chain of a single-valued predicate, oldest first."""
    chain = [h for h in versions if h.predicate == predicate and h.polarity is Polarity.AFFIRMED]
    return [h.object for h in sorted(chain, key=lambda h: (h.valid_from, h.version))]


def check_sample_memory(versions: Versions, at: datetime) -> None:
    """Assert the sample users' memory; ``at`` is after the stream's last event."""
    bob = versions("northwind-fiber", "u-bob")
    now = _current(bob, at)
    # "1 Gbps" is a plan, never an address; one phone number, however written.
    assert [o for p, o, _ in now if p == "address"] == ["17 harbor road, unit 5, bayview"], now
    assert _chain(bob, "address") == ["17 harbor road, unit 5, bayview"]
    assert [o for p, o, _ in now if p in {"phone_number", "preferred_phone"}] == ["5550178"], now
    assert [o for p, o, _ in now if p == "plan"] == ["1gbps"], now  # = the CRM's fiber-1000

    mei = versions("greenleaf-eats", "u-mei")
    now = _current(mei, at)
    assert _chain(mei, "address") == ["31 elm street", "77 cedar road, flat 2"]
    # She said "Yes, English is fine"; the CRM's first record (zh) waits for a human.
    assert ("preferred_language", "english", "affirmed") in now, now
    assert not {f for f in now if f[0] == "preferred_language" and f[1] != "english"}, now
    assert ("likes", "coriander", "negated") in now, now

    alice = versions("northwind-fiber", "u-alice")
    now = _current(alice, at)
    # "never send SMS, email works better": the negation survives the new channel.
    assert {("contact_channel", "sms", "negated"), ("contact_channel", "email", "affirmed")} <= now
    assert ("contact_time", "before 9", "negated") in now, now
    # "Monday at 2 pm", said three times and booked by the CRM: one window, one version.
    assert ("installation_time", "weekend", "negated") in now, now
    assert _chain(alice, "installation_time") == ["monday 2pm"], _chain(alice, "installation_time")
    # "500 Mbps fiber" and the CRM's "fiber-500" are one plan.
    assert _chain(alice, "plan") == ["500mbps"], _chain(alice, "plan")
    assert _chain(alice, "phone_number") == ["5550142", "5550199"]
