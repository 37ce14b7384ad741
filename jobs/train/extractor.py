"""``memstream train extractor``: train the learned fact extractor, pick a head, save it.

Reads the labelled dev-set turns (``benchmarks/devset`` of a checkout, its
``train/`` folder included, ``blind/`` never), aligns their gold triples to
token spans, trains each architecture on the frozen MiniLM vectors, reloads
each saved head and scores it on the validation files
(``pipelines.extract.learned.training.VALIDATION_FILES``), then keeps the one
with the best triple F1. Only the head is saved (pipelines/extract/learned/model.py).

Module-level imports stay light: flair and torch load inside the command, so
``memstream --help`` stays fast.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pipelines.extract.learned.model import LearnedExtractor
    from pipelines.extract.learned.scoring import Report
    from pipelines.extract.learned.tagging import Alignment, Example

# The labelled turns ship with a checkout, not with the package.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "devset"
DEFAULT_SEED = 13
# The BiLSTM-CRF is left out by default: it scored below the plain BiLSTM on
# validation (triple F1 0.484 vs 0.497) and its 8 epochs alone take ~10 min on
# two cores; ``--architectures linear,bilstm,bilstm-crf`` runs the comparison.
DEFAULT_ARCHITECTURES = "linear,bilstm"
SPEED_BATCH = 64


def _echo_coverage(name: str, examples: list[Example], alignments: list[Alignment]) -> None:
    from pipelines.extract.learned.tagging import coverage

    found = coverage(examples, alignments)
    typer.echo(
        f"{name}: {len(examples)} turns, gold aligned {found.aligned}/{found.total} "
        f"({found.aligned / max(found.total, 1):.1%}), {found.in_context} from the previous "
        f"turn, {found.merged} separate times read as windows"
    )


def _echo_report(name: str, report: Report) -> None:
    typer.echo(f"{'predicate':<20}{'P':>7}{'R':>7}{'F1':>7}{'gold':>6}{'pred':>6}")
    for predicate in sorted(report.by_predicate):
        c = report.by_predicate[predicate]
        typer.echo(
            f"{predicate:<20}{c.precision:>7.3f}{c.recall:>7.3f}{c.f1:>7.3f}"
            f"{c.tp + c.fn:>6}{c.tp + c.fp:>6}"
        )
    o = report.overall
    typer.echo(
        f"{name}: triples P {o.precision:.3f} R {o.recall:.3f} F1 {o.f1:.3f} "
        f"(tp {o.tp}, fp {o.fp}, fn {o.fn}); negation recall {report.negated.recall:.3f} "
        f"({report.negated.tp}/{report.negated.tp + report.negated.fn}); hedge recall "
        f"{report.hedged.recall:.3f} ({report.hedged.tp}/{report.hedged.tp + report.hedged.fn})"
    )


def _speed(model: LearnedExtractor, turns: list[tuple[str, str, str]]) -> float:
    """Turns per second in batches of ``SPEED_BATCH``, after one warm-up batch."""
    model.predict(turns[:SPEED_BATCH])
    start = time.perf_counter()
    for i in range(0, len(turns), SPEED_BATCH):
        model.predict(turns[i : i + SPEED_BATCH], batch_size=SPEED_BATCH)
    return len(turns) / (time.perf_counter() - start)


def command(
    data: Annotated[
        Path, typer.Option(help="Dev-set folder (blind/ is never read)")
    ] = DEFAULT_DATA,
    out: Annotated[Path | None, typer.Option(help="Model file to write")] = None,
    seed: Annotated[int, typer.Option(help="Seed for python, torch and flair")] = DEFAULT_SEED,
    epochs: Annotated[
        int | None, typer.Option(help="Training epochs (default: each architecture's own)")
    ] = None,
    architectures: Annotated[
        str, typer.Option(help="Comma-separated heads to try (linear, bilstm, bilstm-crf)")
    ] = DEFAULT_ARCHITECTURES,
) -> None:
    """Train each head, reload it, print validation P/R/F1 and speed, save the best one."""
    from pipelines.extract.learned.model import MODEL_PATH, LearnedExtractor, minilm_embeddings
    from pipelines.extract.learned.scoring import score
    from pipelines.extract.learned.tagging import align
    from pipelines.extract.learned.training import (
        ARCHITECTURES,
        VALIDATION_FILES,
        label_map,
        sentences_of,
        split_examples,
        train_extractor,
    )
    from pipelines.vocabulary import default_vocabulary

    names = [name.strip() for name in architectures.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ARCHITECTURES))
    if unknown or not names:
        raise typer.BadParameter(f"unknown {unknown}; choose from {sorted(ARCHITECTURES)}")
    vocab = default_vocabulary()
    train, validation = split_examples(data)
    if not validation:
        raise typer.BadParameter(f"{data}: no validation files {VALIDATION_FILES}")
    train_aligned = [align(e, vocab) for e in train]
    validation_aligned = [align(e, vocab) for e in validation]
    _echo_coverage("train", train, train_aligned)
    _echo_coverage("validation", validation, validation_aligned)
    mapping = label_map(train_aligned)
    labels = sorted(set(mapping.values()))
    sentences = sentences_of(train_aligned, mapping)
    turns = [(e.previous_text, e.text, e.role) for e in validation]
    gold = [a.gold for a in validation_aligned]
    shared: dict[object, object] = {}
    results: list[tuple[float, str, Path]] = []
    with tempfile.TemporaryDirectory(prefix="memstream-extractor-") as work:
        for name in names:
            arch = ARCHITECTURES[name]
            if arch.encoder not in shared:
                shared[arch.encoder] = minilm_embeddings(arch.encoder)
            start = time.perf_counter()
            trained = train_extractor(
                sentences,
                labels,
                arch,
                Path(work) / name,
                seed=seed,
                epochs=epochs,
                embeddings=shared[arch.encoder],
            )
            seconds = time.perf_counter() - start
            saved = trained.save(Path(work) / f"{name}.pt")
            # Scored after a reload from disk: the save format is what is measured.
            model = LearnedExtractor.load(saved, vocab)
            report = score(gold, model.predict(turns), vocab)
            speed = _speed(model, turns)
            typer.echo(
                f"\n== {name}: trained in {seconds:.0f} s, {saved.stat().st_size / 1e6:.2f} MB, "
                f"{speed:.0f} turns/s (batches of {SPEED_BATCH})"
            )
            _echo_report(name, report)
            results.append((report.overall.f1, name, saved))
        best_f1, best, path = max(results)
        target = out or MODEL_PATH
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    typer.echo(f"\nkept {best} (validation triple F1 {best_f1:.3f}): saved {target}")
