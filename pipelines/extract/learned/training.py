"""Fine-tune the learned extractor (pipelines/extract/learned/model.py) on aligned dev-set turns.

Kept beside the model (as pipelines/ner/training.py is) so unit tests can
train a tiny model and the CLI stays a thin composition root. Turns are
batched by length, so a batch pads little; the learning rate warms up over
the first steps and then falls linearly to zero.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pipelines.extract.learned.model import (
    LearnedExtractor,
    TaggerConfig,
    build_tagger,
    load_tokenizer,
    pieces,
    predicate_tags,
)
from pipelines.extract.learned.tagging import (
    OUTSIDE,
    Alignment,
    Example,
    labelled_files,
    parse_span_label,
    read_examples,
)
from pipelines.vocabulary import Vocabulary

# The dev-set files held out for choosing how to train (blind when written,
# benchmarks/devset/README.md, "Held-out splits").
VALIDATION_FILES = ("heldout11.txt", "heldout12.txt")
# Loss on a target that is not there (flags outside any value, a word's later pieces).
IGNORED = -100


def seed_everything(seed: int) -> None:
    """Seed python and torch so that training is reproducible on CPU."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def split_examples(data_dir: Path) -> tuple[list[Example], list[Example]]:
    """``(train, validation)`` turns of every labelled file (never the blind folder)."""
    train: list[Example] = []
    validation: list[Example] = []
    for path in labelled_files(data_dir):
        is_validation = path.parent == data_dir and path.name in VALIDATION_FILES
        (validation if is_validation else train).extend(read_examples(path, data_dir))
    return train, validation


def word_targets(
    alignment: Alignment, tag_index: dict[str, int]
) -> tuple[list[int], list[int], list[int]]:
    """Per word of the sequence: its tag id, and negated / hedged (``IGNORED`` outside values)."""
    length = len(alignment.encoded.words)
    tags = [tag_index[OUTSIDE]] * length
    negated, hedged = [IGNORED] * length, [IGNORED] * length
    for span in alignment.spans:
        predicate, is_negated, is_hedged = parse_span_label(span.label)
        for w in range(span.start, span.end):
            tags[w] = tag_index[f"{'B' if w == span.start else 'I'}-{predicate}"]
            negated[w], hedged[w] = int(is_negated), int(is_hedged)
    return tags, negated, hedged


def train_tagger(
    alignments: Sequence[Alignment],
    config: TaggerConfig,
    *,
    seed: int,
    vocab: Vocabulary | None = None,
    progress: Callable[[str], None] | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> LearnedExtractor:
    """Fine-tune a tagger on aligned turns; the model after the last epoch.

    ``progress`` gets a line per epoch; ``on_step(done, total)`` is called after
    every batch (a progress bar's hook).
    """
    seed_everything(seed)
    import torch

    tags = predicate_tags(parse_span_label(s.label)[0] for a in alignments for s in a.spans)
    tag_index = {tag: i for i, tag in enumerate(tags)}
    tokenizer = load_tokenizer()
    model = build_tagger(tags, config)
    named = list(model.named_parameters())
    encoder = [p for n, p in named if n.startswith("encoder.") and p.requires_grad]
    heads = [p for n, p in named if not n.startswith("encoder.")]
    optimiser = torch.optim.AdamW(
        [{"params": encoder, "lr": config.encoder_lr}, {"params": heads, "lr": config.head_lr}],
        weight_decay=0.01,
    )
    ordered = sorted(alignments, key=lambda a: len(a.encoded.words))
    size = config.batch_size
    batches = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    steps = len(batches) * config.epochs
    warm = max(1, int(steps * config.warmup))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / (steps - warm + 1))
    )
    weights = torch.ones(len(tags))
    weights[tag_index[OUTSIDE]] = config.outside_weight
    tag_loss = torch.nn.CrossEntropyLoss(weight=weights, ignore_index=IGNORED)
    flag_loss = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(seed)  # noqa: S311 - batch order, not security
    collecting = gc.isenabled()
    gc.disable()  # the tokenizer and autograd make many short-lived cycles
    try:
        # Enabled here, whatever a caller set: loading other models may switch it off.
        with torch.enable_grad():
            for epoch in range(config.epochs):
                model.train()
                rng.shuffle(batches)
                total, start = 0.0, time.perf_counter()
                for batch in batches:
                    encoded = pieces(tokenizer, [a.encoded for a in batch])
                    shape = tuple(encoded.ids.shape)
                    targets = [torch.full(shape, IGNORED, dtype=torch.long) for _ in range(3)]
                    for row, alignment in enumerate(batch):
                        per_word = word_targets(alignment, tag_index)
                        for word, piece in enumerate(encoded.firsts[row]):
                            if piece >= 0:
                                for target, values in zip(targets, per_word, strict=True):
                                    target[row, piece] = values[word]
                    tag_logits, neg_logits, hedge_logits = model(encoded.ids, encoded.mask)
                    loss = tag_loss(tag_logits.reshape(-1, len(tags)), targets[0].reshape(-1))
                    for logits, target in zip((neg_logits, hedge_logits), targets[1:], strict=True):
                        inside = target != IGNORED
                        if inside.any():
                            loss = loss + flag_loss(logits[inside], target[inside].float())
                    optimiser.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimiser.step()
                    schedule.step()
                    total += float(loss.detach())
                    if on_step is not None:
                        on_step(schedule.last_epoch, steps)
                if progress is not None:
                    progress(
                        f"epoch {epoch + 1}/{config.epochs}: loss {total / len(batches):.4f} "
                        f"({time.perf_counter() - start:.0f} s)"
                    )
                gc.collect()
    finally:
        if collecting:
            gc.enable()
    model.eval()
    return LearnedExtractor(model, tokenizer, tags, config, vocab)
