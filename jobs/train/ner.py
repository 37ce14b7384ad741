"""``memstream train ner``: train the NER tagger, save it, reload it and evaluate it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from memstream.data import ner_corpus_dir

DATA_DIR = ner_corpus_dir()
# 20 epochs: dev loss flattened by then with the settings in
# pipelines/ner/training.py (word-feature tagger: 5.5 CPU-minutes, 17 min wall
# on the shared, busy 2-core machine).
DEFAULT_EPOCHS = 20
DEFAULT_SEED = 13


def command(
    data_dir: Annotated[Path, typer.Option(help="Folder with train/dev/test .conll")] = DATA_DIR,
    out: Annotated[Path | None, typer.Option(help="Model file to write")] = None,
    seed: Annotated[int, typer.Option(help="Seed for python, torch and flair")] = DEFAULT_SEED,
    epochs: Annotated[int, typer.Option(help="Training epochs")] = DEFAULT_EPOCHS,
) -> None:
    """Train the Flair tagger reproducibly, save it, reload it and print per-label P/R/F1."""
    from pipelines.ner.tagger import MODEL_PATH
    from pipelines.ner.training import evaluate_tagger, train_tagger

    target = out or MODEL_PATH
    with tempfile.TemporaryDirectory(prefix="memstream-ner-") as work:
        _, trained = train_tagger(data_dir, Path(work), seed=seed, epochs=epochs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trained, target)
    size_mb = target.stat().st_size / 1e6
    typer.echo(f"saved {target} ({size_mb:.1f} MB); reloading and evaluating the held-out split")
    typer.echo(f"{'label':<12}{'P':>8}{'R':>8}{'F1':>8}{'support':>9}")
    for row in evaluate_tagger(target, data_dir, split="test"):
        typer.echo(
            f"{row.label:<12}{row.precision:>8.3f}{row.recall:>8.3f}{row.f1:>8.3f}{row.support:>9}"
        )
