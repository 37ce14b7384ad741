"""``memstream schemas``: the JSON Schema files of the topics."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="JSON Schemas of every topic, for producers in any language.", no_args_is_help=True
)


@app.command("export")
def export() -> None:
    """Regenerate schemas/json/*.schema.json from the pydantic models."""
    from schemas.export import export as do_export

    for path in do_export():
        typer.echo(f"wrote {path}")
