"""The combined vector: one 384-d unit vector per memory item for the vector store.

    combined = normalise(W_TEXT * text + W_TRIPLE * sign * P @ triple)

``text`` is the MiniLM vector (unit, 384-d); ``triple`` is the TransE vector
[head | relation | tail] scaled to unit length (192-d); ``sign`` is -1 for a
negated fact, +1 otherwise; ``P`` is a fixed 384 x 192 matrix with orthonormal
columns, so ``P @ triple`` keeps every inner product between triples exactly
and lands in the text space.

Why the text space (384-d) and not a concatenation: a query is free text, so
the recall side embeds it with MiniLM alone (``Encoder.embed_texts``) and
searches the same collection, and the Chroma writer can fall back to MiniLM
for an item without a combined vector: every vector in a collection has one
dimension. The query-to-item cosine is then ~W_TEXT x the text cosine (the
cross term with a random-subspace triple is ~W_TRIPLE / sqrt(384) ~ 0.03).

Why these weights: W_TEXT**2 + W_TRIPLE**2 = 1, so the item-to-item cosine is
~0.64 x text cosine + 0.36 x (signed) triple cosine. Text dominates recall;
the triple part separates what MiniLM barely tells apart. Why the sign:
MiniLM puts "I don't accept weekend installation" at cosine 0.91 of "I accept
weekend installation", and trained TransE puts "not_in" near "in" (both join
the same heads and tails), so without it the pair measured 0.87 combined and
review (near-duplicate merge above 0.85) would merge a fact into its own
negation. With the sign a negated fact points away from its affirmation in
the triple part: the same pair measures ~0.3, while a paraphrase of the same
triple stays above 0.85 (see tests/unit/pipelines/test_encode_combine.py).
The hashed exact fields are not mixed in: they are matched exactly, apart.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from pipelines.encode.stable import stable_uniform
from pipelines.encode.text import MINILM_DIM

W_TEXT = 0.8
W_TRIPLE = 0.6
COMBINED_DIM = MINILM_DIM
COMBINE_VERSION = f"text-space-signed-v1:w_text={W_TEXT},w_triple={W_TRIPLE}"


@lru_cache(maxsize=4)
def projection(triple_dim: int) -> npt.NDArray[np.float32]:
    """The fixed COMBINED_DIM x ``triple_dim`` matrix with orthonormal columns."""
    if not 0 < triple_dim <= COMBINED_DIM:
        raise ValueError(f"a {triple_dim}-d triple vector does not fit {COMBINED_DIM} dims")
    seed_matrix = stable_uniform(
        f"combine\x1fprojection\x1f{triple_dim}", COMBINED_DIM * triple_dim
    )
    orthonormal, _ = np.linalg.qr(seed_matrix.reshape(COMBINED_DIM, triple_dim))
    matrix = orthonormal.astype(np.float32)
    matrix.flags.writeable = False  # shared by the cache
    return matrix


def combine(
    text: npt.NDArray[np.float32],
    triple: npt.NDArray[np.float32],
    negated: npt.NDArray[np.bool_],
) -> npt.NDArray[np.float32]:
    """Row-wise combined vectors of unit text rows, triple rows and their polarity."""
    triple_norms = np.linalg.norm(triple, axis=1, keepdims=True)
    sign = np.where(negated, -1.0, 1.0)[:, None]
    triple_unit = sign * triple / np.where(triple_norms == 0.0, 1.0, triple_norms)
    mixed = W_TEXT * text + W_TRIPLE * (triple_unit @ projection(triple.shape[1]).T)
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    return (mixed / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
