"""``memstream train extractor``: fine-tune the learned fact extractor, score it, save it.

Reads the labelled dev-set turns (``benchmarks/devset`` of a checkout, its
``train/`` folder included, ``blind/`` never), aligns their gold triples to
token spans, fine-tunes MiniLM's top layers with the tag, negation and hedge
heads (pipelines/extract/learned/model.py), then reloads the saved file and
scores it on the validation files
(``pipelines.extract.learned.training.VALIDATION_FILES``): their user turns,
each after the turn before it, the measure every model since the first was
compared on (benchmarks/devset/README.md). One run trains one tagger; the
packaged model is an ensemble of them (``model/extractor-N.pt``), and
``--member N`` says which one this run replaces.

Module-level imports stay light: torch and transformers load inside the
command, so ``memstream --help`` stays fast.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pipelines.extract.learned.model import LearnedExtractor, TaggerConfig
    from pipelines.extract.learned.scoring import Report
    from pipelines.extract.learned.tagging import Alignment, Example
    from pipelines.vocabulary import Vocabulary

# The labelled turns ship with a checkout, not with the package.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "devset"
DEFAULT_SEED = 13
SPEED_BATCH = 32


def _echo_coverage(name: str, examples: list[Example], alignments: list[Alignment]) -> None:
    from pipelines.extract.learned.tagging import coverage

    found = coverage(examples, alignments)
    typer.echo(
        f"{name}: {len(examples)} turns, gold aligned {found.aligned}/{found.total} "
        f"({found.aligned / max(found.total, 1):.1%}), {found.in_context} from the previous "
        f"turn, {found.merged} separate times read as windows"
    )


def _echo_report(report: Report) -> None:
    typer.echo(f"{'predicate':<20}{'P':>7}{'R':>7}{'F1':>7}{'gold':>6}{'pred':>6}")
    for predicate in sorted(report.by_predicate):
        c = report.by_predicate[predicate]
        typer.echo(
            f"{predicate:<20}{c.precision:>7.3f}{c.recall:>7.3f}{c.f1:>7.3f}"
            f"{c.tp + c.fn:>6}{c.tp + c.fp:>6}"
        )
    o = report.overall
    typer.echo(
        f"validation: triples P {o.precision:.3f} R {o.recall:.3f} F1 {o.f1:.3f} "
        f"(tp {o.tp}, fp {o.fp}, fn {o.fn}); negation recall {report.negated.recall:.3f} "
        f"({report.negated.tp}/{report.negated.tp + report.negated.fn}); hedge recall "
        f"{report.hedged.recall:.3f} ({report.hedged.tp}/{report.hedged.tp + report.hedged.fn})"
    )


def _speed(model: LearnedExtractor, turns: list[tuple[str, str, str]]) -> float:
    """Turns per second in batches of ``SPEED_BATCH``, after one warm-up batch."""
    model.predict(turns[:SPEED_BATCH])
    start = time.perf_counter()
    model.predict(turns, batch_size=SPEED_BATCH)
    return len(turns) / (time.perf_counter() - start)


def _train_with_progress(
    aligned: list[Alignment], config: TaggerConfig, seed: int, vocab: Vocabulary
) -> LearnedExtractor:
    """Train with a bar over every batch of every epoch (on a terminal) and a line per epoch."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from pipelines.extract.learned.training import train_tagger

    console = Console(stderr=True)
    columns = (
        TextColumn("training"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=not console.is_terminal) as bar:
        task = bar.add_task("batches", total=None)

        def on_step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        def on_epoch(line: str) -> None:
            (bar.console.print if console.is_terminal else typer.echo)(line)

        return train_tagger(
            aligned, config, seed=seed, vocab=vocab, progress=on_epoch, on_step=on_step
        )


def command(
    data: Annotated[
        Path, typer.Option(help="Dev-set folder (blind/ is never read)")
    ] = DEFAULT_DATA,
    out: Annotated[
        Path | None,
        typer.Option(help="Model file to write (default: the packaged member of --member)"),
    ] = None,
    member: Annotated[
        int,
        typer.Option(
            min=1,
            help="Which member of the packaged ensemble to replace: "
            "pipelines/extract/learned/model/extractor-N.pt (the ingest job reads every member)",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option(help="Seed for python and torch")] = DEFAULT_SEED,
    epochs: Annotated[
        int | None, typer.Option(help="Passes over the training turns [default: 6]")
    ] = None,
    trained_layers: Annotated[
        int | None, typer.Option(help="MiniLM's top layers to fine-tune, 1-6 [default: 6]")
    ] = None,
    agent_turns: Annotated[
        bool,
        typer.Option(help="Also train on the other speaker's turns (the job tags both)"),
    ] = True,
) -> None:
    """Fine-tune the tagger, reload it, print validation P/R/F1 and speed, save it."""
    from dataclasses import replace

    from pipelines.extract.learned.model import MODEL_PATH, LearnedExtractor, TaggerConfig
    from pipelines.extract.learned.scoring import score
    from pipelines.extract.learned.tagging import USER, align
    from pipelines.extract.learned.training import VALIDATION_FILES, split_examples
    from pipelines.vocabulary import default_vocabulary

    config = TaggerConfig()
    config = replace(config, epochs=epochs or config.epochs)
    config = replace(config, trained_layers=trained_layers or config.trained_layers)
    if not 1 <= config.trained_layers <= 6:
        raise typer.BadParameter("--trained-layers must be between 1 and 6 (MiniLM has 6)")
    vocab = default_vocabulary()
    train, validation = split_examples(data)
    if not train or not validation:
        raise typer.BadParameter(
            f"{data}: no training turns, or no validation files {VALIDATION_FILES}"
        )
    if not agent_turns:
        train = [e for e in train if e.role == USER]
    validation = [e for e in validation if e.role == USER]
    train_aligned = [align(e, vocab) for e in train]
    validation_aligned = [align(e, vocab) for e in validation]
    _echo_coverage("train", train, train_aligned)
    _echo_coverage("validation (user turns)", validation, validation_aligned)
    start = time.perf_counter()
    trained = _train_with_progress(train_aligned, config, seed, vocab)
    seconds = time.perf_counter() - start
    target = out or MODEL_PATH / f"extractor-{member}.pt"
    trained.save(target)
    # Scored after a reload from disk: the saved file is what is measured.
    model = LearnedExtractor.load(target, vocab)
    turns = [(e.previous_text, e.text, e.role) for e in validation]
    report = score([a.gold for a in validation_aligned], model.predict(turns), vocab)
    typer.echo(
        f"\ntrained in {seconds:.0f} s, {target.stat().st_size / 1e6:.1f} MB, "
        f"{_speed(model, turns):.0f} turns/s (batches of {SPEED_BATCH})"
    )
    _echo_report(report)
    typer.echo(f"saved {target}")
