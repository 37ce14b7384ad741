"""Hints on memory.hints over the real broker and stores: once per triggering turn, one tenant's.

The ingest step (the real stages, in this process) turns two tenants'
conversations into ``memory.ops``; both tenants have a user called ``pat``
with a different phone number, and each ends with a turn that refers back to
it ("As I said before, ..."). The sink job applies the operations to Redis,
Chroma and Neo4j and publishes a hint per triggering turn in the transaction
that commits its offsets. Read with ``read_committed``, every hint is there
exactly once, holds its own tenant's number and never the other's, also
when the request is on ``memory.ops`` twice and when the sink dies after
publishing a hint but before committing.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sink_helpers import config_for, create_topics, delete_topics, publish_ops, run_to_end

from connectors import kafka_admin
from connectors.kafka_io import read_topic
from jobs.ingest.stages import load_pipeline, run_batch
from jobs.sink.hints import Requested
from jobs.sink.job import SinkJob, open_lanes
from memstream.settings import Settings
from pipelines.ingest import SourceRecord
from pipelines.review import UserMemoryState
from schemas.hints import MemoryHint
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS, MEMORY_HINTS, Topics

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PHONES = {"acme": "07700 900123", "globex": "07911 123456"}
TURNS = (
    ("user", "My phone number is {phone}."),
    ("agent", "Thanks, I have noted your number."),
    ("user", "As I said before, please call me on my number tomorrow."),
)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


@pytest.fixture(scope="module")
def ops(settings: Settings) -> list[MemoryOperation]:
    """What the ingest job decides for both tenants' conversations (the real stages)."""
    records = []
    for tenant, phone in PHONES.items():
        for index, (role, text) in enumerate(TURNS):
            event = {
                "schema_version": 1,
                "event_id": f"{tenant}-t{index}",
                "tenant_id": tenant,
                "user_id": "pat",
                "ts": (T0 + timedelta(minutes=index)).isoformat(),
                "session_id": "s1",
                "turn_index": index,
                "role": role,
                "text": text.format(phone=phone),
            }
            key = f"{tenant}:pat".encode()
            records.append(
                SourceRecord(DIALOGUE_EVENTS, 0, len(records), key, json.dumps(event).encode())
            )
    states: dict[str, UserMemoryState] = {}
    batch = run_batch(load_pipeline(settings), records, states.get)
    assert all(r.dead_letter is None for r in batch.results)
    return [op for result in batch.results for op in result.ops]


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    prefix = f"hinttest-{unique}."
    create_topics(kafka_bootstrap, prefix)
    kafka_admin.ensure_topics(
        kafka_bootstrap, [kafka_admin.TopicSpec(Topics(prefix).name(MEMORY_HINTS), 3)]
    )
    yield prefix
    delete_topics(kafka_bootstrap, prefix)


def _hints(bootstrap: str, namespace: str, *, committed: bool = True) -> list[MemoryHint]:
    records = read_topic(bootstrap, Topics(namespace).hints, read_committed=committed)
    hints = [MemoryHint.model_validate_json(r.value) for r in records]
    assert all(r.key == h.key for r, h in zip(records, hints, strict=True))
    return hints


def _requests(ops: list[MemoryOperation]) -> list[MemoryOperation]:
    return [op for op in ops if op.op_type is OpType.REQUEST_HINT]


def test_each_triggering_turn_gets_one_hint_with_its_own_tenants_fact(
    settings: Settings, namespace: str, unique: str, tmp_path: Path, ops: list[MemoryOperation]
) -> None:
    requests = _requests(ops)
    assert [(op.tenant_id, op.hint and op.hint.event_id) for op in requests] == [
        ("acme", "acme-t2"),
        ("globex", "globex-t2"),
    ]
    topic = Topics(namespace).memory_ops
    # The acme request twice: a Faust worker killed after publishing its batch
    # publishes it again, at another offset.
    publish_ops(settings.kafka.bootstrap, topic, [*ops, requests[0]])
    config = config_for(settings, namespace, f"h{unique}", tmp_path / "chroma")
    run_to_end(config, open_lanes(config))

    hints = _hints(settings.kafka.bootstrap, namespace)
    assert Counter(h.hint_id for h in hints) == {op.hint.hint_id: 1 for op in requests if op.hint}
    for hint in hints:
        other = next(t for t in PHONES if t != hint.tenant_id)
        assert hint.reason == "explicit"
        assert [s.name for s in hint.signals][0] == "memory_cue"
        numbers = [_digits(h.object) for h in hint.hits if h.hit_kind == "fact"]
        assert _digits(PHONES[hint.tenant_id]) in numbers, hint.context
        assert _digits(PHONES[other]) not in _digits(hint.model_dump_json())
        assert PHONES[hint.tenant_id][-6:] in hint.context  # the block shows it, with its source
        assert f"event {hint.tenant_id}-t0" in hint.context
        assert hint.recall_error is None


class DiesBeforeCommit(SinkJob):
    """Publishes a batch's hints, then dies before the transaction commits (once)."""

    def _publish_hints(self, requested: list[Requested]) -> None:  # type: ignore[override]
        super()._publish_hints(requested)
        if requested:
            self.producer.flush()  # the hints are on the broker, in the open transaction
            raise RuntimeError("killed between publishing hints and committing")


def test_a_sink_dying_before_its_commit_publishes_each_hint_once(
    settings: Settings, namespace: str, unique: str, tmp_path: Path, ops: list[MemoryOperation]
) -> None:
    publish_ops(settings.kafka.bootstrap, Topics(namespace).memory_ops, ops)
    config = config_for(settings, namespace, f"h{unique}", tmp_path / "chroma")
    with pytest.raises(RuntimeError, match="killed between"):
        DiesBeforeCommit(config, open_lanes(config)).run(threading.Event())
    run_to_end(config, open_lanes(config))  # the restart: the same group, from its commit

    requests = {op.hint.hint_id for op in _requests(ops) if op.hint}
    committed = Counter(h.hint_id for h in _hints(settings.kafka.bootstrap, namespace))
    assert committed == dict.fromkeys(requests, 1)
    # The aborted transaction's hints are in the log, invisible to read_committed.
    everything = _hints(settings.kafka.bootstrap, namespace, committed=False)
    assert len(everything) > len(requests)
