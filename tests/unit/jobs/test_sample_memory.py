"""The bundled sample stream through the real stages into in-memory stores: the right memory."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sample_memory import check_more_sample_memory, check_sample_memory

from memstream.data import sample_dir
from memstream.testing import InMemoryStores
from pipelines.encode import Encoder
from pipelines.extract import FactExtractor, extract_crm
from pipelines.extract.learned.model import MODEL_PATH
from pipelines.ingest import IngestPipeline, SourceRecord
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer, UserMemoryState
from schemas.topics import INPUT_TOPICS

# The engines read the three topics side by side, each in its own order: the
# sample is published whole before the job starts, so one topic can be read to
# its end before another begins. Event time is the order the sample was written in.
ORDERS = {
    "event time": None,
    "dialogue first": ("dialogue.events", "user.actions", "crm.webhooks"),
    "crm first": ("crm.webhooks", "dialogue.events", "user.actions"),
}


@pytest.fixture(scope="module")
def parser() -> DialogueParser:
    return DialogueParser.load()


@pytest.fixture(scope="module")
def extractors(parser: DialogueParser) -> dict[str, FactExtractor]:
    return {
        "hybrid": FactExtractor.load(parser, learned_path=MODEL_PATH),  # the default
        "rules": FactExtractor.load(parser),
    }


@pytest.mark.parametrize(
    ("extractor", "order"),
    [*(("hybrid", order) for order in ORDERS), ("rules", "event time")],
)
def test_the_sample_users_memory_is_right(
    extractor: str, order: str, parser: DialogueParser, extractors: dict[str, FactExtractor]
) -> None:
    pipeline = IngestPipeline(
        parser=parser,
        extractor=extractors[extractor],
        crm_extractor=extract_crm,
        encoder=Encoder.load(None),
        reviewer=Reviewer(),
    )
    timed = []
    for topic in INPUT_TOPICS:
        for offset, line in enumerate((sample_dir() / f"{topic}.jsonl").read_bytes().splitlines()):
            event = json.loads(line)
            key = f"{event['tenant_id']}:{event['user_id']}".encode()
            timed.append((event["ts"], SourceRecord(topic, 0, offset, key, line)))
    topics = ORDERS[order]
    if topics is None:
        timed.sort(key=lambda pair: pair[0])
    else:  # stable: each topic keeps its own order
        timed.sort(key=lambda pair: topics.index(pair[1].topic))
    states: dict[str, UserMemoryState] = {}
    reviewer = Reviewer()
    results = pipeline.process(
        [record for _, record in timed], lambda key: states.setdefault(key, reviewer.new_state())
    )
    assert not [r.dead_letter for r in results if r.dead_letter is not None]
    ops = [op for result in results for op in result.ops]
    stores = InMemoryStores.create()
    for tier in (stores.working, stores.episodic, stores.semantic):
        tier.write(ops)
        tier.flush()
    last = max(r.event.ts for r in results if r.event is not None)
    check_sample_memory(stores.episodic.get, last + timedelta(minutes=1))
    if extractor == "hybrid":
        check_more_sample_memory(stores.episodic.get, last + timedelta(minutes=1))
