"""MiniLM text embeddings: 384-d, normalised, paraphrases closer than unrelated text.

The recall query path (direct forward, cached) gives the batch path's vectors.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from memstream.data import sample_dir
from pipelines.encode import Encoder
from pipelines.encode.text import MINILM_DIM, TextEmbedder
from pipelines.encode.transe import TripleEmbedder


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    return TextEmbedder.load()


def test_paraphrases_are_closer_than_unrelated_text(embedder: TextEmbedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed(
        [
            "Please don't install anything at the weekend.",
            "Weekend installation doesn't work for me.",
            "My favourite football team lost again yesterday.",
        ]
    )
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.3


def test_vectors_are_384_d_and_unit_length(embedder: TextEmbedder) -> None:
    vectors = embedder.embed(
        ["call me after 9", "", "😀 <b>markup</b> 周末不要安装", "x" * 100_000]
    )
    assert vectors.shape == (4, MINILM_DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_duplicates_are_encoded_once_but_returned_in_place(embedder: TextEmbedder) -> None:
    vectors = embedder.embed(["tea", "coffee", "tea"])
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert not np.array_equal(vectors[0], vectors[1])
    assert embedder.embed([]).shape == (0, MINILM_DIM)


def _varied_texts() -> list[str]:
    """A few hundred texts of every shape recall meets: the sample turns and odd ones."""
    lines = (sample_dir() / "dialogue.events.jsonl").read_text().splitlines()
    turns = [json.loads(line)["text"] for line in lines if line.strip()]
    odd = [
        "",
        "   padded with spaces   ",
        "?",
        "07700 900123",
        "Friday?",
        "WHEN CAN THE TECHNICIAN COME",
        "😀 <b>markup</b> 周末不要安装",
        "x" * 100_000,  # truncated to 256 word pieces by both paths
        " ".join(["installation"] * 400),
    ]
    # Their first halves too: query-length fragments, cut mid-word as a typist might.
    halves = [turn[: len(turn) // 2] for turn in turns]
    return list(dict.fromkeys([*turns, *halves, *odd]))


def test_query_path_is_compatible_with_the_batch_path(embedder: TextEmbedder) -> None:
    texts = _varied_texts()
    assert len(texts) >= 400
    stored = embedder.embed(texts)
    one_by_one = np.stack([embedder.embed_queries([text])[0] for text in texts])
    batched = np.concatenate(
        [embedder.embed_queries(texts[i : i + 16]) for i in range(0, len(texts), 16)]
    )
    for queried in (one_by_one, batched):
        assert queried.shape == stored.shape
        assert queried.dtype == np.float32
        cosines = np.sum(queried * stored, axis=1)
        assert float(cosines.min()) >= 0.9999
    assert embedder.embed_queries([]).shape == (0, MINILM_DIM)


@pytest.fixture(scope="module")
def encoder(embedder: TextEmbedder) -> Encoder:
    return Encoder(TripleEmbedder.load(None), embedder, query_cache_items=3)


def test_query_cache_hits_repeated_text_and_stays_bounded(encoder: Encoder) -> None:
    hits, misses = encoder.query_hits, encoder.query_misses
    first = encoder.embed_queries(["tea", "coffee", "tea"])
    assert (encoder.query_hits - hits, encoder.query_misses - misses) == (0, 3)
    np.testing.assert_array_equal(first[0], first[2])
    again = encoder.embed_queries(["coffee"])
    np.testing.assert_array_equal(again[0], first[1])
    assert encoder.query_hits - hits == 1
    assert encoder.cached_query("tea") is not None  # a hit: "tea" is now the newest
    encoder.embed_queries(["jazz", "opera"])  # two more: the least recent, "coffee", goes
    assert encoder.cached_query("coffee") is None
    assert encoder.cached_query("Tea") is None  # keyed by the exact text
    assert {t for t in ("tea", "jazz", "opera") if encoder.cached_query(t) is not None} == {
        "tea",
        "jazz",
        "opera",
    }
    assert encoder.query_hits - hits == 5


def test_no_query_cache_when_its_size_is_zero(embedder: TextEmbedder) -> None:
    uncached = Encoder(TripleEmbedder.load(None), embedder, query_cache_items=0)
    uncached.embed_queries(["tea"])
    uncached.embed_queries(["tea"])
    assert (uncached.query_hits, uncached.query_misses) == (0, 2)
    assert uncached.cached_query("tea") is None
