"""Train and evaluate the project's Flair NER tagger on the CoNLL files in ``memstream/data/ner/``.

Kept beside the tagger (not in ``jobs/``) so the unit tests can retrain a tiny
model in a temporary directory and the CLI stays a thin composition root.
Flair and torch are imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pipelines.ner.features import FEATURE_FIELDS, add_features
from pipelines.ner.tagger import LABEL_TYPE, NerTagger

# Embedding and network sizes. Words are embedded from the cheap features of
# pipelines/ner/features.py, not a character LSTM: the Char+OneHot tagger spent
# ~60 % of its time in flair's per-sentence char LSTM (bench_stage_speed).
# Vocabularies on memstream/data/ner/train.conll: ~300 words seen twice, 20 shapes, ~250 suffixes.
FEATURE_DIMS = {"lower": 32, "shape": 8, "suffix": 16}
# A word seen once trains its own vector; rarer words share "<unk>", which
# would stay untrained with 1 (unseen towns are common at run time).
FEATURE_MIN_FREQ = {"lower": 2, "shape": 1, "suffix": 1}
HIDDEN_SIZE = 128  # word BiLSTM; 256 gave no gain on the held-out split, doubled the size
LEARNING_RATE = 0.1  # flair's SGD default for sequence taggers
MINI_BATCH_SIZE = 8  # 52 SGD updates per epoch on 416 sentences: converges in fewer epochs than 16


@dataclass(frozen=True)
class LabelScore:
    """Precision, recall, F1 and support of one label on an evaluation split."""

    label: str
    precision: float
    recall: float
    f1: float
    support: int


def seed_everything(seed: int) -> None:
    """Seed python, torch and flair so that training is reproducible on CPU."""
    import flair
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    flair.set_seed(seed)


def load_corpus(data_dir: Path) -> Any:
    """The train/dev/test ``ColumnCorpus`` (one token and one BIO tag per line).

    Every token also gets the feature labels of ``pipelines.ner.features``.
    """
    from flair.datasets import ColumnCorpus

    corpus = ColumnCorpus(
        data_dir,
        {0: "text", 1: LABEL_TYPE},
        train_file="train.conll",
        dev_file="dev.conll",
        test_file="test.conll",
        column_delimiter=" ",
    )
    for split in (corpus.train, corpus.dev, corpus.test):
        if split is not None:
            # An in-memory ColumnDataset iterates its sentences; torch types it as a bare Dataset.
            add_features(cast("Iterable[Any]", split))
    return corpus


def train_tagger(data_dir: Path, out_dir: Path, *, seed: int, epochs: int) -> tuple[Any, Path]:
    """Train a word-feature BiLSTM-CRF tagger; return it and the path it was saved to.

    The returned in-memory tagger is the one saved (the model after the last
    epoch, not a "best on dev" checkpoint), so tests can compare it to a reload.

    The embeddings are stacked in ``FEATURE_FIELDS`` order, which is their
    name order: flair re-sorts them by name on reload (docs/dependencies.md).
    """
    seed_everything(seed)
    from flair.embeddings import OneHotEmbeddings, StackedEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    corpus = load_corpus(data_dir)
    embeddings = StackedEmbeddings(
        [
            OneHotEmbeddings.from_corpus(
                corpus,
                field=field,
                min_freq=FEATURE_MIN_FREQ[field],
                embedding_length=FEATURE_DIMS[field],
            )
            for field in FEATURE_FIELDS
        ]
    )
    tagger = SequenceTagger(
        hidden_size=HIDDEN_SIZE,
        embeddings=embeddings,
        tag_dictionary=corpus.make_label_dictionary(label_type=LABEL_TYPE, add_unk=False),
        tag_type=LABEL_TYPE,
        use_crf=True,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    ModelTrainer(tagger, corpus).train(
        str(out_dir),
        learning_rate=LEARNING_RATE,
        mini_batch_size=MINI_BATCH_SIZE,
        max_epochs=epochs,
        shuffle=True,
        # "none": nothing cached on the sentences between epochs; the feature
        # embeddings are trained, so a cached vector would be stale.
        embeddings_storage_mode="none",
        save_final_model=True,
        use_final_model_for_eval=True,
        create_file_logs=False,
        create_loss_file=False,
    )
    model_path = out_dir / "final-model.pt"
    # Only the model file is kept: flair also leaves best-model/optimizer files around.
    for leftover in out_dir.glob("*.pt"):
        if leftover != model_path:
            leftover.unlink()
    return tagger, model_path


def evaluate_tagger(model_path: Path, data_dir: Path, split: str = "test") -> list[LabelScore]:
    """Reload the saved model from disk and score it per label on ``split``.

    Evaluating the reloaded file, never the in-memory model, is what guards
    against the flair reload bug. The last row is the micro average.
    """
    corpus = load_corpus(data_dir)
    tagger = NerTagger.load(model_path)
    result = tagger.model.evaluate(
        getattr(corpus, split), gold_label_type=LABEL_TYPE, mini_batch_size=32, return_loss=False
    )
    report: dict[str, dict[str, float]] = result.classification_report
    rows = [name for name in sorted(report) if name.isupper()] + ["micro avg"]
    return [
        LabelScore(
            label=name,
            precision=report[name]["precision"],
            recall=report[name]["recall"],
            f1=report[name]["f1-score"],
            support=int(report[name]["support"]),
        )
        for name in rows
        if name in report
    ]
