"""benchmarks/bench_label_agreement.py: a second labelling scored against a split's gold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"


@pytest.fixture
def agreement(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports its siblings by name
    import bench_label_agreement

    return bench_label_agreement


def _split(path: Path, labels: str) -> Path:
    path.write_text(
        "= x01 friends ux01\n@ s1 2026-03-02T09:00:00+00:00\n"
        f"A: how's the knee?\nU: torn meniscus, and no more running for me\n{labels}",
        encoding="utf-8",
    )
    return path


def test_the_same_labels_agree_fully_and_a_missed_negation_shows(
    agreement: ModuleType, tmp_path: Path
) -> None:
    gold_file = _split(
        tmp_path / "a.txt",
        "+ health_condition | torn meniscus\n+ hobby | running | neg update\n",
    )
    gold = agreement.load_devset(gold_file)
    same = agreement.second_labels(gold, agreement.load_devset(gold_file), gold_file)
    assert agreement.score(gold, same)["triple F1"] == 1.0
    other_file = _split(tmp_path / "b.txt", "+ health_condition | torn meniscus\n")
    other = agreement.second_labels(gold, agreement.load_devset(other_file), other_file)
    metrics = agreement.score(gold, other)
    assert (metrics["triple precision"], metrics["triple recall"]) == (1.0, 0.5)
    assert metrics["negation recall"] == 0.0


def test_a_labelling_of_other_turns_is_refused(agreement: ModuleType, tmp_path: Path) -> None:
    gold_file = _split(tmp_path / "a.txt", "+ health_condition | torn meniscus\n")
    other_file = tmp_path / "b.txt"
    other_file.write_text(
        gold_file.read_text(encoding="utf-8").replace("knee", "hip"), encoding="utf-8"
    )
    gold = agreement.load_devset(gold_file)
    with pytest.raises(SystemExit, match="turns differ"):
        agreement.second_labels(gold, agreement.load_devset(other_file), other_file)


def test_the_committed_second_labellings_are_scored_against_their_splits() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_label_agreement.py"), "--no-system"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line.split() for line in run.stdout.splitlines()[1:]]
    names = sorted(p.stem for p in (BENCHMARKS / "devset" / "blind" / "agreement").glob("*.txt"))
    assert sorted(row[0] for row in rows) == names and names
    for row in rows:
        f1 = float(row[6])  # split, "second", "annotator", gold, P, R, F1
        assert 0.5 < f1 <= 1.0
