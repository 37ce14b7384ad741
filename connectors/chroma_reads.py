"""Reads and deletes of any number of items in a Chroma collection, a page at a time.

Chroma's SQLite backend binds one variable per matched id, and SQLite allows
32,766: one ``get`` of a user with 100,000 turns failed with "too many SQL
variables" (``benchmarks/bench_recall.py --with-100k``). Every read that can
match a user's whole history goes through ``get_where``; every write of such
a set through ``in_pages``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

import chromadb
from chromadb.api.types import Where

# Far below SQLite's 32,766 variables, and large enough that a user's first
# read (recall's index) takes few round trips.
PAGE = 10_000

T = TypeVar("T")


def get_where(
    collection: chromadb.Collection, where: Where, include: Sequence[str]
) -> dict[str, list[Any]]:
    """Every item matching ``where``: its ids and the ``include`` fields, as lists."""
    out: dict[str, list[Any]] = {"ids": [], **{key: [] for key in include}}
    offset = 0
    while True:
        found = collection.get(
            where=where,
            include=list(include),  # type: ignore[arg-type]
            limit=PAGE,
            offset=offset,
        )
        out["ids"] += found["ids"]
        for key in include:
            values = cast("Iterable[Any] | None", found.get(key))
            if values is not None:
                out[key] += list(values)
        if len(found["ids"]) < PAGE:
            return out
        offset += PAGE


def in_pages(items: Sequence[T]) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``PAGE`` (for ``upsert`` and ``delete``)."""
    for start in range(0, len(items), PAGE):
        yield items[start : start + PAGE]
