"""Pseudo-random numbers that are the same in every process, forever.

The fallback TransE vector of an unseen entity and the projection of triples
into the text space must not change between processes or library upgrades:
stored vectors would silently stop matching new ones. Python's ``hash()`` is
salted per process and NumPy documents that ``Generator`` streams may change
between releases, so both are derived from SHAKE-256 of a key instead.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

_UINT32_RANGE = float(2**32)


def stable_uniform(key: str, size: int) -> npt.NDArray[np.float64]:
    """``size`` numbers in [-1, 1), a pure function of ``key``."""
    raw = hashlib.shake_256(key.encode("utf-8")).digest(4 * size)
    words = np.frombuffer(raw, dtype="<u4").astype(np.float64)
    return words / _UINT32_RANGE * 2.0 - 1.0


def stable_unit_vector(key: str, dim: int) -> npt.NDArray[np.float32]:
    """A unit-length vector of ``dim`` floats, a pure function of ``key``.

    Independent keys give nearly orthogonal vectors in high dimension (the
    cosine of two such 64-d vectors has a standard deviation of about 1/8).
    """
    vector = stable_uniform(key, dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)
