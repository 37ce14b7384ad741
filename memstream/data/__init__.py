"""Data shipped with memstream: the sample stream and the NER training corpus.

Read through ``importlib.resources`` so an installed package finds them as a
checkout does. The package is a plain folder in wheels and editable installs,
so a directory path is returned.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _folder(name: str) -> Path:
    return Path(str(files(__name__).joinpath(name)))


def sample_dir() -> Path:
    """The bundled sample stream: one JSON-lines file per input topic, and its script."""
    return _folder("sample")


def ner_corpus_dir() -> Path:
    """The NER corpus (CoNLL train/dev/test) that ``memstream train ner`` reads."""
    return _folder("ner")
