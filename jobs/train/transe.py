"""``memstream train transe``: train the TransE triple embeddings the encode stage loads.

The triples known so far are the committed seed graph
(``pipelines/encode/seed_triples.jsonl``), any ``--triples`` JSON-lines files,
and the facts that the parse and extract stages find in dialogue and CRM
streams (``--dialogue``/``--crm`` JSON-lines files of events; by default the
committed sample stream in ``memstream/data/sample/``). The model is saved as a
state_dict plus JSON id maps under ``<state_dir>/models/transe`` unless
``--out`` says otherwise, together with the exact triples it was trained on
(``triples.jsonl``). Training is reproducible: the same triples and seed give
the same file, bit for bit.

Module-level imports stay light: torch, PyKEEN and the NLP stages load inside
the command, so ``memstream --help`` stays fast.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memstream.data import sample_dir

if TYPE_CHECKING:
    from pipelines.encode.triples import Triple
    from schemas.events import InputEvent

_SAMPLE_DIR = sample_dir()
SAMPLE_DIALOGUE = _SAMPLE_DIR / "dialogue.events.jsonl"
SAMPLE_CRM = _SAMPLE_DIR / "crm.webhooks.jsonl"
TRAINED_TRIPLES_FILE = "triples.jsonl"


def _read_events(path: Path, topic: str) -> list[InputEvent]:
    """Every valid event of a JSON-lines file (invalid lines are reported and skipped)."""
    from schemas.validate import InvalidEvent, decode_event

    events: list[InputEvent] = []
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                events.append(decode_event(topic, raw.rstrip(b"\r\n")))
            except InvalidEvent as err:
                typer.echo(f"{path}:{number}: skipped ({err})", err=True)
    return events


def triples_from_streams(dialogue: Sequence[Path], crm: Sequence[Path]) -> list[Triple]:
    """The triples the parse and extract stages find in dialogue and CRM event files."""
    from pipelines.encode.triples import fact_triple
    from schemas.events import CrmWebhook, DialogueEvent
    from schemas.facts import Assertor, ExtractedFact
    from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS

    facts: list[ExtractedFact] = []
    if dialogue:
        from pipelines.extract import FactExtractor
        from pipelines.parse import DialogueParser

        read = [e for path in dialogue for e in _read_events(path, DIALOGUE_EVENTS)]
        turns = [e for e in read if isinstance(e, DialogueEvent)]
        parser = DialogueParser.load()
        extractor = FactExtractor.load(parser)  # shares the parser's spaCy pipeline
        pairs = list(zip(turns, parser.parse_batch(turns), strict=True))
        # Only what users (and CRM) state about themselves is memory; an
        # agent's unconfirmed statement is not a fact to learn from.
        facts += [
            fact
            for per_turn in extractor.extract_batch(pairs)
            for fact in per_turn
            if fact.asserted_by is Assertor.USER
        ]
    if crm:
        from pipelines.extract import extract_crm

        read = [e for path in crm for e in _read_events(path, CRM_WEBHOOKS)]
        facts += [f for e in read if isinstance(e, CrmWebhook) for f in extract_crm(e)]
    return [fact_triple(f) for f in facts]


def command(
    triples: Annotated[
        list[Path] | None,
        typer.Option(
            "--triples",
            help="A JSON-lines triple file to add (repeatable). The seed graph is always used.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    dialogue: Annotated[
        list[Path] | None,
        typer.Option(
            "--dialogue",
            help="Dialogue events (JSON lines) to extract triples from (repeatable). "
            "Default: memstream/data/sample/dialogue.events.jsonl.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    crm: Annotated[
        list[Path] | None,
        typer.Option(
            "--crm",
            help="CRM webhooks (JSON lines) to map to triples (repeatable). "
            "Default: memstream/data/sample/crm.webhooks.jsonl.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    no_streams: Annotated[
        bool,
        typer.Option("--no-streams", help="Train on triple files only: no parse/extract run."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="Model directory. Default: <state_dir>/models/transe.", file_okay=False),
    ] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="Default: 200.")] = None,
    dim: Annotated[int | None, typer.Option(min=1, max=128, help="Default: 64.")] = None,
    seed: Annotated[int | None, typer.Option(help="Default: 42.")] = None,
) -> None:
    """Train TransE (PyKEEN) on the triples known so far; the encode stage loads it."""
    from memstream.settings import get_settings
    from pipelines.encode.transe_train import train_transe
    from pipelines.encode.triples import SEED_TRIPLES, read_triples, write_triples

    sources: dict[str, list[Triple]] = {str(SEED_TRIPLES): read_triples(SEED_TRIPLES)}
    sources |= {str(path): read_triples(path) for path in triples or []}
    if not no_streams:
        dialogue_files = dialogue or [p for p in (SAMPLE_DIALOGUE,) if p.is_file()]
        crm_files = crm or [p for p in (SAMPLE_CRM,) if p.is_file()]
        for path in [*dialogue_files, *crm_files]:
            typer.echo(f"extracting triples from {path}")
        if dialogue_files or crm_files:
            found = triples_from_streams(dialogue_files, crm_files)
            sources["extracted by parse + extract from the streams above"] = found
    for name, found in sources.items():
        typer.echo(f"{len(found):>6} triples  {name}")
    everything = [t for found in sources.values() for t in found]

    options = {"epochs": epochs, "dim": dim, "seed": seed}
    chosen = {name: value for name, value in options.items() if value is not None}
    started = time.perf_counter()
    model = train_transe(everything, **chosen)
    elapsed = time.perf_counter() - started

    directory = model.save(out or get_settings().transe_model_dir)
    unique = sorted(set(everything), key=lambda t: (t.head, t.relation, t.tail))
    write_triples(directory / TRAINED_TRIPLES_FILE, unique)
    meta = model.meta
    typer.echo(
        f"trained TransE on {meta['triples']} distinct triples "
        f"({meta['entities']} entities, {meta['relations']} relations), "
        f"dim {meta['dim']}, {meta['epochs']} epochs, seed {meta['seed']}, "
        f"final loss {meta['final_loss']:.4f}, in {elapsed:.1f} s"
    )
    typer.echo(f"saved to {directory}")
