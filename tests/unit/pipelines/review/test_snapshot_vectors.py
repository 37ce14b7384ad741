"""Vectors packed in state snapshots: lossless, smaller, and older snapshots still restore."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest
from review_helpers import DAY, T0, Feed, fact

from pipelines.review import UserMemoryState
from pipelines.snapshot_vectors import is_packed, pack_record, pack_vector, unpack_vector
from pipelines.triggers.state import SessionTriggerState, TriggerState
from schemas.memory import Encoding


def _float32_vector(seed: int, dim: int = 384) -> list[float]:
    """What the encoder hands the review: a float32 array as Python floats."""
    values: list[float] = np.random.default_rng(seed).normal(size=dim).astype(np.float32).tolist()
    return values


def _encoding(seed: int) -> Encoding:
    return Encoding(
        hashed={3: 1.0, 17: -1.0},
        transe=_float32_vector(seed, 128),
        text=_float32_vector(seed + 1),
        combined=_float32_vector(seed + 2),
        model_versions={"text": "minilm"},
    )


def _fed() -> Feed:
    feed = Feed()
    feed.say("e1", fact("e1", "diet", "vegan"), encodings=[_encoding(1)])
    feed.say("e2", fact("e2", "home", "Leeds"), encodings=[_encoding(4)], ts=T0 + DAY)
    feed.say(
        "e3", fact("e3", "home", "York", is_update=True), encodings=[_encoding(7)], ts=T0 + 2 * DAY
    )
    return feed


def _as_version_1(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as version 1 wrote it: every vector a JSON list of numbers."""
    old = copy.deepcopy(snapshot)
    old["snapshot_version"] = 1
    records = [*old["heads"], *(item["record"] for item in old["pending"])]
    for raw in records:
        for name, value in (raw.get("encoding") or {}).items():
            if is_packed(value):
                raw["encoding"][name] = unpack_vector(value)
    for session in old["triggers"]["sessions"]:
        if is_packed(session["centroid_sum"]):
            session["centroid_sum"] = unpack_vector(session["centroid_sum"])
    return old


def test_a_float32_vector_round_trips_exactly_and_packs_as_float32() -> None:
    values = _float32_vector(0)
    packed = pack_vector(values)
    assert packed.startswith("f4:")
    assert unpack_vector(packed) == values
    assert len(packed) < len(json.dumps(values)) / 3


def test_a_vector_float32_would_round_is_packed_as_float64_unchanged() -> None:
    values = [round(x, 6) for x in _float32_vector(1, 16)] + [0.1, 1e-300]
    packed = pack_vector(values)
    assert packed.startswith("f8:")
    assert unpack_vector(packed) == values


def test_a_list_from_an_older_snapshot_unpacks_to_itself() -> None:
    assert unpack_vector([0.5, -1, 2.25]) == [0.5, -1.0, 2.25]


def test_an_unknown_packing_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a packed vector"):
        unpack_vector("f2:AAAA")


def test_the_snapshot_packs_vectors_and_restores_the_same_records() -> None:
    feed = _fed()
    snapshot = json.loads(json.dumps(feed.state.snapshot()))
    heads = snapshot["heads"]
    assert heads and all(is_packed(h["encoding"]["combined"]) for h in heads)
    restored = UserMemoryState.restore(snapshot)
    assert restored.heads == feed.state.heads
    assert restored.pending == feed.state.pending
    assert restored.snapshot() == feed.state.snapshot()


def test_restoring_leaves_the_snapshot_it_read_packed() -> None:
    # The Faust table hands out the dict it holds: unpacking in place would
    # put the long lists back into the table.
    snapshot = _fed().state.snapshot()
    held = copy.deepcopy(snapshot)
    UserMemoryState.restore(snapshot)
    assert snapshot == held


def test_a_version_1_snapshot_restores_to_the_same_state() -> None:
    feed = _fed()
    old = json.loads(json.dumps(_as_version_1(feed.state.snapshot())))
    restored = UserMemoryState.restore(old)
    assert restored.heads == feed.state.heads
    assert restored.snapshot() == feed.state.snapshot()


def test_packing_makes_the_snapshot_a_third_of_the_size() -> None:
    snapshot = _fed().state.snapshot()
    packed = len(json.dumps(snapshot))
    unpacked = len(json.dumps(_as_version_1(snapshot)))
    assert packed < unpacked / 3


def test_pack_record_leaves_a_record_without_vectors_alone() -> None:
    dumped = {"fact_id": "f", "encoding": None}
    assert pack_record(dict(dumped)) == dumped


def test_a_sessions_centroid_round_trips_packed_and_from_a_list() -> None:
    session = SessionTriggerState("s1")
    session.add_vector(_float32_vector(3))
    session.add_vector(_float32_vector(5))
    state = TriggerState(sessions={"s1": session})
    data = json.loads(json.dumps(state.to_dict()))
    assert is_packed(data["sessions"][0]["centroid_sum"])
    assert TriggerState.from_dict(data) == state
    data["sessions"][0]["centroid_sum"] = list(session.centroid_sum)  # as version 1 held it
    assert TriggerState.from_dict(data) == state
