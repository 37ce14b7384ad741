"""Episodic memory of turns, through the real pipeline, writers and stores.

Dialogue turns run through the real ingest stages (parse, extract, encode,
review, episodes); their operations are applied by the real Redis, Chroma and
Neo4j writers in a namespace of the test's own; recall is the real
``MemoryService`` over those stores.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from jobs.ingest.stages import load_pipeline, run_batch
from jobs.serve.memory_service import MemoryService, MemoryStores
from jobs.stores import Stores, open_stores
from memstream.settings import Settings
from memstream.testing import RecordingPublisher
from pipelines.encode import Encoder
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.review import UserMemoryState
from schemas.events import DialogueEvent, Role
from schemas.lineage import SourceLineage
from schemas.memory import Tier
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

T0 = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def pipeline(settings: Settings) -> IngestPipeline:
    import flair  # noqa: F401  # flair logs its vocabulary at INFO when the tagger loads

    logging.getLogger("flair").setLevel(logging.WARNING)
    return load_pipeline(settings)


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder.load()


@pytest.fixture
def stores(settings: Settings, unique: str) -> Iterator[Stores]:
    with open_stores(settings, f"ep-{unique}", latency_budget_s=math.inf) as opened:
        opened.setup()
        yield opened


@pytest.fixture
def service(stores: Stores, encoder: Encoder) -> MemoryService:
    readers = MemoryStores(
        redis=stores.working,
        chroma=stores.episodic,
        neo4j=stores.semantic,
        embedder=encoder,
        publisher=RecordingPublisher(),
    )
    return MemoryService(stores=readers, clock=lambda: T0 + timedelta(days=60))


class Conversation:
    """Turns of one user, run through the pipeline and applied to the stores."""

    def __init__(self, pipeline: IngestPipeline, stores: Stores, tenant: str, user: str) -> None:
        self.pipeline, self.stores, self.tenant, self.user = pipeline, stores, tenant, user
        self.offset = 0
        self.ops: list[MemoryOperation] = []
        self.state: UserMemoryState | None = None

    def say(self, session: str, day: int, *turns: tuple[Role, str]) -> list[str]:
        """Run a session's turns; the turn ids, in order."""
        records, ids = [], []
        for index, (role, text) in enumerate(turns):
            turn_id = f"{session}:{index}"
            event = DialogueEvent(
                event_id=f"{self.tenant}-{self.user}-{turn_id}",
                tenant_id=self.tenant,
                user_id=self.user,
                session_id=session,
                turn_index=index,
                turn_id=turn_id,
                role=role,
                text=text,
                ts=T0 + timedelta(days=day, minutes=index),
            )
            records.append(
                SourceRecord(
                    DIALOGUE_EVENTS,
                    0,
                    self.offset,
                    event.key.encode(),
                    event.model_dump_json().encode(),
                )
            )
            self.offset += 1
            ids.append(turn_id)
        batch = run_batch(self.pipeline, records, lambda _key: self.state)
        assert all(r.dead_letter is None for r in batch.results)
        self.state = batch.states.get(f"{self.tenant}:{self.user}", self.state)
        self.apply([op for r in batch.results for op in r.ops])
        return ids

    def apply(self, ops: list[MemoryOperation]) -> None:
        for store in self.stores:
            store.write(ops)
            store.flush()
        self.ops += ops


def turn_ids(hits: list) -> list[str | None]:  # type: ignore[type-arg]
    return [h.lineage.turn_id if h.lineage else None for h in hits]


def test_a_turn_that_yields_no_fact_is_recallable(
    pipeline: IngestPipeline, stores: Stores, service: MemoryService, unique: str
) -> None:
    talk = Conversation(pipeline, stores, f"t{unique}", "u1")
    ids = talk.say(
        "s1",
        0,
        (Role.USER, "We finally adopted a rescue greyhound last weekend, she's called Juniper."),
        (Role.AGENT, "That's lovely news, congratulations!"),
        (Role.USER, "She is terrified of the hoover, which is a bit of a problem."),
    )
    facts_from_turn = [
        op for op in talk.ops if op.op_type is OpType.UPSERT_FACT and op.lineage.turn_id == ids[2]
    ]
    assert not facts_from_turn  # the extractor keeps nothing of this turn...
    hits = service.recall(f"t{unique}", "u1", "what is my dog scared of?", k=3)
    assert ids[2] in turn_ids(hits)  # ...and recall still finds it
    (hit,) = [h for h in hits if h.lineage and h.lineage.turn_id == ids[2]]
    assert hit.hit_kind == "episode" and hit.tier is Tier.EPISODIC
    assert "hoover" in hit.statement and hit.score is not None


def test_an_answer_turn_is_found_by_the_words_of_its_question(
    pipeline: IngestPipeline, stores: Stores, service: MemoryService, unique: str
) -> None:
    talk = Conversation(pipeline, stores, f"t{unique}", "u1")
    ids = talk.say(
        "s1",
        0,
        (Role.USER, "Hi, I'd like to move my dental check-up."),
        (Role.AGENT, "Of course. Which hygienist did you see last time?"),
        (Role.USER, "Marguerite"),
        (Role.AGENT, "Thanks, I'll keep you with her."),
    )
    episodes = [op.episode for op in talk.ops if op.op_type is OpType.UPSERT_EPISODE]
    answer = next(e for e in episodes if e is not None and e.lineage.turn_id == ids[2])
    assert answer.context is not None and "hygienist" in answer.context
    hits = service.recall(f"t{unique}", "u1", "who was my hygienist?", k=2)
    assert turn_ids(hits)[0] in {ids[1], ids[2]}
    assert ids[2] in turn_ids(hits)


def test_after_an_update_the_old_episode_ranks_below_the_current_value(
    pipeline: IngestPipeline, stores: Stores, service: MemoryService, unique: str
) -> None:
    talk = Conversation(pipeline, stores, f"t{unique}", "u1")
    (old,) = talk.say("s1", 0, (Role.USER, "My phone number is 07700 900111."))
    (new,) = talk.say("s2", 10, (Role.USER, "Actually my new phone number is 07700 900222."))
    assert any(op.op_type is OpType.OUTDATE_EPISODE for op in talk.ops)
    hits = service.recall(f"t{unique}", "u1", "what is my phone number?", k=5)
    ranked = turn_ids(hits)
    assert ranked[0] == new
    outdated = [h for h in hits if h.lineage and h.lineage.turn_id == old]
    assert all(h.outdated for h in outdated if h.hit_kind == "episode")
    if old in ranked:
        assert ranked.index(old) > ranked.index(new)


def test_forget_removes_the_episodes_from_every_store(
    pipeline: IngestPipeline, stores: Stores, service: MemoryService, unique: str
) -> None:
    tenant = f"t{unique}"
    talk = Conversation(pipeline, stores, tenant, "u1")
    talk.say("s1", 0, (Role.USER, "I'm training for the Berlin marathon in September."))
    assert stores.episodic.user_episodes(tenant, "u1")
    assert service.recall(tenant, "u1", "which marathon am I training for?", k=3)
    event_id = f"forget-{unique}"
    talk.apply(
        [
            MemoryOperation(
                op_id=event_id,
                op_type=OpType.ERASE_USER,
                tenant_id=tenant,
                user_id="u1",
                tiers=list(Tier),
                lineage=SourceLineage(topic=USER_ACTIONS, partition=0, offset=0, event_id=event_id),
                at=T0 + timedelta(days=1),
            )
        ]
    )
    assert stores.episodic.user_episodes(tenant, "u1") == []
    assert service.recall(tenant, "u1", "which marathon am I training for?", k=3) == []


def test_another_tenant_never_sees_the_episodes(
    pipeline: IngestPipeline, stores: Stores, service: MemoryService, unique: str
) -> None:
    mine, theirs = f"a{unique}", f"b{unique}"
    Conversation(pipeline, stores, mine, "u1").say(
        "s1", 0, (Role.USER, "My locker code at the gym is 4471, don't share it.")
    )
    Conversation(pipeline, stores, theirs, "u1").say(
        "s1", 0, (Role.USER, "I mostly swim on Tuesdays.")
    )
    leaked = service.recall(theirs, "u1", "what is my locker code?", k=10)
    assert all("4471" not in h.statement for h in leaked)
    assert {h.lineage.event_id.split("-")[0] for h in leaked if h.lineage} <= {theirs}
    assert stores.episodic.user_episodes(theirs, "u1")[0].episode.tenant_id == theirs
