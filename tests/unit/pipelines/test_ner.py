"""The project's Flair NER tagger: the committed model reloads and scores; training repeats."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstream.data import ner_corpus_dir
from pipelines.ner import MODEL_PATH, NerTagger
from pipelines.ner.training import evaluate_tagger, train_tagger

os.environ.setdefault("FLAIR_CACHE_ROOT", str(Path.home() / ".cache" / "memstream" / "flair"))
DATA_DIR = ner_corpus_dir()
# Floor for the committed model on the held-out split: `memstream train ner`
# (seed 13, 20 epochs) measured micro F1 0.969 after reloading on the 60-sentence
# split, both for the first Char+OneHot tagger and for the word-feature tagger
# that replaced it (pipelines/ner/features.py); minus a 0.05 margin.
MICRO_F1_FLOOR = 0.92
MAX_MODEL_BYTES = 5_000_000  # committed only if <= 5 MB


@pytest.fixture(scope="module")
def tagger() -> NerTagger:
    return NerTagger.load()


def test_committed_model_is_small_and_knows_the_labels(tagger: NerTagger) -> None:
    assert MODEL_PATH.stat().st_size <= MAX_MODEL_BYTES
    assert {"TIME", "PLACE", "NUMBER", "COMMITMENT"} <= set(tagger.labels)


def test_reloaded_model_scores_on_the_held_out_split() -> None:
    rows = {row.label: row for row in evaluate_tagger(MODEL_PATH, DATA_DIR, split="test")}
    assert rows["micro avg"].f1 >= MICRO_F1_FLOOR
    assert rows["micro avg"].support > 0


def test_tags_spacy_tokens(tagger: NerTagger) -> None:
    [spans] = tagger.predict([["Call", "me", "on", "0151", "234", "5678", "on", "Friday", "."]])
    found = {(s.label, s.start, s.end) for s in spans}
    assert ("NUMBER", 3, 6) in found
    assert ("TIME", 7, 8) in found
    assert tagger.predict([[], ["Hello", "!"]])[0] == []


def _subset(src: Path, dst: Path, sentences: int) -> None:
    dst.mkdir()
    for split in ("train", "dev", "test"):
        blocks = (src / f"{split}.conll").read_text(encoding="utf-8").split("\n\n")
        (dst / f"{split}.conll").write_text("\n\n".join(blocks[:sentences]) + "\n", "utf-8")


def test_retrain_is_reproducible_and_reload_predicts_like_before_save(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _subset(DATA_DIR, data, sentences=40)
    first, first_path = train_tagger(data, tmp_path / "a", seed=3, epochs=2)
    second, _ = train_tagger(data, tmp_path / "b", seed=3, epochs=2)
    sentences = [
        [line.split(" ")[0] for line in block.splitlines()]
        for block in (data / "test.conll").read_text(encoding="utf-8").split("\n\n")
        if block.strip()
    ]
    before = NerTagger(first).predict(sentences)
    assert NerTagger(second).predict(sentences) == before
    assert NerTagger.load(first_path).predict(sentences) == before
