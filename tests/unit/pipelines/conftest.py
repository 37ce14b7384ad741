"""Fixtures shared by the pipeline stage tests."""

from __future__ import annotations

import pytest

from pipelines.encode import Encoder
from pipelines.extract import FactExtractor, extract_crm
from pipelines.ingest import IngestPipeline
from pipelines.parse import DialogueParser
from pipelines.review import Reviewer


@pytest.fixture(scope="session")
def pipeline() -> IngestPipeline:
    """The composed ingest stages with the packaged models, loaded once per run."""
    parser = DialogueParser.load()
    return IngestPipeline(
        parser=parser,
        extractor=FactExtractor.load(parser),
        crm_extractor=extract_crm,
        encoder=Encoder.load(None),
        reviewer=Reviewer(),
    )
