"""The encode stage: every fact gets its hashed, TransE, MiniLM and combined parts."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pipelines.encode.combine import COMBINE_VERSION, combine
from pipelines.encode.hashing import HASHING_VERSION, hash_facts
from pipelines.encode.text import MINILM_DIM, TextEmbedder
from pipelines.encode.transe import TripleEmbedder
from pipelines.encode.triples import fact_triple
from schemas.facts import ExtractedFact
from schemas.memory import Encoding, Polarity

# Query vectors kept per process, by exact text (agents repeat their questions):
# 10k x 384 float32 ~ 15 MB. Mirrors ApiSettings.query_cache_items' default.
QUERY_CACHE_ITEMS = 10_000


def statement(fact: ExtractedFact) -> str:
    """The descriptive text MiniLM embeds: the fact's own text, else its triple in words.

    A negated fact without text reads "user not installation time weekend":
    the negation is never dropped from what gets embedded.
    """
    if fact.text.strip():
        return fact.text
    negation = "not " if fact.polarity is Polarity.NEGATED else ""
    words = f"{fact.subject} {negation}{fact.predicate} {fact.object}"
    return " ".join(words.replace("_", " ").split())


class Encoder:
    """Encodes batches of facts; loaded once per worker and reused."""

    def __init__(
        self,
        triples: TripleEmbedder,
        text: TextEmbedder,
        query_cache_items: int = QUERY_CACHE_ITEMS,
    ) -> None:
        """Assemble from loaded parts; ``Encoder.load`` is the usual way in.

        ``query_cache_items``: how many query vectors ``embed_queries`` keeps
        (least recently used go first; 0 keeps none).
        """
        self._triples = triples
        self._text = text
        self.query_cache_items = query_cache_items
        self._queries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._queries_lock = threading.Lock()  # the serving process embeds from many threads
        self.query_hits = 0
        self.query_misses = 0
        self.model_versions = {
            "hashed": HASHING_VERSION,
            "transe": triples.version,
            "text": text.version,
            "combined": COMBINE_VERSION,
        }

    @classmethod
    def load(
        cls, transe_dir: Path | None = None, query_cache_items: int = QUERY_CACHE_ITEMS
    ) -> Encoder:
        """Load MiniLM and the TransE model in ``transe_dir``.

        Without a trained model there (or with ``None``) the stage still works:
        every triple takes the deterministic fallback vectors.
        """
        return cls(TripleEmbedder.load(transe_dir), TextEmbedder.load(), query_cache_items)

    def encode(self, facts: Sequence[ExtractedFact]) -> list[Encoding]:
        """The encodings of ``facts``, in order, computed as one batch."""
        return self.encode_with_texts(facts, ())[0]

    def encode_with_texts(
        self, facts: Sequence[ExtractedFact], texts: Sequence[str]
    ) -> tuple[list[Encoding], list[list[float]]]:
        """The facts' encodings and MiniLM vectors of ``texts`` (turns), in one forward pass.

        One MiniLM batch for both: the episodes' turn vectors cost no second
        model call per batch.
        """
        if not facts and not texts:
            return [], []
        statements = [statement(f) for f in facts]
        everything = self._text.embed([*statements, *texts])
        turn_vectors: list[list[float]] = everything[len(statements) :].tolist()
        if not facts:
            return [], turn_vectors
        hashed = hash_facts(facts)
        triples = [fact_triple(f) for f in facts]
        triple_vectors = self._triples.vectors(triples)
        text_vectors = everything[: len(statements)]
        negated = np.array([t.negated for t in triples], dtype=np.bool_)
        combined = combine(text_vectors, triple_vectors, negated)
        return [
            Encoding(
                hashed=hashed[row],
                transe=triple_vectors[row].tolist(),
                text=text_vectors[row].tolist(),
                combined=combined[row].tolist(),
                model_versions=self.model_versions,
            )
            for row in range(len(facts))
        ], turn_vectors

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """MiniLM vectors of texts (statements, many at once), in ``Encoding.combined``'s space."""
        vectors: list[list[float]] = self._text.embed(texts).tolist()
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """MiniLM vectors of recall queries, one row per text: cached, then one direct forward.

        The cache is keyed by the exact text; fresh rows equal ``embed_texts``'
        to a cosine of 0.9999 or better (``TextEmbedder.embed_queries``).
        """
        found: dict[str, npt.NDArray[np.float32]] = {}
        with self._queries_lock:
            for text in dict.fromkeys(texts):
                vector = self._queries.get(text)
                if vector is not None:
                    self._queries.move_to_end(text)
                    found[text] = vector
            hits = sum(text in found for text in texts)
            self.query_hits += hits
            self.query_misses += len(texts) - hits
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            # The forward pass runs outside the lock: other threads' hits do not wait for it.
            fresh = dict(zip(missing, self._text.embed_queries(missing), strict=True))
            found.update(fresh)
            with self._queries_lock:
                if self.query_cache_items:
                    self._queries.update(fresh)
                    for text in fresh:
                        self._queries.move_to_end(text)
                while len(self._queries) > self.query_cache_items:
                    self._queries.popitem(last=False)
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        return np.stack([found[text] for text in texts])

    def cached_query(self, text: str) -> npt.NDArray[np.float32] | None:
        """The cached vector of query ``text``, or None (counted as a hit when found)."""
        with self._queries_lock:
            vector = self._queries.get(text)
            if vector is not None:
                self._queries.move_to_end(text)
                self.query_hits += 1
            return vector
