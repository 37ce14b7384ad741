"""The pure parts of the batched writers: the episode fold, metadata diffs, Neo4j rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from connectors import neo4j_cypher as cypher
from connectors.chroma_episodes import EpisodeChange, _fold, changed_keys
from connectors.neo4j_memory import _row, _Run
from schemas.episodes import Episode
from schemas.events import Role
from schemas.lineage import SourceLineage
from schemas.memory import MemoryKind, MemoryRecord

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def episode(episode_id: str, text: str) -> Episode:
    return Episode(
        episode_id=episode_id,
        tenant_id="t",
        user_id="u",
        session_id="s",
        turn_index=0,
        role=Role.USER,
        text=text,
        ts=T0,
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=0, event_id="e"),
    )


def test_a_mark_before_a_rewrite_is_undone_and_one_after_it_outdates_it() -> None:
    first, second = episode("ep1", "first"), episode("ep1", "second")
    folded = _fold(
        [
            EpisodeChange("ep1", superseded_by="ep2"),
            EpisodeChange("ep1", episode=first),
            EpisodeChange("ep1", episode=second),  # the later write wins
            EpisodeChange("ep1", superseded_by="ep3"),
            EpisodeChange("ep1", superseded_by="ep3"),
        ]
    )
    entry = folded["ep1"]
    assert (entry.episode, entry.outdated, entry.marks) == (second, True, ["ep3"])


def test_marks_alone_collect_in_order_and_a_bare_mark_only_outdates() -> None:
    folded = _fold(
        [
            EpisodeChange("ep0", superseded_by="ep2"),
            EpisodeChange("ep0", superseded_by=None),
            EpisodeChange("ep0", superseded_by="ep1"),
            EpisodeChange("ep9", superseded_by=None),
            EpisodeChange("ep5", episode=episode("ep5", "kept")),
        ]
    )
    assert [(i, e.episode, e.outdated, e.marks) for i, e in folded.items()] == [
        ("ep0", None, True, ["ep2", "ep1"]),
        ("ep9", None, True, []),
        ("ep5", episode("ep5", "kept"), False, []),
    ]


def test_changed_keys_sets_what_differs_and_removes_what_is_gone() -> None:
    stored = {"a": 1, "b": "x", "gone": True}
    assert changed_keys(stored, {"a": 1, "b": "y", "new": 2.5}) == {
        "b": "y",
        "new": 2.5,
        "gone": None,
    }
    assert changed_keys(stored, dict(stored)) == {}


def test_a_neo4j_row_follows_the_columns_with_times_in_utc() -> None:
    east = timezone(timedelta(hours=20))  # beyond java.time's ±18:00
    record = MemoryRecord(
        fact_id="f1",
        chain_id="c1",
        tenant_id="t",
        user_id="u",
        subject="user",
        predicate="lives_in",
        object="Oslo",
        kind=MemoryKind.FACT,
        text="user lives_in Oslo",
        confidence=0.8,
        valid_from=T0.astimezone(east),
        valid_until=T0 + timedelta(days=1),
        recorded_at=T0,
        version=2,
        supersedes="f0",
        lineage=SourceLineage(topic="dialogue.events", partition=3, offset=9, event_id="e"),
    )
    row = dict(zip(cypher.FACT_COLUMNS, _row(record), strict=True))
    assert row["fact_id"] == "f1" and row["subject"] == "user" and row["object"] == "Oslo"
    assert (row["version"], row["supersedes"], row["lineage_partition"]) == (2, "f0", 3)
    assert row["valid_from"] == "2026-01-05T09:00:00+00:00"
    assert row["valid_until"] == "2026-01-06T09:00:00+00:00"
    assert row["expires_at"] is None and row["session_id"] is None
    # Every column but the two written apart is a property the statement sets.
    for name in cypher.FACT_COLUMNS[2:]:
        assert f"{name}: " in cypher.WRITE_FACTS


def version(fact_id: str, **update: object) -> MemoryRecord:
    record = MemoryRecord(
        fact_id=fact_id,
        chain_id="c1",
        tenant_id="t",
        user_id="u",
        subject="user",
        predicate="phone",
        object="555",
        kind=MemoryKind.FACT,
        text="user phone 555",
        confidence=0.9,
        valid_from=T0,
        recorded_at=T0,
        lineage=SourceLineage(topic="dialogue.events", partition=0, offset=0, event_id="e"),
    )
    return record.model_copy(update=update)


def columns(rows: list[list[object]]) -> list[tuple[object, ...]]:
    """(fact_id, valid_until, confidence) of each row."""
    at = cypher.FACT_COLUMNS.index
    return [(r[0], r[at("valid_until")], r[at("confidence")]) for r in rows]


def test_a_run_writes_each_version_once_later_values_and_closes_kept() -> None:
    run = _Run()
    closed_at = "2026-01-06T09:00:00+00:00"
    assert run.add(version("f1")) == []
    assert run.add(version("f2")) == []
    assert run.add(version("f1", valid_until=T0 + timedelta(days=1))) == []  # its close
    assert run.add(version("f1", confidence=0.7)) == []  # a later, open write
    assert columns(run.take()) == [("f1", closed_at, 0.7), ("f2", None, 0.9)]
    assert run.take() == []


def test_a_write_of_the_same_id_linked_otherwise_ends_the_run() -> None:
    run = _Run()
    run.add(version("f1"))
    run.add(version("f2"))
    # Another tenant's write with the same id needs a statement of its own, after.
    ended = run.add(version("f1", tenant_id="other", confidence=0.1))
    assert columns(ended) == [("f1", None, 0.9), ("f2", None, 0.9)]
    assert columns(run.take()) == [("f1", None, 0.1)]
    for links in ({"user_id": "v"}, {"subject": "x"}, {"object": "7"}, {"supersedes": "f0"}):
        run.add(version("f1"))
        assert columns(run.add(version("f1", **links))) == [("f1", None, 0.9)]
        run.take()


def test_the_neo4j_driver_packs_parameters_in_rust() -> None:
    # neo4j-rust-ext (pyproject.toml): without it the driver packs every row
    # value in pure Python, ~10 ms of a 256-row chunk (benchmarks/bench_writers.py).
    from neo4j._codec.packstream import v1

    assert v1._rust_pack is not None
