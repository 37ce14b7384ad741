"""The vectors of a keyed-state snapshot as base64 bytes instead of JSON number lists.

A user's keyed state (``pipelines/review/state.py``) holds every current head
and pending item with its encoding (``schemas.memory.Encoding``: the MiniLM
text vector, the combined vector and the TransE vector), and the triggers'
centroid of each recent session (``pipelines/triggers/state.py``). As JSON
numbers the encodings were 94 % of the heads' bytes (sample stream: 2.15 of
2.28 MB over 8 users). The Faust table holds the decoded snapshot, where a
list of 384 Python floats takes ~12 KiB against a 2 KiB string, and every
batch writes each touched user's whole snapshot to the changelog.

Packing loses nothing: the encoder's vectors are float32 arrays
(``pipelines/encode/encoder.py``) and are packed as float32; any other list
(the triggers' rounded centroid sums) is packed as float64. A restored state
therefore equals the one snapshotted, and a version re-emitted after a restart
(a close, a merge) carries exactly the vector it carried before.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import numpy as np

# The Encoding fields that hold dense vectors; ``hashed`` is a small sparse dict.
DENSE_FIELDS = ("transe", "text", "combined")
_FORMATS: dict[str, np.dtype[np.floating[Any]]] = {"f4": np.dtype("<f4"), "f8": np.dtype("<f8")}


def is_packed(value: object) -> bool:
    """Whether ``value`` is a vector ``pack_vector`` made."""
    return isinstance(value, str) and value.partition(":")[0] in _FORMATS


def pack_vector(values: Sequence[float]) -> str:
    """``values`` as ``f4:``/``f8:`` + base64: float32 when that is exact, else float64."""
    values = list(values)
    packed = np.asarray(values, dtype=_FORMATS["f4"])
    kind = "f4"
    if packed.tolist() != values:
        packed, kind = np.asarray(values, dtype=_FORMATS["f8"]), "f8"
    return f"{kind}:{base64.b64encode(packed.tobytes()).decode('ascii')}"


def unpack_vector(packed: str | Sequence[float]) -> list[float]:
    """Inverse of ``pack_vector``; a list (what version-1 snapshots hold) comes back as floats."""
    if not isinstance(packed, str):
        return [float(x) for x in packed]
    kind, _, data = packed.partition(":")
    if kind not in _FORMATS:
        raise ValueError(f"not a packed vector: {packed[:20]!r}")
    values: list[float] = np.frombuffer(base64.b64decode(data), dtype=_FORMATS[kind]).tolist()
    return values


def pack_record(dumped: dict[str, Any]) -> dict[str, Any]:
    """A ``MemoryRecord.model_dump(mode="json")`` with its dense vectors packed (in place)."""
    encoding = dumped.get("encoding")
    if encoding:
        for name in DENSE_FIELDS:
            if encoding.get(name):
                encoding[name] = pack_vector(encoding[name])
    return dumped


def unpack_record(raw: dict[str, Any]) -> dict[str, Any]:
    """A packed record dump for ``MemoryRecord.model_validate``: a copy, ``raw`` untouched.

    The Faust table hands out the snapshot it holds; unpacking in place would
    put the long lists back into the table.
    """
    encoding = raw.get("encoding")
    if not encoding:
        return raw
    unpacked = {
        name: unpack_vector(value) if name in DENSE_FIELDS and value else value
        for name, value in encoding.items()
    }
    return {**raw, "encoding": unpacked}
