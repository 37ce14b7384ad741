"""Training TransE with PyKEEN on the triples known so far (``memstream train transe``).

Heavy imports (torch, PyKEEN) happen inside ``train_transe``: importing this
module is cheap. The result is saved in the layout ``transe.TripleEmbedder.load``
reads: a ``state_dict`` plus JSON id maps, never a pickled model.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pipelines.encode.transe import (
    ENTITY_IDS_FILE,
    META_FILE,
    RELATION_IDS_FILE,
    STATE_DICT_FILE,
    TRANSE_DIM,
)
from pipelines.encode.triples import Triple

# 200 epochs: docs/dependencies.md measured 0.6 s for 200 epochs on 300 triples (with
# gc.freeze), and the margin loss of the seed graph is flat well before that.
DEFAULT_EPOCHS = 200
# Adam at 0.01: PyKEEN's default 0.001 needs ~10x the epochs on a graph this small.
DEFAULT_LEARNING_RATE = 0.01
# The seed graph fits in one or two batches of 256: few optimiser steps per
# epoch keep a run well under a second.
DEFAULT_BATCH_SIZE = 256
DEFAULT_SEED = 42


@dataclass(frozen=True)
class TrainedTransE:
    """A trained TransE model: its state_dict, id maps and how it was made."""

    state_dict: dict[str, Any]  # name -> torch.Tensor
    entity_to_id: dict[str, int]
    relation_to_id: dict[str, int]
    meta: dict[str, object]

    def save(self, directory: Path) -> Path:
        """Write the model into ``directory`` (created if needed); returns it."""
        import torch

        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict, directory / STATE_DICT_FILE)
        for name, payload in (
            (ENTITY_IDS_FILE, self.entity_to_id),
            (RELATION_IDS_FILE, self.relation_to_id),
            (META_FILE, self.meta),
        ):
            text = json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False)
            (directory / name).write_text(text + "\n", encoding="utf-8")
        return directory


def train_transe(
    triples: Sequence[Triple],
    *,
    dim: int = TRANSE_DIM,
    epochs: int = DEFAULT_EPOCHS,
    seed: int = DEFAULT_SEED,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> TrainedTransE:
    """Train TransE on ``triples`` (duplicates removed, order-independent) with ``seed``."""
    if not triples:
        raise ValueError("no triples to train on")
    if not 0 < 3 * dim <= 384:
        raise ValueError(f"dim must be in 1..128 (3 * dim must fit MiniLM's 384), got {dim}")
    import numpy as np
    import torch
    import torch._dynamo  # noqa: F401  (imported before gc.freeze, see below)
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory
    from pykeen.utils import set_random_seed

    # Sorted and de-duplicated: the same set of triples trains the same model
    # whatever order the sources listed them in.
    unique = sorted({(t.head, t.relation, t.tail) for t in triples})
    factory = TriplesFactory.from_labeled_triples(np.array(unique, dtype=str))
    set_random_seed(seed)
    model = TransE(triples_factory=factory, embedding_dim=dim, random_seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    loop = SLCWATrainingLoop(
        model=model,
        triples_factory=factory,
        optimizer=optimizer,
        # Its sub-batch probing is for GPU memory; on CPU it only costs a pass.
        automatic_memory_optimization=False,
    )
    # PyKEEN runs gc.collect() every epoch; with torch (and torch._dynamo)
    # loaded each collection walks ~1e6 objects (~200 ms). Freezing the
    # long-lived heap first took 200 epochs from 42 s to 0.6 s (docs/dependencies.md).
    gc.freeze()
    # The tensors are tiny (a few hundred x 64): with 2 threads torch spends
    # its time synchronising; 1 thread took 200 epochs from 2.8 s to 0.45 s on
    # the shared 2-core machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        losses = loop.train(
            triples_factory=factory,
            num_epochs=epochs,
            batch_size=batch_size,
            use_tqdm=False,
            use_tqdm_batch=False,
            pin_memory=False,  # CPU only: pinning would only warn
        )
    finally:
        torch.set_num_threads(threads)
        gc.unfreeze()
    meta: dict[str, object] = {
        "model": "TransE",
        "library": f"pykeen=={version('pykeen')}",
        "dim": dim,
        "epochs": epochs,
        "seed": seed,
        "learning_rate": learning_rate,
        "batch_size": batch_size,
        "triples": len(unique),
        "entities": factory.num_entities,
        "relations": factory.num_relations,
        "final_loss": float(losses[-1]) if losses else None,
    }
    return TrainedTransE(
        state_dict={name: tensor.detach().clone() for name, tensor in model.state_dict().items()},
        entity_to_id=dict(factory.entity_to_id),
        relation_to_id=dict(factory.relation_to_id),
        meta=meta,
    )
