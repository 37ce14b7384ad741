"""TransE: train-then-load round trip, reproducibility, deterministic fallback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pipelines.encode.transe import (
    ENTITY_WEIGHTS,
    FALLBACK_VERSION,
    TRANSE_DIM,
    TripleEmbedder,
    fallback_vector,
)
from pipelines.encode.transe_train import TrainedTransE, train_transe
from pipelines.encode.triples import SEED_TRIPLES, Triple, make_triple, read_triples
from schemas.memory import Polarity

TINY = [
    make_triple("installation_time", "in", "monday", Polarity.AFFIRMED),
    make_triple("installation_time", "in", "weekend", Polarity.NEGATED),
    make_triple("user", "prefers", "tea", Polarity.AFFIRMED),
    make_triple("user", "prefers", "coffee", Polarity.NEGATED),
    make_triple("travel", "to", "berlin", Polarity.AFFIRMED),
]
EPOCHS = 5  # enough to move the weights away from their initialisation


@pytest.fixture(scope="module", autouse=True)
def _pystow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:  # PyKEEN writes under PYSTOW_HOME at import
        patch.setenv("PYSTOW_HOME", str(tmp_path_factory.mktemp("pystow")))
        yield


@pytest.fixture(scope="module")
def trained() -> TrainedTransE:
    return train_transe(TINY, epochs=EPOCHS, seed=7)


def test_reloaded_model_gives_the_trained_vectors(trained: TrainedTransE, tmp_path: Path) -> None:
    embedder = TripleEmbedder.load(trained.save(tmp_path / "model"))
    assert embedder.version.startswith("transe-")
    assert embedder.dim == TRANSE_DIM
    weights = trained.state_dict[ENTITY_WEIGHTS].numpy()
    row = weights[trained.entity_to_id["weekend"]]
    np.testing.assert_allclose(embedder.entity("weekend"), row / np.linalg.norm(row), rtol=1e-6)
    assert not np.allclose(embedder.entity("weekend"), fallback_vector("entity", "weekend", 64))


def test_same_triples_and_seed_train_the_same_model_in_any_order(trained: TrainedTransE) -> None:
    again = train_transe(list(reversed(TINY)), epochs=EPOCHS, seed=7)
    assert again.entity_to_id == trained.entity_to_id
    for name, tensor in trained.state_dict.items():
        assert bool((again.state_dict[name] == tensor).all()), name
    other_seed = train_transe(TINY, epochs=EPOCHS, seed=8)
    assert not bool(
        (other_seed.state_dict[ENTITY_WEIGHTS] == trained.state_dict[ENTITY_WEIGHTS]).all()
    )


def test_unseen_labels_fall_back_identically_in_separately_loaded_embedders(
    trained: TrainedTransE, tmp_path: Path
) -> None:
    directory = trained.save(tmp_path / "model")
    first, second = TripleEmbedder.load(directory), TripleEmbedder.load(directory)
    unseen = [Triple("user", "owns", "zeppelin"), Triple("mars base", "not_in", "weekend")]
    np.testing.assert_array_equal(first.vectors(unseen), second.vectors(unseen))
    without_model = TripleEmbedder.load(tmp_path / "nothing-here")
    assert without_model.version == FALLBACK_VERSION
    np.testing.assert_array_equal(without_model.entity("zeppelin"), first.entity("zeppelin"))


def test_fallback_vectors_are_the_same_in_another_process() -> None:
    script = (
        "import json; from pipelines.encode.transe import fallback_vector; "
        "print(json.dumps(fallback_vector('entity', 'zeppelin', 64).tolist()))"
    )
    # PYTHONHASHSEED differs per process: a salted hash() would change the vector.
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(output) == fallback_vector("entity", "zeppelin", 64).tolist()


def test_fallback_vectors_are_unit_length_and_distinct() -> None:
    vectors = np.stack([fallback_vector("entity", label, 64) for label in ("tea", "coffee")])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert abs(float(vectors[0] @ vectors[1])) < 0.5
    assert not np.array_equal(
        fallback_vector("entity", "in", 64), fallback_vector("relation", "in", 64)
    )


def test_triple_vector_is_head_relation_tail_of_unit_parts() -> None:
    embedder = TripleEmbedder.fallback_only()
    (row,) = embedder.vectors([Triple("user", "prefers", "tea")])
    assert row.shape == (3 * TRANSE_DIM,)
    np.testing.assert_array_equal(row[TRANSE_DIM : 2 * TRANSE_DIM], embedder.relation("prefers"))
    np.testing.assert_allclose(np.linalg.norm(row.reshape(3, -1), axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("predicate", "polarity"),
    [("NOT_IN", Polarity.NEGATED), ("in", Polarity.NEGATED), ("not in", Polarity.AFFIRMED)],
)
def test_every_spelling_of_a_negated_relation_is_one_relation(
    predicate: str, polarity: Polarity
) -> None:
    triple = make_triple(" Installation_Time", predicate, "Weekend ", polarity)
    assert triple == Triple("installation_time", "not_in", "weekend")
    assert triple.negated


def test_seed_triples_parse_and_a_bad_line_names_its_number(tmp_path: Path) -> None:
    assert len(read_triples(SEED_TRIPLES)) >= 100
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"subject": "a", "predicate": "b", "object": "c"}\n\n{"subject": "a"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:3: .*lacks field .predicate."):
        read_triples(bad)
