"""The review console's logic and JSON routes over memstream.testing's in-memory stores.

Held items are made by the real ``Reviewer`` (the ingest job's review stage)
and its episodes by ``pipelines.episodes``; the console's decisions are the
``MemoryService``'s actions, recorded by a ``RecordingPublisher`` and fed back
to the same reviewer, as the ingest job would read them from ``user.actions``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from jobs.serve.api import create_app
from jobs.serve.keys import (
    ApiKeyError,
    ApiKeyring,
    Operator,
    OperatorKeyring,
    load_operator_keyring,
)
from jobs.serve.memory_service import MemoryService, MemoryStores
from jobs.serve.review import ReviewConsole, add_review
from memstream.testing import HashingEmbedder, InMemoryStores, RecordingPublisher
from pipelines.episodes import episode_ops
from pipelines.review import Reviewer, UserMemoryState
from schemas.events import ActionType, DialogueEvent, Role, UserAction
from schemas.facts import Assertor, ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import MemoryState
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=1)


def _key() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class Flow:
    """The review stage and the in-memory tiers, fed as the ingest and sink jobs feed them."""

    tiers: InMemoryStores
    publisher: RecordingPublisher
    reviewer: Reviewer = field(default_factory=Reviewer)
    states: dict[tuple[str, str], UserMemoryState] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)

    def _state(self, tenant: str, user: str) -> UserMemoryState:
        return self.states.setdefault((tenant, user), self.reviewer.new_state())

    def _lineage(self, topic: str, event_id: str) -> SourceLineage:
        self.offsets[topic] = self.offsets.get(topic, 0) + 1
        return SourceLineage(
            topic=topic, partition=0, offset=self.offsets[topic], event_id=event_id
        )

    def _apply(self, ops: list[MemoryOperation]) -> list[MemoryOperation]:
        for store in self.tiers:
            store.write(ops)
            store.flush()
        return ops

    def says(
        self,
        tenant: str,
        user: str,
        event_id: str,
        text: str,
        *facts: tuple[str, str, str],
        confidence: float = 0.9,
        asserted_by: Assertor = Assertor.USER,
        at: datetime = T0,
    ) -> list[MemoryOperation]:
        """A user turn stating (subject, predicate, object) facts."""
        event = DialogueEvent(
            event_id=event_id,
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            turn_index=self.offsets.get(DIALOGUE_EVENTS, 0),
            role=Role.USER,
            text=text,
            ts=at,
        )
        extracted = [
            ExtractedFact(
                tenant_id=tenant,
                user_id=user,
                session_id="s1",
                event_id=event_id,
                event_ts=at,
                subject=subject,
                predicate=predicate,
                object=obj,
                confidence=confidence,
                asserted_by=asserted_by,
                text=f"{subject} {predicate} {obj}",
            )
            for subject, predicate, obj in facts
        ]
        lineage = self._lineage(DIALOGUE_EVENTS, event_id)
        state = self._state(tenant, user)
        reviewed = self.reviewer.on_dialogue(state, event, lineage, extracted)
        return self._apply([*reviewed, *episode_ops(state, event, lineage, reviewed)])

    def deliver(self, action: UserAction) -> list[MemoryOperation]:
        """The published action, applied by the review stage and the writers."""
        state = self._state(action.tenant_id, action.user_id)
        lineage = self._lineage(USER_ACTIONS, action.event_id)
        return self._apply(self.reviewer.on_action(state, action, lineage))


@pytest.fixture
def tiers() -> InMemoryStores:
    return InMemoryStores.create(clock=lambda: NOW)


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


@pytest.fixture
def flow(tiers: InMemoryStores, publisher: RecordingPublisher) -> Flow:
    return Flow(tiers, publisher)


@pytest.fixture
def service(tiers: InMemoryStores, publisher: RecordingPublisher) -> MemoryService:
    stores = MemoryStores(
        redis=tiers.working,
        chroma=tiers.episodic,
        neo4j=tiers.semantic,
        embedder=HashingEmbedder(),
        publisher=publisher,
    )
    return MemoryService(stores=stores, clock=lambda: NOW)


ALICE = Operator("acme", "alice")
BOB = Operator("globex", "bob")


def _vegan_then_bacon(flow: Flow, tenant: str = "acme", user: str = "u1") -> str:
    """A committed vegan diet, then an order it contradicts (held); the held id."""
    flow.says(tenant, user, f"{user}-e1", "I am vegan", ("diet", "is", "vegan"))
    ops = flow.says(
        tenant,
        user,
        f"{user}-e2",
        "I ordered a bacon burger",
        ("user", "ordered", "bacon burger"),
        at=T0 + timedelta(hours=1),
    )
    held = [op.record for op in ops if op.op_type is OpType.ADD_PENDING and op.record]
    assert len(held) == 1
    return held[0].fact_id


def test_the_queue_shows_cause_source_turn_contradicted_fact_and_chain(
    flow: Flow, service: MemoryService
) -> None:
    held = _vegan_then_bacon(flow)
    flow.says(
        "acme",
        "u1",
        "u1-e3",
        "maybe I live in Lyon",
        ("user", "lives_in", "lyon"),
        confidence=0.6,
        at=T0 + timedelta(hours=2),
    )
    queue = ReviewConsole(service).queue(ALICE)

    assert (queue.tenant_id, queue.reviewer_id, queue.truncated) == ("acme", "alice", False)
    assert [item.cause for item in queue.items] == [
        "low_confidence",
        "contradiction",
    ]  # newest first
    bacon = queue.items[1]
    assert bacon.pending_id == held
    assert bacon.source is not None and bacon.source.text == "I ordered a bacon burger"
    assert bacon.source.role == "user" and bacon.source_event_id == "u1-e2"
    assert [hit.object for hit in bacon.contradicts] == ["vegan"]
    assert "vegan diet excludes animal products" in bacon.reason
    assert queue.items[0].source is not None
    assert queue.items[0].source.text == "maybe I live in Lyon"


def test_a_held_update_shows_the_chain_it_would_join_and_its_head(
    flow: Flow, service: MemoryService
) -> None:
    flow.says("acme", "u1", "u1-e1", "I live in Paris", ("user", "lives_in", "paris"))
    flow.says(
        "acme",
        "u1",
        "u1-e2",
        "maybe Lyon now",
        ("user", "lives_in", "lyon"),
        confidence=0.6,
        at=T0 + timedelta(hours=1),
    )
    (item,) = ReviewConsole(service).queue(ALICE).items
    assert [v.object for v in item.chain] == ["paris"]
    assert [v.object for v in item.contradicts] == ["paris"]


def test_confirm_publishes_the_apis_action_with_the_reviewer_and_commits_with_lineage(
    flow: Flow, service: MemoryService, publisher: RecordingPublisher, tiers: InMemoryStores
) -> None:
    held = _vegan_then_bacon(flow)
    receipt = ReviewConsole(service).confirm(ALICE, "u1", held)

    (action,) = list(publisher)
    assert action.event_id == receipt.event_id == f"confirm_memory-{held}"  # the API's event id
    assert action.target_id == held and action.properties == {"reviewer_id": "alice"}
    ops = flow.deliver(action)
    upserted = [op.record for op in ops if op.op_type is OpType.UPSERT_FACT and op.record]
    assert [r.fact_id for r in upserted] == [held]
    assert upserted[0].lineage.reviewer_id == "alice"
    assert upserted[0].lineage.event_id == "u1-e2"  # still the source turn's
    assert {op.lineage.reviewer_id for op in ops} == {"alice"}
    assert tiers.working.pending("acme", "u1") == []
    (audit,) = tiers.working.review_decisions("acme")
    assert (audit.pending_id, audit.resolution, audit.reviewer_id) == (held, "confirmed", "alice")
    assert audit.event_id == action.event_id
    stored = {hit.fact_id: hit for hit in tiers.episodic.get("acme", "u1", at=NOW)}
    lineage = stored[held].lineage
    assert lineage is not None and lineage.reviewer_id == "alice"


def test_edit_and_confirm_commits_the_corrected_value_as_a_new_version(
    flow: Flow, service: MemoryService, publisher: RecordingPublisher, tiers: InMemoryStores
) -> None:
    flow.says(
        "acme", "u1", "u1-e1", "I live in Lyonn?", ("user", "lives_in", "lyonn"), confidence=0.6
    )
    (item,) = ReviewConsole(service).queue(ALICE).items
    ReviewConsole(service).confirm(ALICE, "u1", item.pending_id, "lyon")

    (action,) = list(publisher)
    assert action.properties == {"reviewer_id": "alice", "object": "lyon"}
    ops = flow.deliver(action)
    resolved = [op for op in ops if op.op_type is OpType.RESOLVE_PENDING]
    assert [(op.target_fact_id, op.resolution) for op in resolved] == [
        (item.pending_id, "confirmed")
    ]
    (committed,) = [op.record for op in ops if op.op_type is OpType.UPSERT_FACT and op.record]
    assert committed.object == "lyon" and committed.fact_id != item.pending_id
    assert committed.state is MemoryState.COMMITTED
    assert "corrected from 'lyonn'" in committed.review[-1].reason
    assert {h.object for h in tiers.episodic.get("acme", "u1", at=NOW)} >= {"lyon"}


def test_reject_publishes_reject_memory_with_the_reviewer_and_is_audited(
    flow: Flow, service: MemoryService, publisher: RecordingPublisher, tiers: InMemoryStores
) -> None:
    held = _vegan_then_bacon(flow)
    ReviewConsole(service).reject(ALICE, "u1", held)
    (action,) = list(publisher)
    flow.deliver(action)
    (audit,) = ReviewConsole(service).decisions(ALICE)
    assert (audit.resolution, audit.reviewer_id) == ("rejected", "alice")
    assert tiers.working.pending("acme", "u1") == []


def _client(service: MemoryService, operators: dict[str, str], api: dict[str, str]) -> TestClient:
    keyring = ApiKeyring(api)
    app = create_app(service, keyring)
    add_review(app, ReviewConsole(service), load_operator_keyring(operators, None, keyring))
    return TestClient(app)


def test_routes_are_scoped_to_the_operator_keys_tenant(
    flow: Flow, service: MemoryService, publisher: RecordingPublisher
) -> None:
    acme_held = _vegan_then_bacon(flow, "acme", "u1")
    globex_held = _vegan_then_bacon(flow, "globex", "u9")
    alice, bob, api_key = _key(), _key(), _key()
    client = _client(service, {alice: "acme/alice", bob: "globex/bob"}, {api_key: "acme"})

    def items(key: str) -> list[str]:
        answer = client.get("/review/api/items", headers={"X-Operator-Key": key})
        assert answer.status_code == 200, answer.text
        return [item["pending_id"] for item in answer.json()["items"]]

    assert items(alice) == [acme_held]
    assert items(bob) == [globex_held]
    body = client.get("/review/api/items", headers={"Authorization": f"Bearer {bob}"}).text
    assert acme_held not in body and "u1" not in body

    # Another tenant's item is answered like an unknown one, and nothing is published.
    other = client.post(
        f"/review/api/users/u1/pending/{acme_held}/confirm", headers={"X-Operator-Key": bob}
    )
    assert other.status_code == 404
    assert list(publisher) == []

    mine = client.post(
        f"/review/api/users/u1/pending/{acme_held}/confirm",
        headers={"X-Operator-Key": alice},
        json={"object": "veggie burger"},
    )
    assert mine.status_code == 202, mine.text
    (action,) = list(publisher)
    assert (action.tenant_id, action.properties) == (
        "acme",
        {"reviewer_id": "alice", "object": "veggie burger"},
    )


def test_an_api_key_opens_no_review_route_and_an_operator_key_no_api_route(
    service: MemoryService,
) -> None:
    alice, api_key = _key(), _key()
    client = _client(service, {alice: "acme/alice"}, {api_key: "acme"})
    assert client.get("/review/api/items", headers={"X-Operator-Key": api_key}).status_code == 401
    assert client.get("/review/api/items").status_code == 401
    assert client.get("/v1/users/u1/snapshot", headers={"X-API-Key": alice}).status_code == 401
    page = client.get("/review")
    assert page.status_code == 200 and "review console" in page.text
    assert "/review" not in json.dumps(client.get("/openapi.json").json()["paths"])


def test_bad_bodies_and_ids_are_refused_before_anything_is_published(
    flow: Flow, service: MemoryService, publisher: RecordingPublisher
) -> None:
    held = _vegan_then_bacon(flow)
    alice = _key()
    client = _client(service, {alice: "acme/alice"}, {_key(): "acme"})
    headers = {"X-Operator-Key": alice}
    base = f"/review/api/users/u1/pending/{held}/confirm"
    assert client.post(base, headers=headers, json={"object": "   "}).status_code == 422
    assert client.post(base, headers=headers, json={"object": "x" * 1025}).status_code == 422
    bad_id = "/review/api/users/u1/pending/not-an-id/confirm"
    assert client.post(bad_id, headers=headers).status_code == 422
    assert list(publisher) == []


def test_operator_keys_name_a_tenant_and_a_reviewer_and_are_never_api_keys(
    tmp_path: Path,
) -> None:
    key = _key()
    ring = OperatorKeyring({key: "acme/alice"})
    assert ring.operator_for(key) == Operator("acme", "alice")
    assert ring.operator_for(_key()) is None and ring.operator_for(None) is None
    for bad in ("acme", "acme/", "/alice", "ac:me/alice", "acme/al/ice"):
        with pytest.raises(ApiKeyError, match="tenant>/<reviewer"):
            OperatorKeyring({_key(): bad})
    with pytest.raises(ApiKeyError, match="printable"):
        OperatorKeyring({"short": "acme/alice"})
    with pytest.raises(ApiKeyError, match="also an API key"):
        load_operator_keyring({key: "acme/alice"}, None, ApiKeyring({key: "acme"}))
    keys_file = tmp_path / "operators.json"
    keys_file.write_text(json.dumps({key: "globex/bob"}))
    with pytest.raises(ApiKeyError, match="two operators"):
        load_operator_keyring({key: "acme/alice"}, keys_file, ApiKeyring({}))
    loaded = load_operator_keyring({}, keys_file, ApiKeyring({}))
    assert loaded.operator_for(key) == Operator("globex", "bob")


def _confirm(held: str, **properties: object) -> UserAction:
    return UserAction(
        event_id=f"confirm_memory-{held}",
        tenant_id="acme",
        user_id="u1",
        ts=NOW,
        action_type=ActionType.CONFIRM_MEMORY,
        target_id=held,
        properties=properties,
    )


@pytest.mark.parametrize(
    "properties",
    [{"reviewer_id": "has space"}, {"object": "   "}, {"object": 42}, {"object": "x" * 1025}],
)
def test_the_review_stage_refuses_a_malformed_decision_and_keeps_the_item(
    flow: Flow, properties: dict[str, object]
) -> None:
    held = _vegan_then_bacon(flow)
    with pytest.raises(ValueError):
        flow.deliver(_confirm(held, **properties))  # the job dead-letters it
    assert held in flow.states[("acme", "u1")].pending  # all or nothing: still waiting


def test_every_pending_item_records_its_cause(flow: Flow, service: MemoryService) -> None:
    flow.says(
        "acme",
        "u1",
        "u1-e1",
        "the agent says Lyon",
        ("user", "lives_in", "lyon"),
        asserted_by=Assertor.AGENT,
        confidence=0.99,
    )
    (item,) = ReviewConsole(service).queue(ALICE).items
    assert item.cause == "not_user"
    assert item.contradicts == [] and item.chain == []
