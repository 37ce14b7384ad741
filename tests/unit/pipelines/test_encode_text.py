"""MiniLM text embeddings: 384-d, normalised, paraphrases closer than unrelated text."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.encode.text import MINILM_DIM, TextEmbedder


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
