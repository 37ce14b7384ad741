"""Load the project's Flair SequenceTagger once and tag pre-tokenised sentences.

The tagger is trained on text tokenised by spaCy's English tokenizer
(``memstream/data/ner/*.conll``), so callers pass spaCy tokens: the same tokenizer for
training and prediction (docs/dependencies.md).
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from pipelines.ner.features import add_features

LABEL_TYPE = "ner"
# The committed model; ``memstream train ner`` writes it here.
MODEL_PATH = Path(str(files("pipelines.ner").joinpath("model", "final-model.pt")))
# Sentences per forward pass: flair's default, measured fastest of 16/32/64 on 2 cores.
PREDICT_BATCH_SIZE = 32
# Flair sentences longer than this are cut: the BiLSTM cost is linear in length and a
# dialogue sentence that long is pasted text, not something said; rules still see it.
MAX_TOKENS = 200


@dataclass(frozen=True)
class TokenSpan:
    """A labelled span over token indices ``[start, end)`` of one sentence."""

    label: str
    start: int
    end: int
    score: float


class NerTagger:
    """A thin wrapper over a loaded flair ``SequenceTagger``."""

    def __init__(self, model: Any) -> None:
        """Wrap an already loaded flair ``SequenceTagger``."""
        self.model = model

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> NerTagger:
        """Load the saved tagger from ``path`` (CPU, eval mode)."""
        from flair.models import SequenceTagger

        # Flair logs every embedding vocabulary at INFO while loading: kilobytes
        # of tokens in each job's log. Only warnings are worth keeping.
        flair_log = logging.getLogger("flair")
        level = flair_log.level
        flair_log.setLevel(logging.WARNING)
        try:
            model = SequenceTagger.load(str(path))
        finally:
            flair_log.setLevel(level)
        model.eval()
        return cls(model)

    @property
    def labels(self) -> list[str]:
        """Span labels the model knows (TIME, PLACE, ...), without BIO prefixes."""
        names = {item.split("-", 1)[-1] for item in self.model.label_dictionary.get_items()}
        return sorted(name for name in names if name not in {"O", "<unk>", "<START>", "<STOP>"})

    def predict(self, sentences: list[list[str]]) -> list[list[TokenSpan]]:
        """Tag each token list; returns the spans found in each, in order."""
        # flair makes a few cyclic objects per token (Token <-> Sentence, Label <->
        # Token). Cyclic collections during a batch promote them, alive, to the
        # oldest generation, and its collections then walk every object of the
        # loaded models (~0.3 s each on 2 cores). Paused here, they die young.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._predict(sentences)
        finally:
            if collecting:
                gc.enable()

    def _predict(self, sentences: list[list[str]]) -> list[list[TokenSpan]]:
        from flair.data import Sentence

        results: list[list[TokenSpan]] = [[] for _ in sentences]
        batch = [(i, Sentence(tokens[:MAX_TOKENS])) for i, tokens in enumerate(sentences) if tokens]
        if not batch:
            return results
        add_features(s for _, s in batch)
        self.model.predict([s for _, s in batch], mini_batch_size=PREDICT_BATCH_SIZE)
        for i, sentence in batch:
            for span in sentence.get_spans(LABEL_TYPE):
                label = span.get_label(LABEL_TYPE)
                indices = [token.idx - 1 for token in span.tokens]  # flair counts from 1
                results[i].append(
                    TokenSpan(label.value, indices[0], indices[-1] + 1, float(label.score))
                )
        return results
