"""Train the learned extractor's tagger head on aligned dev-set turns.

Kept beside the model (as pipelines/ner/training.py is) so unit tests can
train a tiny model in a temporary directory and the CLI stays a thin
composition root. The encoder is frozen, so each turn is embedded once:
flair keeps the vectors on the sentences between epochs (storage mode
"cpu"), and heads trained one after the other on the same sentences share
that work.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipelines.extract.learned.model import (
    EncoderConfig,
    HeadConfig,
    LearnedExtractor,
    minilm_embeddings,
    new_tagger,
    to_sentence,
)
from pipelines.extract.learned.tagging import (
    Alignment,
    Example,
    labelled_files,
    parse_span_label,
    read_examples,
    span_label,
)

# The dev-set files held out for choosing an architecture (blind when written,
# benchmarks/devset/README.md, "Held-out splits").
VALIDATION_FILES = ("heldout11.txt", "heldout12.txt")
# Hedged labels rarer than this are trained without the hedge (label_map).
MIN_LABEL_COUNT = 3


@dataclass(frozen=True)
class Architecture:
    """A tagger head and how it is trained."""

    name: str
    head: HeadConfig
    learning_rate: float
    epochs: int
    mini_batch_size: int = 32
    encoder: EncoderConfig = field(default_factory=EncoderConfig)


ARCHITECTURES = {
    # One linear map from each frozen MiniLM vector to the tags: no RNN, no CRF.
    "linear": Architecture(
        "linear",
        HeadConfig(use_rnn=False, use_crf=False, locked_dropout=0.2),
        learning_rate=5e-3,
        epochs=30,
    ),
    # A small BiLSTM over the same vectors, a softmax per token: no CRF.
    "bilstm": Architecture(
        "bilstm",
        HeadConfig(use_rnn=True, use_crf=False, hidden_size=64, locked_dropout=0.3),
        learning_rate=1e-2,
        epochs=25,
    ),
    # A small BiLSTM-CRF over the same vectors: sees the tags of its neighbours.
    "bilstm-crf": Architecture(
        "bilstm-crf",
        HeadConfig(use_rnn=True, use_crf=True, hidden_size=64, locked_dropout=0.3),
        learning_rate=1e-2,
        epochs=8,
    ),
}


def seed_everything(seed: int) -> None:
    """Seed python, torch and flair so that training is reproducible on CPU."""
    import flair
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    flair.set_seed(seed)


def split_examples(data_dir: Path) -> tuple[list[Example], list[Example]]:
    """``(train, validation)`` turns of every labelled file (never the blind folder)."""
    train: list[Example] = []
    validation: list[Example] = []
    for path in labelled_files(data_dir):
        is_validation = path.parent == data_dir and path.name in VALIDATION_FILES
        (validation if is_validation else train).extend(read_examples(path, data_dir))
    return train, validation


def label_map(alignments: Sequence[Alignment], min_count: int = MIN_LABEL_COUNT) -> dict[str, str]:
    """Each span label of the training turns and the label it is trained as.

    A hedged label seen fewer than ``min_count`` times is trained without its
    hedge (``likes~neg~hedge`` as ``likes~neg``): too few to learn, and every
    extra label costs the CRF tags² per token. Negation is always kept.
    """
    counts = Counter(span.label for a in alignments for span in a.spans)
    mapping = {}
    for label, count in counts.items():
        predicate, negated, hedged = parse_span_label(label)
        rare = hedged and count < min_count
        mapping[label] = span_label(predicate, negated) if rare else label
    return mapping


def sentences_of(alignments: Sequence[Alignment], labels: dict[str, str]) -> list[Any]:
    """Flair sentences with the gold span labels (as ``label_map`` trains them)."""
    return [
        to_sentence(a.encoded, [replace(s, label=labels.get(s.label, s.label)) for s in a.spans])
        for a in alignments
    ]


def train_extractor(
    sentences: Sequence[Any],
    labels: Sequence[str],
    architecture: Architecture,
    work_dir: Path,
    *,
    seed: int,
    epochs: int | None = None,
    embeddings: Any = None,
) -> LearnedExtractor:
    """Train one head on ``sentences`` (from ``sentences_of``); the model after the last epoch.

    Pass the same ``embeddings`` (``minilm_embeddings``) and sentences to
    several calls to embed the turns only once.
    """
    seed_everything(seed)
    import torch
    from flair.data import Corpus
    from flair.datasets import FlairDatapointDataset
    from flair.trainers import ModelTrainer

    embeddings = embeddings if embeddings is not None else minilm_embeddings(architecture.encoder)
    tagger = new_tagger(embeddings, labels, architecture.head)
    corpus = Corpus(
        train=FlairDatapointDataset(list(sentences)),
        dev=None,
        test=None,
        sample_missing_splits=False,
    )
    work_dir.mkdir(parents=True, exist_ok=True)
    ModelTrainer(tagger, corpus).train(
        str(work_dir),
        learning_rate=architecture.learning_rate,
        mini_batch_size=architecture.mini_batch_size,
        max_epochs=epochs if epochs is not None else architecture.epochs,
        # AdamW: the linear head on frozen vectors crawls under flair's SGD default.
        optimizer=torch.optim.AdamW,
        shuffle=True,
        # The encoder is frozen: vectors kept on the sentences are never stale.
        embeddings_storage_mode="cpu",
        save_final_model=False,
        # Also stops flair writing a best-model.pt (transformer included) every epoch.
        use_final_model_for_eval=True,
        create_file_logs=False,
        create_loss_file=False,
    )
    tagger.eval()
    return LearnedExtractor(tagger, architecture.encoder, architecture.head)
