"""Encode stage: hashed exact fields, TransE triples, MiniLM text, one combined vector.

See README.md in this package for the dimensions and weights.
"""

from pipelines.encode.encoder import Encoder, statement
from pipelines.encode.hashing import hash_query

__all__ = ["Encoder", "hash_query", "statement"]
