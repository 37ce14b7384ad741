"""The project's own Flair NER tagger (TIME, PLACE, NUMBER, COMMITMENT)."""

from pipelines.ner.tagger import LABEL_TYPE, MODEL_PATH, NerTagger, TokenSpan

__all__ = ["LABEL_TYPE", "MODEL_PATH", "NerTagger", "TokenSpan"]
