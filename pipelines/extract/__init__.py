"""Extract stage: (subject, predicate, object) facts with polarity, kind and confidence."""

from pipelines.extract.crm import extract_crm
from pipelines.extract.extractor import FactExtractor

__all__ = ["FactExtractor", "extract_crm"]
