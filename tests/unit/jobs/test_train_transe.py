"""``memstream train transe``: trains on the triple files, saves a model the stage loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from jobs.cli.train import app
from jobs.train.transe import TRAINED_TRIPLES_FILE
from memstream.settings import Settings
from pipelines.encode.transe import META_FILE, TripleEmbedder, fallback_vector
from pipelines.encode.triples import SEED_TRIPLES, Triple, read_triples
from pipelines.extract.vocabulary import canonical_phone


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


def event_line(event_id: str, role: str, text: str, turn: int) -> str:
    return json.dumps(
        {
            "event_id": event_id,
            "tenant_id": "acme",
            "user_id": "u1",
            "session_id": "s1",
            "turn_index": turn,
            "role": role,
            "text": text,
            "ts": f"2026-03-02T09:0{turn}:00Z",
            "lang": "en",
        }
    )


def test_learns_user_and_crm_facts_from_streams_but_not_agent_statements(tmp_path: Path) -> None:
    dialogue = tmp_path / "dialogue.jsonl"
    lines = [
        event_line("e0", "user", "I don't accept weekend installation.", 0),
        event_line("e1", "agent", "Your phone number is 555-0199, right?", 1),
        "not json",
    ]
    dialogue.write_text("\n".join(lines) + "\n")
    crm = tmp_path / "crm.jsonl"
    webhook = {
        "event_id": "c1",
        "tenant_id": "acme",
        "user_id": "u1",
        "source": "crm",
        "entity": "contact",
        "changes": {"phone": {"old": None, "new": "555-0142"}},
        "ts": "2026-03-02T09:00:00Z",
    }
    crm.write_text(json.dumps(webhook) + "\n")
    out = tmp_path / "model"
    result = CliRunner().invoke(
        app,
        [
            "transe",
            "--dialogue",
            str(dialogue),
            "--crm",
            str(crm),
            "--epochs",
            "3",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "dialogue.jsonl:3: skipped" in result.output

    trained_on = set(read_triples(out / TRAINED_TRIPLES_FILE))
    assert Triple("user", "not_installation_time", "weekend") in trained_on
    assert Triple("user", "phone_number", canonical_phone("555-0142")) in trained_on
    assert not any(t.tail == canonical_phone("555-0199") for t in trained_on)


def test_the_model_dir_is_under_the_state_dir_unless_set(tmp_path: Path) -> None:
    assert Settings(state_dir=tmp_path).transe_model_dir == tmp_path / "models" / "transe"
    chosen = tmp_path / "elsewhere"
    assert Settings(state_dir=tmp_path, ingest={"transe_dir": chosen}).transe_model_dir == chosen


def test_an_installed_package_keeps_its_state_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memstream.settings as settings_module

    monkeypatch.setattr(settings_module, "_PACKAGE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert settings_module.default_state_dir() == tmp_path / "data" / "memstream"


def test_a_checkout_keeps_its_state_inside_it() -> None:
    import memstream.settings as settings_module

    root = Path(settings_module.__file__).resolve().parent.parent
    assert settings_module.default_state_dir() == root / ".memstream"
