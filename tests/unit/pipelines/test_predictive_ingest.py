"""The predictive stages inside the ingest step: behaviour items, search episodes, hint requests.

The real stages (spaCy, the extractor, MiniLM) over hand-made events; no
services. Both engines call ``IngestPipeline.process`` with the user's
``UserMemoryState`` (whose snapshot holds the trigger state and the behaviour
window), so what holds here holds in the Faust worker and the Flink job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pipelines.behaviour import BehaviourConfig
from pipelines.extract import extract_crm
from pipelines.ingest import IngestPipeline, IngestResult, SourceRecord
from pipelines.review import Reviewer, UserMemoryState
from schemas.memory import MemoryKind, ReviewStage
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEY = "acme:pat"


def _ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def action(offset: int, action_type: str, minute: float, **fields: Any) -> SourceRecord:
    event = {
        "schema_version": 1,
        "event_id": f"a-{offset}",
        "tenant_id": "acme",
        "user_id": "pat",
        "ts": _ts(minute),
        "session_id": "web-1",
        "action_type": action_type,
        **fields,
    }
    return SourceRecord(USER_ACTIONS, 0, offset, KEY.encode(), json.dumps(event).encode())


def turn(
    offset: int, index: int, text: str, minute: float, role: str = "user", event_id: str = ""
) -> SourceRecord:
    event = {
        "schema_version": 1,
        "event_id": event_id or f"d-{offset}",
        "tenant_id": "acme",
        "user_id": "pat",
        "ts": _ts(minute),
        "session_id": "chat-1",
        "turn_index": index,
        "role": role,
        "text": text,
    }
    return SourceRecord(DIALOGUE_EVENTS, 0, offset, KEY.encode(), json.dumps(event).encode())


def views(first_offset: int, n: int, minute: float = 0.0) -> list[SourceRecord]:
    name = {"name": "Noise-cancelling earphones"}
    return [
        action(
            first_offset + i,
            "view",
            minute + i,
            target_id="sku-nc-1",
            duration_ms=90_000,
            properties=name,
        )
        for i in range(n)
    ]


def states() -> tuple[dict[str, UserMemoryState], Callable[[str], UserMemoryState]]:
    held: dict[str, UserMemoryState] = {}
    reviewer = Reviewer()

    def state_for(key: str) -> UserMemoryState:
        return held.setdefault(key, reviewer.new_state())

    return held, state_for


def ops_of(results: list[IngestResult], op_type: OpType) -> list[MemoryOperation]:
    return [op for r in results for op in r.ops if op.op_type is op_type]


def test_repeated_views_commit_an_interest_with_the_windows_expiry(
    pipeline: IngestPipeline,
) -> None:
    _, state_for = states()
    results = pipeline.process(views(0, 3), state_for)
    assert [ops_of([r], OpType.UPSERT_FACT) for r in results[:2]] == [[], []]
    (upsert,) = ops_of(results[2:], OpType.UPSERT_FACT)
    record = upsert.record
    assert record is not None
    assert record.kind is MemoryKind.STATUS and record.intent == "behaviour"
    assert record.text.startswith("viewed Noise-cancelling earphones 3 times, 4.5 min in total")
    # 0.5 is below the HITL gate's floor (0.55): an observation passes by its own rule.
    assert record.confidence == 0.6  # 0.5 + the dwell bonus (4.5 min >= 2 min)
    gate = next(o for o in record.review if o.stage is ReviewStage.HITL)
    assert gate.decision == "commit" and "observed behaviour" in (gate.reason or "")
    # The stage's own expiry: base 1 d × (1 + 0.6) from the third view's time.
    assert record.expires_at == T0 + timedelta(minutes=2) + timedelta(days=1.6)
    (status,) = ops_of(results, OpType.SET_STATUS)
    assert status.status is not None and status.status.name == "sku-nc-1"


def test_a_later_view_is_the_interests_next_version(pipeline: IngestPipeline) -> None:
    _, state_for = states()
    results = pipeline.process(views(0, 4), state_for)
    upserts = [op.record for op in ops_of(results, OpType.UPSERT_FACT) if op.record]
    assert [r.version for r in upserts] == [1, 2]
    assert upserts[1].supersedes == upserts[0].fact_id
    assert [op.record.fact_id for op in ops_of(results, OpType.CLOSE_FACT) if op.record] == [
        upserts[0].fact_id
    ]


def test_an_absurd_dwell_is_clamped_and_the_clamp_recorded(pipeline: IngestPipeline) -> None:
    _, state_for = states()
    records = [*views(0, 2), action(2, "view", 3, target_id="sku-nc-1", duration_ms=3 * 86_400_000)]
    results = pipeline.process(records, state_for)
    assert results[2].behaviour is not None
    assert results[2].behaviour.reasons == ("dwell 3.0 d clamped to 30.0 min",)
    (upsert,) = ops_of(results, OpType.UPSERT_FACT)
    assert upsert.record is not None
    check = next(o for o in upsert.record.review if o.stage is ReviewStage.FACT_CHECK)
    assert "dwell 3.0 d clamped to 30.0 min" in (check.reason or "")


def test_an_unusable_action_is_refused_by_the_window_and_still_applied(
    pipeline: IngestPipeline,
) -> None:
    held, state_for = states()
    (result,) = pipeline.process([action(0, "view", 0)], state_for)  # no target_id
    # Valid by its schema, so no dead letter: a dead letter means "not applied".
    assert result.dead_letter is None and result.ops == []
    assert result.behaviour is not None and result.behaviour.outcome.value == "rejected"
    assert result.behaviour.reasons == ("view without a target_id",)
    (again,) = pipeline.process([action(0, "view", 0)], state_for)  # redelivered
    assert again.replayed and again.behaviour is None
    assert held[KEY].behaviour.counters == {"rejected": 1}


def test_searches_become_episodes_and_their_drift_an_item(pipeline: IngestPipeline) -> None:
    _, state_for = states()
    records = [
        action(0, "search", 0, properties={"query": "wireless earphones"}),
        action(1, "search", 2, properties={"query": "noise-cancelling earphone reviews"}),
    ]
    results = pipeline.process(records, state_for)
    episodes = [op.episode for op in ops_of(results, OpType.UPSERT_EPISODE) if op.episode]
    assert [e.text for e in episodes] == [
        "searched: wireless earphones",
        "searched: noise-cancelling earphone reviews",
    ]
    assert all(e.session_id == "search:web-1" and e.vector for e in episodes)
    (drift,) = [op.record for op in ops_of(results, OpType.UPSERT_FACT) if op.record]
    assert drift.predicate == "search_drift"
    assert drift.text == (
        "searches drifted: 'wireless earphones' -> 'noise-cancelling earphone reviews'"
    )


def test_a_triggering_turn_ends_with_a_hint_request_naming_behaviour(
    pipeline: IngestPipeline,
) -> None:
    _, state_for = states()
    pipeline.process(views(0, 3), state_for)
    results = pipeline.process(
        [
            turn(0, 0, "Hello there!", 10),
            turn(1, 1, "Hi! How can I help?", 10.5, role="agent"),
            turn(2, 2, "Like last time, deliver it to my usual address please.", 11),
        ],
        state_for,
    )
    assert [r.trigger.reason.value for r in results if r.trigger] == [
        "chit_chat",
        "not_user",
        "explicit",
    ]
    assert ops_of(results[:2], OpType.REQUEST_HINT) == []
    last = results[2].ops[-1]
    assert last.op_type is OpType.REQUEST_HINT and last.tiers == []
    hint = last.hint
    assert hint is not None and hint.reason == "explicit"
    assert hint.query == "Like last time, deliver it to my usual address please."
    assert {s.name for s in hint.signals} >= {"memory_cue"}
    assert [b.text[:40] for b in hint.behaviour] == ["viewed Noise-cancelling earphones 3 time"]


def test_a_redelivered_turn_gets_its_first_decision_and_the_same_hint(
    pipeline: IngestPipeline,
) -> None:
    _, state_for = states()
    first = pipeline.process([turn(0, 0, "As I said, my membership tier matters.", 0)], state_for)
    # The same event at a later offset (a producer's retry): the review sees a new
    # record, the trigger state remembers the event and decides as before.
    copy = turn(5, 0, "As I said, my membership tier matters.", 0, event_id="d-0")
    again = pipeline.process([copy], state_for)
    assert first[0].trigger == again[0].trigger
    assert ops_of(first, OpType.REQUEST_HINT)[0].hint == ops_of(again, OpType.REQUEST_HINT)[0].hint


def test_a_crash_mid_window_counts_nothing_twice(pipeline: IngestPipeline) -> None:
    """Half the views, a restart from the snapshot, then everything again and the rest."""
    records = [*views(0, 3), *views(3, 3, minute=10)]
    _, whole_for = states()
    whole = pipeline.process(records, whole_for)

    held, state_for = states()
    pipeline.process(records[:4], state_for)
    restored = UserMemoryState.restore(json.loads(json.dumps(held[KEY].snapshot())))

    def after_restart(key: str) -> UserMemoryState:
        return restored

    # The restart re-reads from an older position: the first four are redelivered.
    resumed = pipeline.process(records, after_restart)
    assert [r.replayed for r in resumed] == [True] * 4 + [False] * 2
    assert restored.behaviour.counters["counted"] == 6
    assert restored.behaviour.counters.get("duplicate", 0) == 0
    assert restored.snapshot()["behaviour"] == whole_for(KEY).snapshot()["behaviour"]
    assert [op.op_id for r in resumed[4:] for op in r.ops] == [
        op.op_id for r in whole[4:] for op in r.ops
    ]


def test_the_same_ops_whatever_the_batch_size(pipeline: IngestPipeline) -> None:
    """Flink hands the pipeline one record at a time, Faust dozens: parity of outputs."""
    records = [
        *views(0, 4),
        action(4, "search", 5, properties={"query": "wireless earphones"}),
        action(5, "search", 6, properties={"query": "wireless earphone cases"}),
    ]
    records += [
        turn(6, 0, "Same as last time: my usual order, without onions, only two.", 7),
        turn(7, 1, "This is absolutely unacceptable!! My order never came.", 8),
    ]
    whole_states, whole_for = states()
    whole = pipeline.process(records, whole_for)
    single_states, single_for = states()
    single = [r for record in records for r in pipeline.process([record], single_for)]
    assert [op.op_id for r in whole for op in r.ops] == [op.op_id for r in single for op in r.ops]
    assert len(ops_of(whole, OpType.REQUEST_HINT)) == 2
    for name in ("behaviour", "triggers"):
        left = json.dumps(whole_states[KEY].snapshot()[name], sort_keys=True)
        right = json.dumps(single_states[KEY].snapshot()[name], sort_keys=True)
        assert left.count('"') == right.count('"'), name  # same shape; vectors may differ by 1e-7


def test_forgetting_a_user_empties_the_window_and_the_trigger_sessions(
    pipeline: IngestPipeline,
) -> None:
    held, state_for = states()
    pipeline.process([*views(0, 2), turn(2, 0, "My gym membership renews soon.", 3)], state_for)
    assert held[KEY].behaviour.events and held[KEY].triggers.sessions
    (result,) = pipeline.process([action(3, "forget_user", 4)], state_for)
    assert [op.op_type for op in result.ops] == [OpType.ERASE_USER]
    assert not held[KEY].behaviour.events and not held[KEY].behaviour.seen_ids
    assert not held[KEY].triggers.sessions


def test_the_window_settings_reach_the_stage(pipeline: IngestPipeline) -> None:
    strict = IngestPipeline(
        parser=pipeline.parser,
        extractor=pipeline.extractor,
        crm_extractor=extract_crm,
        encoder=pipeline.encoder,
        reviewer=Reviewer(),
        behaviour=BehaviourConfig(min_views=4),
    )
    _, state_for = states()
    assert ops_of(strict.process(views(0, 3), state_for), OpType.UPSERT_FACT) == []
