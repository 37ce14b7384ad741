"""The encode stage: every fact gets its hashed, TransE, MiniLM and combined parts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipelines.encode.combine import COMBINE_VERSION, combine
from pipelines.encode.hashing import HASHING_VERSION, hash_facts
from pipelines.encode.text import TextEmbedder
from pipelines.encode.transe import TripleEmbedder
from pipelines.encode.triples import fact_triple
from schemas.facts import ExtractedFact
from schemas.memory import Encoding, Polarity


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

    def __init__(self, triples: TripleEmbedder, text: TextEmbedder) -> None:
        """Assemble from loaded parts; ``Encoder.load`` is the usual way in."""
        self._triples = triples
        self._text = text
        self.model_versions = {
            "hashed": HASHING_VERSION,
            "transe": triples.version,
            "text": text.version,
            "combined": COMBINE_VERSION,
        }

    @classmethod
    def load(cls, transe_dir: Path | None = None) -> Encoder:
        """Load MiniLM and the TransE model in ``transe_dir``.

        Without a trained model there (or with ``None``) the stage still works:
        every triple takes the deterministic fallback vectors.
        """
        return cls(TripleEmbedder.load(transe_dir), TextEmbedder.load())

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
        """MiniLM vectors of query texts, in the space of ``Encoding.combined``."""
        vectors: list[list[float]] = self._text.embed(texts).tolist()
        return vectors
