"""``memstream train extractor``: trains on a dev folder, saves, reloads and scores the model."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from jobs.cli.train import app
from pipelines.extract.learned.model import LearnedExtractor

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TRAIN = """\
= c1 acme u1
@ s1 2027-03-01T09:00:00+00:00
U: My number is 07700 900123.
+ phone_number | 07700900123
A: Thanks. Which day suits you?
U: Tuesday please, not Monday.
+ appointment_time | tuesday
+ appointment_time | monday | neg
U: Lovely weather today!
"""
VALIDATION = """\
= v1 acme u2
@ s1 2027-03-02T09:00:00+00:00
U: You can reach me on 07700 900456.
+ phone_number | 07700900456
"""


def test_trains_saves_reloads_and_scores_on_the_validation_files(tmp_path: Path) -> None:
    data = tmp_path / "devset"
    (data / "train").mkdir(parents=True)
    (data / "train" / "tiny.txt").write_text(TRAIN)
    for name in ("heldout11.txt", "heldout12.txt"):
        (data / name).write_text(VALIDATION)
    out = tmp_path / "extractor.pt"
    args = ["extractor", "--data", str(data), "--out", str(out), "--epochs", "1"]
    result = CliRunner().invoke(app, [*args, "--trained-layers", "1", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "epoch 1/1: loss" in result.output
    assert "validation: triples P" in result.output and f"saved {out}" in result.output
    # The saved file is a model the pipeline loads (its quality is test_learned_model's).
    [triples] = LearnedExtractor.load(out).predict([("", "Call me on 07700 900999.", "user")])
    assert all(t.predicate in {"phone_number", "appointment_time"} for t in triples)


def test_a_folder_without_validation_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "tiny.txt").write_text(TRAIN)
    args = ["extractor", "--data", str(tmp_path), "--out", str(tmp_path / "m.pt")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "no validation files" in result.output
