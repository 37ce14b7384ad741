"""``memstream train transe``: trains on the triple files, saves a model the stage loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from jobs.cli_train import app
from jobs.train_transe import TRAINED_TRIPLES_FILE, default_model_dir
from memstream.settings import Settings
from pipelines.encode.transe import META_FILE, TripleEmbedder, fallback_vector
from pipelines.encode.triples import SEED_TRIPLES, Triple, read_triples


@pytest.fixture(autouse=True)
def _pystow_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSTOW_HOME", str(tmp_path / "pystow"))  # PyKEEN writes here at import


def train(*args: str) -> str:
    result = CliRunner().invoke(app, ["transe", "--no-streams", "--epochs", "3", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_trains_on_seed_plus_extra_triples_and_the_stage_loads_it(tmp_path: Path) -> None:
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps({"subject": "user", "predicate": "owns", "object": "zeppelin"})
        + "\n"
        + json.dumps({"subject": "zeppelin", "predicate": "colour", "object": "silver"})
        + "\n"
    )
    output = train("--triples", str(extra), "--out", str(tmp_path / "model"), "--seed", "3")

    assert "2 triples" in output and str(extra) in output
    embedder = TripleEmbedder.load(tmp_path / "model")
    assert embedder.version.startswith("transe-")
    assert "zeppelin" in embedder.entity_ids
    assert not np.allclose(embedder.entity("zeppelin"), fallback_vector("entity", "zeppelin", 64))
    trained_on = set(read_triples(tmp_path / "model" / TRAINED_TRIPLES_FILE))
    assert Triple("user", "owns", "zeppelin") in trained_on
    assert set(read_triples(SEED_TRIPLES)) <= trained_on
    meta = json.loads((tmp_path / "model" / META_FILE).read_text())
    assert (meta["epochs"], meta["seed"], meta["triples"]) == (3, 3, len(trained_on))


def test_same_inputs_and_seed_write_the_same_model_file(tmp_path: Path) -> None:
    train("--out", str(tmp_path / "a"), "--dim", "16")
    train("--out", str(tmp_path / "b"), "--dim", "16")
    assert (tmp_path / "a" / "state_dict.pt").read_bytes() == (
        tmp_path / "b" / "state_dict.pt"
    ).read_bytes()
    assert TripleEmbedder.load(tmp_path / "a").dim == 16


def test_rejects_a_dimension_that_does_not_fit_the_combined_vector(tmp_path: Path) -> None:
    out = tmp_path / "model"
    result = CliRunner().invoke(app, ["transe", "--no-streams", "--dim", "200", "--out", str(out)])
    assert result.exit_code == 2  # usage error, before any training
    assert "--dim" in result.output
    assert not out.exists()


def test_default_model_dir_is_under_the_state_dir(tmp_path: Path) -> None:
    assert default_model_dir(Settings(state_dir=tmp_path)) == tmp_path / "models" / "transe"
