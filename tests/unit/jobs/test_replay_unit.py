"""run_replay into in-memory writers: every batch reaches every writer, counted per store."""

from __future__ import annotations

from memory_ops import record, upsert

from jobs.ops import replay
from jobs.ops.replay import run_replay
from memstream.testing import InMemoryStores
from pipelines.ingest import SourceRecord
from schemas.memory import Tier


class FakeBatch:
    def __init__(self, results: list[object], states: dict[str, object]) -> None:
        self.results = results
        self.states = states


class FakeResult:
    def __init__(self, ops: list[object], key: str, replayed: bool = False) -> None:
        self.ops = ops
        self.state_key = key
        self.replayed = replayed
        self.dead_letter = None


def source(offset: int) -> SourceRecord:
    return SourceRecord(
        topic="dialogue.events", partition=0, offset=offset, key=b"acme:u1", value=b"{}"
    )


def test_each_batch_is_applied_to_every_writer_and_counted(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen_states: list[object] = []
    facts = {0: record("f0", "monday"), 2: record("f2", "tea", predicate="likes_drink")}

    def fake_run_batch(pipeline, chunk, state_of):  # type: ignore[no-untyped-def]
        seen_states.append(state_of("acme:u1"))
        results = []
        for r in chunk:
            fact = facts.get(r.offset)
            tiers = [Tier.EPISODIC] if r.offset == 2 else [Tier.EPISODIC, Tier.SEMANTIC]
            ops = [upsert(fact, tiers=tiers)] if fact else []
            results.append(FakeResult(ops, "acme:u1", replayed=r.offset == 3))
        return FakeBatch(results, {"acme:u1": f"state-after-{chunk[-1].offset}"})

    monkeypatch.setattr(replay, "run_batch", fake_run_batch)
    stores = InMemoryStores.create()
    batches: list[int] = []
    summary = run_replay(
        object(),  # type: ignore[arg-type]
        [source(i) for i in range(4)],
        list(stores),
        batch_size=2,
        on_batch=batches.append,
    )
    assert batches == [2, 2]
    assert (summary.events, summary.ops, summary.skipped) == (4, 2, 1)
    assert summary.per_store == {"redis": 0, "chroma": 2, "neo4j": 1}
    assert summary.users == {"acme:u1"}
    # The second batch starts from the state the first one left (replay starts empty).
    assert seen_states == [None, "state-after-1"]
    assert {h.fact_id for h in stores.episodic.get("acme", "u1")} == {"f0", "f2"}
    assert [h.fact_id for h in stores.semantic.chain("acme", "u1", "user", "prefers_day")] == ["f0"]
