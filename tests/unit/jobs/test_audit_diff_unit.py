"""audit() over two in-memory namespaces: only the shadow's users, every kind of difference."""

from __future__ import annotations

from memory_ops import T0, add_pending, record, resolve, status, turn, upsert

from jobs.ops.audit_diff import ONLY_LIVE, ONLY_SHADOW, audit
from memstream.testing import InMemoryStores
from schemas.ops import MemoryOperation


def filled(*ops: MemoryOperation) -> InMemoryStores:
    stores = InMemoryStores.create()
    for store in stores:
        store.write(ops)
        store.flush()
    return stores


def test_the_same_history_in_both_namespaces_is_equal() -> None:
    ops = [
        upsert(record("f1", "monday")),
        turn(1),
        status("mood", "ok"),
        add_pending(record("p1", "x")),
    ]
    result = audit(filled(*ops), filled(*ops), "shadow", "")
    assert result.users == [("acme", "u1")]
    assert result.equal and result.differences == []


def test_differences_per_store_and_only_the_shadow_users_are_compared() -> None:
    same = upsert(record("f1", "monday"))
    live = filled(
        same,
        upsert(record("f2", "tea", predicate="likes_drink")),
        upsert(record("g1", "x", user="other")),  # a user the shadow does not hold
        turn(1, "hello"),
        add_pending(record("p1", "tuesday")),
        resolve("p1", "confirmed"),
    )
    shadow = filled(
        same,
        upsert(record("f3", "coffee", predicate="likes_drink")),
        turn(1, "hullo"),
        add_pending(record("p1", "tuesday")),
    )
    result = audit(shadow, live, "shadow", "")
    assert result.users == [("acme", "u1")]
    found = {(d.store, d.what) for d in result.differences}
    assert ("episodic", ONLY_LIVE) in found and ("episodic", ONLY_SHADOW) in found
    assert ("semantic", ONLY_LIVE) in found and ("semantic", ONLY_SHADOW) in found
    assert ("resolved", ONLY_LIVE) in found
    assert ("pending", ONLY_SHADOW) in found  # resolved in live: no longer pending there
    assert ("turn", "text differs") in found
    assert all(d.user_id == "u1" for d in result.differences)
    assert not result.equal


def test_episodes_are_compared_too() -> None:
    from memory_ops import lineage, op

    from schemas.episodes import Episode
    from schemas.events import Role
    from schemas.ops import OpType

    def episode(text: str, outdated: bool = False) -> list[MemoryOperation]:
        said = Episode(
            episode_id="e1",
            tenant_id="acme",
            user_id="u1",
            session_id="s1",
            turn_index=0,
            role=Role.USER,
            text=text,
            ts=T0,
            lineage=lineage(1),
        )
        ops = [op(OpType.UPSERT_EPISODE, episode=said)]
        return ops + ([op(OpType.OUTDATE_EPISODE, target_fact_id="e1")] if outdated else [])

    assert audit(filled(*episode("Friday")), filled(*episode("Friday")), "s", "").equal
    changed = audit(filled(*episode("Friday")), filled(*episode("Monday")), "s", "")
    assert {(d.store, d.what) for d in changed.differences} == {("episode", "text differs")}
    outdated = audit(filled(*episode("Friday", outdated=True)), filled(*episode("Friday")), "s", "")
    assert {(d.store, d.what) for d in outdated.differences} == {("episode", "outdated differs")}
