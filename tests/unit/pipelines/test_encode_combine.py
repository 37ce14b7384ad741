"""The encode stage end to end: every part present, combined vector size, norm and geometry."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from pipelines.encode import Encoder, statement
from pipelines.encode.combine import COMBINED_DIM, W_TEXT, projection
from pipelines.encode.hashing import hash_facts
from pipelines.encode.text import TextEmbedder
from pipelines.encode.transe import TRANSE_DIM, TripleEmbedder
from pipelines.encode.transe_train import train_transe
from pipelines.encode.triples import SEED_TRIPLES, read_triples
from schemas.facts import ExtractedFact
from schemas.memory import Polarity

# review merges near-duplicates above this cosine (docs/architecture.md, Stages, conflict stage)
MERGE_THRESHOLD = 0.85


def fact(text: str, obj: str = "weekend", polarity: Polarity = Polarity.AFFIRMED) -> ExtractedFact:
    return ExtractedFact(
        tenant_id="acme",
        user_id="u1",
        event_id="e1",
        event_ts=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        subject="user",
        predicate="installation_time",
        object=obj,
        polarity=polarity,
        confidence=0.9,
        text=text,
        fields={"TIME": obj},
    )


@pytest.fixture(scope="module")
def text_embedder() -> TextEmbedder:
    return TextEmbedder.load()


@pytest.fixture(scope="module")
def seed_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:  # PyKEEN writes under PYSTOW_HOME at import
        patch.setenv("PYSTOW_HOME", str(tmp_path_factory.mktemp("pystow")))
        model = train_transe(read_triples(SEED_TRIPLES))
        yield model.save(tmp_path_factory.mktemp("transe"))


@pytest.fixture(scope="module", params=["fallback", "trained"])
def encoder(request: pytest.FixtureRequest, text_embedder: TextEmbedder) -> Encoder:
    if request.param == "fallback":
        return Encoder(TripleEmbedder.load(None), text_embedder)
    return Encoder(TripleEmbedder.load(request.getfixturevalue("seed_model_dir")), text_embedder)


def cosine_matrix(encoder: Encoder, facts: list[ExtractedFact]) -> np.ndarray:
    combined = np.array([e.combined for e in encoder.encode(facts)])
    return combined @ combined.T


def test_every_part_is_present_with_its_documented_size(encoder: Encoder) -> None:
    facts = [fact("I don't accept weekend installation", polarity=Polarity.NEGATED), fact("")]
    encodings = encoder.encode(facts)
    assert len(encodings) == 2
    for encoding, source in zip(encodings, facts, strict=True):
        assert len(encoding.combined) == COMBINED_DIM
        assert len(encoding.text) == 384
        assert len(encoding.transe) == 3 * TRANSE_DIM
        assert encoding.hashed == hash_facts([source])[0]
        assert np.linalg.norm(encoding.combined) == pytest.approx(1.0, abs=1e-5)
        assert set(encoding.model_versions) == {"hashed", "transe", "text", "combined"}
    assert encoder.encode([]) == []


def test_a_fact_is_never_merged_into_its_own_negation(encoder: Encoder) -> None:
    cos = cosine_matrix(
        encoder,
        [
            fact("I accept weekend installation"),
            fact("I don't accept weekend installation", polarity=Polarity.NEGATED),
        ],
    )
    assert cos[0, 1] < MERGE_THRESHOLD - 0.3


def test_paraphrases_of_one_triple_stay_near_duplicates(encoder: Encoder) -> None:
    cos = cosine_matrix(
        encoder,
        [
            fact("No weekend installation, please", polarity=Polarity.NEGATED),
            fact("I don't accept weekend installation", polarity=Polarity.NEGATED),
            fact("Installation on Monday works for me", obj="monday"),
        ],
    )
    assert cos[0, 1] > MERGE_THRESHOLD
    assert cos[0, 2] < MERGE_THRESHOLD


def test_query_embeddings_search_the_combined_space(encoder: Encoder) -> None:
    items = encoder.encode([fact("No weekend installation, please", polarity=Polarity.NEGATED)])
    (query,) = encoder.embed_texts(["can the technician come on Saturday or Sunday?"])
    (unrelated,) = encoder.embed_texts(["what is my current broadband plan?"])
    item = np.array(items[0].combined)
    assert len(query) == COMBINED_DIM
    assert float(np.array(query) @ item) > float(np.array(unrelated) @ item)
    # the query-to-item cosine is about W_TEXT x the pure text cosine
    text_cosine = float(np.array(query) @ np.array(items[0].text))
    assert float(np.array(query) @ item) == pytest.approx(W_TEXT * text_cosine, abs=0.1)


def test_projection_keeps_triple_inner_products() -> None:
    matrix = projection(3 * TRANSE_DIM)
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(3 * TRANSE_DIM), atol=1e-5)


def test_statement_keeps_the_negation_when_a_fact_has_no_text() -> None:
    negated = fact("", polarity=Polarity.NEGATED)
    assert statement(negated) == "user not installation time weekend"
    assert statement(fact("I like Mondays")) == "I like Mondays"
