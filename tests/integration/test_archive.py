"""``memstream archive`` against the real embedded Chroma the settings name.

Items are written through the Chroma tier writer with a clock set in the past,
so their ``last_retrieved_at`` is that old; the command runs with the real
clock, as it does in production. Everything lives in a namespace of its own,
so the sweep never touches other tests' (or live) memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from tier_ops import fact, said, upsert
from typer.testing import CliRunner

from connectors.chroma_memory import ChromaMemory
from connectors.protocols import SearchHit
from jobs.cli.app import app
from jobs.stores import chroma_client
from memstream.settings import Settings, get_settings
from schemas.memory import MemoryRecord
from schemas.ops import MemoryOperation, OpType

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=40)  # not retrieved for 40 days: archived
RECENT = NOW - timedelta(days=5)  # retrieved 5 days ago: stays


@pytest.fixture
def chroma_settings(request: pytest.FixtureRequest) -> Settings:
    """The settings; the services only when Chroma is a server (embedded needs none)."""
    current = get_settings()
    if current.chroma.mode == "server":
        return request.getfixturevalue("settings")  # type: ignore[no-any-return]
    return current


class Writer:
    """A Chroma tier writer in one namespace whose clock the test sets."""

    def __init__(self, settings: Settings, namespace: str) -> None:
        self.now = OLD
        self.memory = ChromaMemory(
            chroma_client(settings),
            namespace=namespace,
            clock=lambda: self.now,
            latency_budget_s=math.inf,
        )

    def write(self, at: datetime, *records: MemoryRecord) -> None:
        self.now = at
        self.memory.write([upsert(r) for r in records])
        self.memory.flush()

    def say(self, at: datetime, *ops: MemoryOperation) -> None:
        self.now = at
        self.memory.write(list(ops))
        self.memory.flush()


@pytest.fixture
def writer(chroma_settings: Settings, unique: str) -> Iterator[Writer]:
    yield Writer(chroma_settings, f"arch{unique}")


def archive(*args: str) -> str:
    result = CliRunner().invoke(app, ["archive", *args])
    assert result.exit_code == 0, result.output
    return result.output


def ids(hits: list[SearchHit]) -> set[str]:
    return {h.fact_id for h in hits}


def test_archive_moves_items_not_retrieved_for_thirty_days_and_keeps_them(
    writer: Writer, chroma_settings: Settings, unique: str
) -> None:
    namespace = writer.memory.namespace
    assert namespace is not None
    a, b = f"a{unique}", f"b{unique}"
    stale_a = fact(a, "u1", "user", "likes", "jazz", event_id="e1", at=OLD)
    stale_b = fact(b, "u2", "user", "lives_in", "berlin", event_id="e2", at=OLD)
    recent_a = fact(a, "u1", "user", "likes", "tea", event_id="e3", at=RECENT)
    writer.write(OLD, stale_a, stale_b)
    writer.write(RECENT, recent_a)
    # The same old items in another namespace (live memory's stand-in): never swept.
    other = Writer(chroma_settings, f"other{unique}")
    other.write(OLD, stale_a)

    out = archive("--namespace", namespace, "--dry-run")
    assert f"{a}: would archive 1 item\n" in out
    assert f"{b}: would archive 1 item\n" in out
    assert "would archive 2 items not retrieved for 30 days (2 tenants" in out
    assert ids(writer.memory.get(a, "u1")) == {stale_a.fact_id, recent_a.fact_id}

    # One tenant only.
    out = archive("--namespace", namespace, "--tenant", a)
    assert out.splitlines()[0] == f"{a}: archived 1 item"
    assert ids(writer.memory.get(b, "u2")) == {stale_b.fact_id}

    out = archive("--namespace", namespace)
    assert f"{a}: archived 0 items\n" in out and f"{b}: archived 1 item\n" in out

    # Recent items stay live; archived ones are not lost: readable from the archive.
    assert ids(writer.memory.get(a, "u1")) == {recent_a.fact_id}
    assert writer.memory.get(b, "u2") == []
    [moved_a] = writer.memory.get(a, "u1", archived=True)
    [moved_b] = writer.memory.get(b, "u2", archived=True)
    assert (moved_a.fact_id, moved_a.object) == (stale_a.fact_id, "jazz")
    assert (moved_b.fact_id, moved_b.object) == (stale_b.fact_id, "berlin")
    # With its vector, so a restore needs no re-embedding.
    stored = writer.memory.collection(a, archive=True).get(
        ids=[stale_a.fact_id], include=["embeddings"]
    )
    assert stored["embeddings"] is not None and stale_a.encoding is not None
    assert list(stored["embeddings"][0]) == pytest.approx(stale_a.encoding.combined, abs=1e-6)
    # The version chain still shows the archived version.
    assert [h.object for h in writer.memory.chain(a, "u1", "user", "likes")] == ["jazz", "tea"]

    # The other namespace kept its old item.
    assert ids(other.memory.get(a, "u1")) == {stale_a.fact_id}

    # Nothing left to move at 30 days; a shorter limit reaches the recent item.
    assert "archived 0 items not retrieved for 30 days" in archive("--namespace", namespace)
    out = archive("--namespace", namespace, "--older-than-days", "3", "--dry-run")
    assert f"{a}: would archive 1 item\n" in out


def test_an_unknown_tenant_archives_nothing_and_creates_nothing(
    writer: Writer, unique: str
) -> None:
    namespace = writer.memory.namespace
    assert namespace is not None
    out = archive("--namespace", namespace, "--tenant", f"nobody{unique}")
    assert out.splitlines()[0] == f"nobody{unique}: archived 0 items"
    assert writer.memory.tenants() == []


def test_episodes_idle_for_thirty_days_are_archived_unless_recall_served_them(
    writer: Writer, unique: str
) -> None:
    namespace = writer.memory.namespace
    assert namespace is not None
    tenant = f"e{unique}"
    old, served, recent = (
        said(tenant, "u1", "ep-old", "My dog is called Biscuit.", at=OLD),
        said(tenant, "u1", "ep-served", "I work nights at the bakery.", at=OLD),
        said(tenant, "u1", "ep-recent", "We moved to Leeds.", at=RECENT),
    )
    writer.say(OLD, old, served)
    writer.say(RECENT, recent)
    writer.now = NOW - timedelta(days=2)  # recall served one old turn two days ago
    writer.memory.mark_retrieved(tenant, [], ["ep-served"])
    writer.now = NOW

    out = archive("--namespace", namespace, "--tenant", tenant, "--dry-run")
    assert out.splitlines()[0] == f"{tenant}: would archive 1 item"
    out = archive("--namespace", namespace, "--tenant", tenant)
    assert out.splitlines()[0] == f"{tenant}: archived 1 item"

    live = {e.episode.episode_id for e in writer.memory.user_episodes(tenant, "u1")}
    assert live == {"ep-served", "ep-recent"}
    kept = writer.memory.episodes(tenant, archive=True).get(ids=["ep-old"], include=["metadatas"])
    assert kept["ids"] == ["ep-old"]  # not lost
    # A redelivered write of the archived turn (and its outdate mark) stays in the archive.
    assert old.episode is not None
    writer.say(
        NOW,
        old,
        old.model_copy(
            update={
                "op_type": OpType.OUTDATE_EPISODE,
                "op_id": "o-outdate",
                "episode": None,
                "target_fact_id": "ep-old",
            }
        ),
    )
    live = {e.episode.episode_id for e in writer.memory.user_episodes(tenant, "u1")}
    assert live == {"ep-served", "ep-recent"}
    archived = writer.memory.episodes(tenant, archive=True).get(
        ids=["ep-old"], include=["metadatas"]
    )
    assert archived["metadatas"] and archived["metadatas"][0]["outdated"] is True
    # Forgetting the user erases archived turns too.
    writer.say(
        NOW,
        old.model_copy(update={"op_type": OpType.ERASE_USER, "op_id": "o-erase", "episode": None}),
    )
    assert writer.memory.episodes(tenant, archive=True).get(ids=["ep-old"])["ids"] == []
    assert writer.memory.user_episodes(tenant, "u1") == []
