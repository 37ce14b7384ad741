"""How far two annotators agree on the blind splits: the ceiling of issue 12's F1 target.

Run: ``python benchmarks/bench_label_agreement.py [--no-system]``

``benchmarks/devset/blind/agreement/NAME.txt`` is a second, independent
labelling of the blind split ``NAME``: the same turns, labelled by another
helper that read only benchmarks/devset/LABELLING.md, the predicate tables of
docs/vocabulary.md and the unlabelled turns (never the first labels, the code
or its output). Scoring it against the split's own gold with the extraction
benchmark's ``score`` says how well a careful reader of the same guide
reproduces the gold: a system cannot be expected to agree with the gold more
than a second annotator does. The default hybrid extractor is scored on the
same turns beside it (``--no-system`` skips it and loads no model).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_extract_quality import (  # benchmarks/ sibling
    BLIND_DIR,
    LEARNED_MODEL,
    Predicted,
    Turn,
    first_sight_path,
    load_devset,
    run_memstream,
    score,
)
from bench_extract_quality import COLUMNS as EXTRACTION_COLUMNS

AGREEMENT_DIR = BLIND_DIR / "agreement"
# The extraction benchmark's columns that compare two labellings (not the review's).
SHOWN = ("gold", "P", "R", "F1", "vF1", "neg R", "polar")
COLUMNS = tuple(column for column in EXTRACTION_COLUMNS if column[0] in SHOWN)


def second_labels(gold: list[Turn], second: list[Turn], path: Path) -> Predicted:
    """The second annotator's triples as predictions on the gold's turns (same turns in order)."""
    if [t.event.text for t in gold] != [t.event.text for t in second]:
        raise SystemExit(
            f"{path}: its turns differ from the split's; relabel the split's own turns"
        )
    return {
        i: [(g.predicate, g.object, g.negated, 1.0, g.update) for g in turn.gold]
        for i, turn in enumerate(second)
    }


def main(with_system: bool = True) -> None:
    """Print one row per labelled pair: second annotator vs gold, and the system vs gold."""
    files = sorted(AGREEMENT_DIR.glob("*.txt"))
    if not files:
        raise SystemExit(f"no second labelling in {AGREEMENT_DIR}")
    extractor = parser = None
    if with_system:
        from pipelines.extract import FactExtractor
        from pipelines.parse import DialogueParser

        parser = DialogueParser.load()
        extractor = FactExtractor.load(parser, learned_path=LEARNED_MODEL)
    print(
        f"{'split':<14}{'who':<20}"
        + "".join(f"{c:>{7 if c != 'gold' else 6}}" for c, _, _ in COLUMNS)
    )
    for path in files:
        gold = load_devset(first_sight_path(path.stem))
        rows = {"second annotator": score(gold, second_labels(gold, load_devset(path), path))}
        if extractor is not None and parser is not None:
            rows["memstream hybrid"] = score(gold, run_memstream(gold, parser, extractor)[0])
        for who, metrics in rows.items():
            cells = "".join(fmt.format(metrics[key]) for _, key, fmt in COLUMNS)
            print(f"{path.stem:<14}{who:<20}{cells}")


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument(
        "--no-system", action="store_true", help="score only the second annotator (no model load)"
    )
    main(with_system=not arguments.parse_args().no_system)
