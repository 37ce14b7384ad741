"""Train and evaluate the project's Flair NER tagger on the CoNLL files in ``data/ner/``.

Kept beside the tagger (not in ``jobs/``) so the unit tests can retrain a tiny
model in a temporary directory and the CLI stays a thin composition root.
Flair and torch are imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.ner.tagger import LABEL_TYPE, NerTagger

# Embedding and network sizes: the Character+OneHot BiLSTM-CRF that STACK.md
# measured at ~1.2 MB and ~1,100 sentences/s on 2 cores for ~200 sentences.
CHAR_EMBEDDING_DIM = 25  # flair's CharacterEmbeddings default
HIDDEN_SIZE_CHAR = 25  # flair's default char-LSTM size
ONEHOT_DIM = 32  # vocabulary is a few hundred words; 32 dims is plenty, keeps the file small
HIDDEN_SIZE = 128  # word BiLSTM; 256 gave no gain on the held-out split, doubled the size
ONEHOT_MIN_FREQ = 1  # the corpus is small: every training word gets a vector
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


def build_char_dictionary(data_dir: Path) -> Any:
    """A flair ``Dictionary`` of every character in the training text.

    CharacterEmbeddings would otherwise download flair's "common-chars" file.
    """
    from flair.data import Dictionary

    chars = Dictionary(add_unk=True)
    for line in (data_dir / "train.conll").read_text(encoding="utf-8").splitlines():
        if line.strip():
            for char in line.split(" ")[0]:
                chars.add_item(char)
    return chars


def load_corpus(data_dir: Path) -> Any:
    """The train/dev/test ``ColumnCorpus`` (one token and one BIO tag per line)."""
    from flair.datasets import ColumnCorpus

    return ColumnCorpus(
        data_dir,
        {0: "text", 1: LABEL_TYPE},
        train_file="train.conll",
        dev_file="dev.conll",
        test_file="test.conll",
        column_delimiter=" ",
    )


def train_tagger(data_dir: Path, out_dir: Path, *, seed: int, epochs: int) -> tuple[Any, Path]:
    """Train a Character+OneHot BiLSTM-CRF tagger; return it and the path it was saved to.

    The returned in-memory tagger is the one saved (the model after the last
    epoch, not a "best on dev" checkpoint), so tests can compare it to a reload.

    The stack order [Character, OneHot] matters: the reverse order reloads with
    re-sorted embedding names and silently predicts garbage (STACK.md).
    """
    seed_everything(seed)
    from flair.embeddings import CharacterEmbeddings, OneHotEmbeddings, StackedEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    corpus = load_corpus(data_dir)
    embeddings = StackedEmbeddings(
        [
            CharacterEmbeddings(
                path_to_char_dict=build_char_dictionary(data_dir),
                char_embedding_dim=CHAR_EMBEDDING_DIM,
                hidden_size_char=HIDDEN_SIZE_CHAR,
            ),
            OneHotEmbeddings.from_corpus(
                corpus, field="text", min_freq=ONEHOT_MIN_FREQ, embedding_length=ONEHOT_DIM
            ),
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
        # "none": nothing cached on the sentences between epochs; the character
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
