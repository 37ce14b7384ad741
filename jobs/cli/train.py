"""``memstream train``: batch jobs that train the project's own small models."""

from __future__ import annotations

import typer

from jobs.train import extractor as train_extractor
from jobs.train import ner as train_ner
from jobs.train import transe as train_transe

app = typer.Typer(
    help="Train the project's own models (fact tagger, NER tagger, TransE).", no_args_is_help=True
)
app.command("extractor")(train_extractor.command)
app.command("ner")(train_ner.command)
app.command("transe")(train_transe.command)
