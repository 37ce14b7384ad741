"""Placeholder: being written."""

import typer

app = typer.Typer(help="Local services.")
