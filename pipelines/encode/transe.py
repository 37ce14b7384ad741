"""TransE vectors of triples: trained ones when known, deterministic otherwise.

A model directory written by ``memstream train transe`` holds
``state_dict.pt`` (the PyKEEN TransE ``state_dict``, loaded with
``weights_only=True``: no pickled code), ``entity_to_id.json``,
``relation_to_id.json`` and ``meta.json``. Only torch is needed to load it.

The vector of a triple is the concatenation of the unit-length head, relation
and tail embeddings (``3 * dim`` floats): each part weighs the same, and the
cosine of two triple vectors is the mean of the three part cosines (about
2/3 for two triples that differ only in an unrelated tail). An entity or relation the model
has not seen — or every one, when no model was trained yet — gets a unit
vector derived from its label by ``stable_unit_vector``: the same in every
process, nearly orthogonal to everything else.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pipelines.encode.stable import stable_unit_vector
from pipelines.encode.triples import Triple

log = logging.getLogger(__name__)

# 64 dimensions: the graph is small (hundreds to a few thousand triples per
# deployment), PyKEEN's own TransE default is 50, and 3 * 64 = 192 fits twice
# into MiniLM's 384, which the combined vector's exact projection needs.
TRANSE_DIM = 64
FALLBACK_VERSION = "fallback"

STATE_DICT_FILE = "state_dict.pt"
ENTITY_IDS_FILE = "entity_to_id.json"
RELATION_IDS_FILE = "relation_to_id.json"
META_FILE = "meta.json"
# PyKEEN 1.11's parameter names of the TransE embeddings in the state_dict.
ENTITY_WEIGHTS = "entity_representations.0._embeddings.weight"
RELATION_WEIGHTS = "relation_representations.0._embeddings.weight"

# Unseen labels recur (the same new place in many turns): caching their
# vectors saves a SHAKE-256 per lookup; 2**16 64-d float32 vectors is ~20 MB.
_FALLBACK_CACHE_SIZE = 2**16


@lru_cache(maxsize=_FALLBACK_CACHE_SIZE)
def fallback_vector(kind: str, label: str, dim: int) -> npt.NDArray[np.float32]:
    """The deterministic unit vector of an entity or relation no model knows."""
    vector = stable_unit_vector(f"transe\x1f{kind}\x1f{label}", dim)
    vector.flags.writeable = False  # shared by the cache
    return vector


def _unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)


@dataclass(frozen=True)
class TripleEmbedder:
    """Maps triples to TransE vectors; ``version`` names the model (or the fallback)."""

    dim: int
    version: str
    entity_ids: dict[str, int]
    relation_ids: dict[str, int]
    entities: npt.NDArray[np.float32]  # unit rows
    relations: npt.NDArray[np.float32]  # unit rows

    @classmethod
    def fallback_only(cls, dim: int = TRANSE_DIM) -> TripleEmbedder:
        """An embedder with no trained model: every label takes the fallback."""
        empty = np.zeros((0, dim), dtype=np.float32)
        return cls(dim, FALLBACK_VERSION, {}, {}, empty, empty)

    @classmethod
    def load(cls, directory: Path | None) -> TripleEmbedder:
        """The model saved in ``directory``; the fallback when there is none yet."""
        if directory is None or not (directory / STATE_DICT_FILE).is_file():
            log.info("no trained TransE model in %s: deterministic fallback vectors", directory)
            return cls.fallback_only()
        import torch  # deferred: loading torch costs seconds, the fallback needs none

        weights_path = directory / STATE_DICT_FILE
        state = torch.load(weights_path, map_location="cpu", weights_only=True)
        entities = state[ENTITY_WEIGHTS].detach().numpy().astype(np.float32)
        relations = state[RELATION_WEIGHTS].detach().numpy().astype(np.float32)
        entity_ids = json.loads((directory / ENTITY_IDS_FILE).read_text(encoding="utf-8"))
        relation_ids = json.loads((directory / RELATION_IDS_FILE).read_text(encoding="utf-8"))
        if len(entity_ids) != len(entities) or len(relation_ids) != len(relations):
            raise ValueError(f"{directory}: id maps do not match the saved embeddings")
        digest = hashlib.sha256(weights_path.read_bytes()).hexdigest()[:12]
        return cls(
            dim=entities.shape[1],
            version=f"transe-{digest}",
            entity_ids=entity_ids,
            relation_ids=relation_ids,
            entities=_unit_rows(entities),
            relations=_unit_rows(relations),
        )

    def entity(self, label: str) -> npt.NDArray[np.float32]:
        """The unit vector of an entity label (trained or fallback)."""
        index = self.entity_ids.get(label)
        if index is None:
            return fallback_vector("entity", label, self.dim)
        return self.entities[index]

    def relation(self, label: str) -> npt.NDArray[np.float32]:
        """The unit vector of a relation label (trained or fallback)."""
        index = self.relation_ids.get(label)
        if index is None:
            return fallback_vector("relation", label, self.dim)
        return self.relations[index]

    def vectors(self, triples: Sequence[Triple]) -> npt.NDArray[np.float32]:
        """One ``3 * dim`` row per triple: [head | relation | tail], each unit length."""
        out = np.empty((len(triples), 3 * self.dim), dtype=np.float32)
        for row, triple in enumerate(triples):
            out[row, : self.dim] = self.entity(triple.head)
            out[row, self.dim : 2 * self.dim] = self.relation(triple.relation)
            out[row, 2 * self.dim :] = self.entity(triple.tail)
        return out
