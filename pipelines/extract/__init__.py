"""Extract stage: (subject, predicate, object) facts with polarity, kind and confidence."""

from pipelines.extract.crm import extract_crm
from pipelines.extract.extractor import FactExtractor
from pipelines.extract.vocabulary import PREDICATES

__all__ = ["PREDICATES", "FactExtractor", "extract_crm"]
