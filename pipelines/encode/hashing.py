"""Hashed exact fields: O(1) exact matching of times, places, numbers and ids.

Every structured field of a fact becomes two "field=value" features: one named
by its field ("time=monday 9am") and one field-agnostic ("*=monday 9am"), so a
query that knows only a value (a phone number typed by the agent) still hits
it. The triple becomes features too ("subject=...", "relation=...",
"object=..." and "*=<object>"). Names and values are normalised with
``normalise_label`` and otherwise kept whole: this is exact matching; fuzzy
and keyword matching belong to the recall ranking.

The hashing is scikit-learn's ``HashingVectorizer`` (signed 32-bit MurmurHash3,
stateless, so every process maps a value to the same index without a shared
vocabulary). Vectors are binary and unnormalised: the dot product of a query
and an item is the number of exact features they share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

from pipelines.encode.triples import fact_triple, normalise_label
from schemas.facts import ExtractedFact

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import HashingVectorizer

# 2**24 indices: by the birthday bound a user needs ~5,800 distinct exact
# values before two of them are expected to share an index (sqrt(2 * 2**24));
# the sparse dict stores only the set indices, so the width costs nothing.
N_FEATURES = 2**24
HASHING_VERSION = f"sklearn-hashing-murmur3-{N_FEATURES}"
ANY_FIELD = "*"


def _features_as_given(doc: Sequence[str]) -> Sequence[str]:
    """Analyzer: a document is already its list of features."""
    return doc


@cache
def _vectorizer() -> HashingVectorizer:
    # scikit-learn takes ~2 s to import: only when the first batch is hashed,
    # not for everything that imports this module (the settings, the CLI).
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        analyzer=_features_as_given,
        n_features=N_FEATURES,
        alternate_sign=False,  # a value always adds +1, never cancels another
        norm=None,
        binary=True,
    )


def field_features(fields: Mapping[str, str], *, any_field: bool = True) -> list[str]:
    """The "field=value" features of named exact fields, plus "*=value" if ``any_field``."""
    features: list[str] = []
    for name, value in fields.items():
        normalised = normalise_label(value)
        if normalised:
            features.append(f"{normalise_label(name)}={normalised}")
            if any_field:
                features.append(f"{ANY_FIELD}={normalised}")
    return features


def fact_features(fact: ExtractedFact) -> list[str]:
    """All exact features of a fact: its triple plus its structured fields.

    Only the object is a value: "*=" features are not made of the subject or
    relation, which are attribute names ("installation_time", "not_in").
    """
    triple = fact_triple(fact)
    features = [f"subject={triple.head}", f"relation={triple.relation}"]
    features += field_features({"object": triple.tail})
    return features + field_features(fact.fields)


def hash_feature_lists(docs: Sequence[Sequence[str]]) -> list[dict[int, float]]:
    """Sparse hashed vectors (index -> 1.0) of feature lists, one call for the batch."""
    if not docs:
        return []
    matrix = _vectorizer().transform(docs)
    indptr, indices = matrix.indptr, matrix.indices
    return [
        dict.fromkeys((int(i) for i in indices[indptr[row] : indptr[row + 1]]), 1.0)
        for row in range(len(docs))
    ]


def hash_facts(facts: Sequence[ExtractedFact]) -> list[dict[int, float]]:
    """The hashed exact fields of each fact."""
    return hash_feature_lists([fact_features(fact) for fact in facts])


def hash_query(
    values: Iterable[str] = (), fields: Mapping[str, str] | None = None
) -> dict[int, float]:
    """The hashed features of a query's exact terms, for the recall side.

    ``values`` are bare values found in the query (a phone number, "monday"):
    they match that value in any field. ``fields`` are values whose field is
    known ({"PLACE": "berlin"}): they match that field only. The overlap of the
    returned indices with an item's ``Encoding.hashed`` counts exact hits.
    """
    features = [f"{ANY_FIELD}={v}" for v in map(normalise_label, values) if v]
    features += field_features(fields or {}, any_field=False)
    return hash_feature_lists([features])[0]
