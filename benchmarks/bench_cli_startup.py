"""Start-up time of the ``memstream`` CLI, beside the Python start-up it cannot beat.

Each row runs one command in a fresh subprocess N times (stdout discarded) and
prints the median and the fastest wall time:

- ``python -c pass``           — the interpreter alone (baseline);
- ``python -c "import typer"`` — the CLI framework alone (baseline);
- ``memstream --help``         — the root help: names and summaries only, no
  command module imported (``jobs/cli/app.py``);
- ``memstream lag --help``     — one light command's help: imports ``jobs.cli.lag``;
- ``memstream worker --help``  — a heavy command's help: imports the Faust
  worker and the ingest stages it wires.

The ``memstream`` rows run the console script beside this interpreter (the
venv's ``bin/memstream``), or, when there is none, the same entry point through
``python -c``. The machine's other load moves every row alike; compare the rows
of one run, not runs.

Run::

    python benchmarks/bench_cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = Path(sys.executable).with_name("memstream")
MEMSTREAM = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "from jobs.cli.app import main; main()"]
)
CASES: list[tuple[str, list[str]]] = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ('python -c "import typer"', [sys.executable, "-c", "import typer"]),
    ("memstream --help", [*MEMSTREAM, "--help"]),
    ("memstream lag --help", [*MEMSTREAM, "lag", "--help"]),
    ("memstream worker --help", [*MEMSTREAM, "worker", "--help"]),
]


def wall_times(args: list[str], runs: int) -> list[float]:
    """Seconds each of ``runs`` runs of ``args`` took, after one unmeasured warm-up."""
    times: list[float] = []
    for attempt in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(  # noqa: S603 - this interpreter or its script, fixed arguments
            args,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        if attempt:  # the first run fills the OS file cache
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Measured runs per command.")
    options = parser.parse_args()
    rows = []
    for label, args in CASES:
        times = wall_times(args, options.runs)
        rows.append((label, statistics.median(times), min(times)))
    width = max(len(label) for label, _, _ in rows)
    print(f"{'command':<{width}}  {'median s':>8}  {'min s':>6}  (runs: {options.runs})")
    for label, median, fastest in rows:
        print(f"{label:<{width}}  {median:>8.3f}  {fastest:>6.3f}")


if __name__ == "__main__":
    main()
