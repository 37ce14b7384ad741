"""Speed of the ingest stages: parse, extract, encode, and the three together.

    HF_HUB_OFFLINE=1 FLAIR_CACHE_ROOT=~/.cache/memstream/flair \
    ~/.cache/memstream/venv/bin/python benchmarks/bench_stage_speed.py [--repeat 3]

Input: the committed sample stream (memstream/data/sample/dialogue.events.jsonl), in
batches as a worker would take them from Kafka. Prints the model load times,
then turns/s of each stage alone and of the chain parse -> extract -> encode,
with each stage's share of the chain's time, beside two baselines measured in
the same run over the same turns: spaCy's tokenizer alone, and the full spaCy
pipeline the parse stage runs (``nlp.pipe``). ``--compare-ner MODEL`` also runs
the chain with another NER model file (e.g. an earlier ``final-model.pt`` from
git history), its passes interleaved with the committed model's so both see the
same machine load, and prints it as one more row. ``--workers N`` then runs the
chain in N processes at once (one worker per core, as deployed) and prints
their total turns/s. Timings are the median of
``--repeat`` passes after one warm-up pass; beside the wall-clock speed,
turns/CPU-s is the speed per second of this process's CPU time, which other
load on a shared machine does not inflate (with one torch thread it is what
one free core would do). The target (issue 3) is >= 300
turns/s for the chain on 2 cores.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memstream.data import sample_dir
from pipelines.extract.learned.model import MODEL_PATH as LEARNED_MODEL
from schemas.events import DialogueEvent

SAMPLE = sample_dir() / "dialogue.events.jsonl"
TARGET_TURNS_PER_S = 300  # issue 3, "speed"
STAGES = ("parse", "extract", "encode")
# Turns per batch: what one Kafka poll hands a worker (the Faust/Flink jobs
# batch at this size); larger batches amortise nlp.pipe and MiniLM better.
DEFAULT_BATCH = 128
# One intra-op torch thread: the deployment runs one worker per core (PyFlink
# parallelism 2 on 2 cores, docs/dependencies.md), and on this shared machine (load ~11)
# 2 threads ran the chain at 9 turns/s against 73 with 1: threads that wait
# for a busy core stall every matrix product of Flair and MiniLM.
DEFAULT_TORCH_THREADS = 1


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """Wall-clock seconds taken by ``action()`` and its result."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def now() -> tuple[float, float]:
    """(wall clock, CPU time of this process).

    On a shared machine the wall clock also counts the time spent waiting for a
    core; CPU time counts only the work itself (turns/CPU-s in the table).
    """
    return time.perf_counter(), time.process_time()


def add_since(spent: dict[str, float], stage: str, since: tuple[float, float]) -> None:
    """Add the wall and CPU seconds since ``since`` to ``stage`` and ``stage:cpu``."""
    wall, cpu = now()
    spent[stage] = spent.get(stage, 0.0) + wall - since[0]
    spent[f"{stage}:cpu"] = spent.get(f"{stage}:cpu", 0.0) + cpu - since[1]


def load_turns(path: Path) -> list[DialogueEvent]:
    """The dialogue turns of a JSON-lines event file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [DialogueEvent.model_validate_json(line) for line in lines if line.strip()]


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``items`` cut into consecutive batches of ``size``."""
    return [items[start : start + size] for start in range(0, len(items), size)]


class Stages:
    """The three loaded stages and one timed pass over the turns."""

    def __init__(self, transe_dir: Path | None) -> None:
        """Load every model, timing each load."""
        from pipelines.encode import Encoder
        from pipelines.extract import FactExtractor
        from pipelines.parse import DialogueParser

        self.load_s: dict[str, float] = {}
        self.load_s["parse (spaCy)"], self.parser = timed(DialogueParser.load)
        # The extractor shares the parser's spaCy pipeline, as a worker does.
        self.load_s["extract (Flair NER)"], self.extractor = timed(
            lambda: FactExtractor.load(self.parser)
        )
        self.load_s["encode (MiniLM + TransE)"], self.encoder = timed(
            lambda: Encoder.load(transe_dir)
        )

    def chain(self, turn_batches: list[Sequence[DialogueEvent]]) -> dict[str, float]:
        """One pass parse -> extract -> encode per batch; seconds spent in each stage."""
        spent: dict[str, float] = {"facts": 0.0}
        for batch in turn_batches:
            mark = now()
            parsed = self.parser.parse_batch(batch)
            add_since(spent, "parse", mark)
            mark = now()
            per_turn = self.extractor.extract_batch(list(zip(batch, parsed, strict=True)))
            add_since(spent, "extract", mark)
            mark = now()
            facts = [fact for turn_facts in per_turn for fact in turn_facts]
            self.encoder.encode(facts)
            add_since(spent, "encode", mark)
            spent["facts"] += len(facts)
        return spent

    def baselines(self, texts: list[str]) -> dict[str, float]:
        """Seconds for spaCy's tokenizer alone and its full pipeline over ``texts``."""
        nlp = self.parser.nlp
        spent: dict[str, float] = {}
        mark = now()
        list(nlp.tokenizer.pipe(texts))
        add_since(spent, "tokenise", mark)
        mark = now()
        list(nlp.pipe(texts))
        add_since(spent, "spacy", mark)
        return spent


def median_runs(
    runs: Sequence[Callable[[], dict[str, float]]], repeat: int
) -> list[dict[str, float]]:
    """The per-key median of ``repeat`` runs of each of ``runs`` (after one warm-up each).

    The runs take turns pass by pass, so a change of machine load hits all of them.
    """
    for run in runs:
        run()
    results: list[list[dict[str, float]]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, out in zip(runs, results, strict=True):
            out.append(run())
    return [{key: statistics.median(r[key] for r in out) for key in out[0]} for out in results]


def swapped_chain(
    stages: Stages, part: str, value: Any, turn_batches: list[Sequence[DialogueEvent]]
) -> Any:
    """A pass of the chain with the extractor's ``part`` set to ``value``, then put back."""
    kept = getattr(stages.extractor, part)

    def run() -> dict[str, float]:
        setattr(stages.extractor, part, value)
        try:
            return stages.chain(turn_batches)
        finally:
            setattr(stages.extractor, part, kept)

    return run


def compared_chain(stages: Stages, model: Path, turn_batches: list[Sequence[DialogueEvent]]) -> Any:
    """A pass of the chain with the NER model file ``model`` in place of the committed one."""
    from pipelines.ner import NerTagger

    return swapped_chain(stages, "tagger", NerTagger.load(model), turn_batches)


def learned_chain(stages: Stages, model: Path, turn_batches: list[Sequence[DialogueEvent]]) -> Any:
    """A pass of the chain with the learned extractor ``model`` beside the rules."""
    from pipelines.extract.learned.model import LearnedExtractor

    return swapped_chain(stages, "learned", LearnedExtractor.load(model), turn_batches)


def report(
    turns: int,
    load_s: dict[str, float],
    chain: dict[str, float],
    baseline: dict[str, float],
    header: str,
    compared: tuple[str, dict[str, float]] | None = None,
) -> str:
    """The result tables as text."""
    measured = chain | baseline
    for key in ("", ":cpu"):
        measured[f"chain{key}"] = sum(chain[f"{stage}{key}"] for stage in STAGES)
    rows = [
        ("baseline: spaCy tokenizer only", "tokenise"),
        ("baseline: full spaCy nlp.pipe", "spacy"),
        *((stage, stage) for stage in STAGES),
        ("parse + extract + encode", "chain"),
    ]
    lines = [header, "", f"{'model load':<34}{'seconds':>10}"]
    lines += [f"{name:<34}{seconds:>10.2f}" for name, seconds in load_s.items()]
    lines += ["", f"{'stage':<34}{'turns/s':>10}{'ms/turn':>10}{'turns/CPU-s':>13}{'share':>8}"]
    for name, key in rows:
        wall, cpu = measured[key], measured[f"{key}:cpu"]
        share = f"{wall / measured['chain']:>8.0%}" if key in (*STAGES, "chain") else ""
        lines.append(
            f"{name:<34}{turns / wall:>10.0f}{wall / turns * 1e3:>10.2f}{turns / cpu:>13.0f}{share}"
        )
    if compared is not None:
        name, other = compared
        wall = sum(other[stage] for stage in STAGES)
        cpu = sum(other[f"{stage}:cpu"] for stage in STAGES)
        extract = f"extract {turns / other['extract']:.0f} turns/s"
        lines.append(
            f"{'chain with ' + name:<34}{turns / wall:>10.0f}{wall / turns * 1e3:>10.2f}"
            f"{turns / cpu:>13.0f}  ({extract})"
        )
    facts, chain_speed = int(chain["facts"]), turns / measured["chain"]
    lines += [
        "",
        f"encode: {facts} facts from {turns} turns, {facts / chain['encode']:.0f} facts/s",
        f"chain: {chain_speed:.0f} turns/s (wall clock) against a target of {TARGET_TURNS_PER_S}: "
        + ("MET" if chain_speed >= TARGET_TURNS_PER_S else "NOT MET"),
    ]
    return "\n".join(lines)


def worker(options: argparse.Namespace, start: Any, results: Any) -> None:
    """One worker process: load the stages, wait for the others, time the chain.

    Puts (turns, wall seconds, CPU seconds) of ``options.repeat`` passes after a
    warm-up pass on ``results``: the same work one Faust/Flink worker per core does.
    """
    import flair
    import torch

    flair.logger.setLevel(logging.WARNING)
    torch.set_num_threads(options.torch_threads)
    turns = load_turns(options.turns_file)
    stages = Stages(options.transe_dir)
    turn_batches = batches(turns, options.batch)
    stages.chain(turn_batches)
    start.wait()
    wall, cpu = now()
    for _ in range(options.repeat):
        stages.chain(turn_batches)
    end = now()
    results.put((len(turns) * options.repeat, end[0] - wall, end[1] - cpu))


def workers_report(options: argparse.Namespace) -> str:
    """Turns/s of ``options.workers`` processes running the chain at once (one per core)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # no forked torch/OpenMP state
    start = context.Barrier(options.workers)
    results = context.Queue()
    processes = [
        context.Process(target=worker, args=(options, start, results))
        for _ in range(options.workers)
    ]
    for process in processes:
        process.start()
    done = [results.get() for _ in processes]
    for process in processes:
        process.join()
    turns = sum(n for n, _, _ in done)
    wall = max(w for _, w, _ in done)
    lines = [f"{options.workers} worker processes, {options.repeat} passes each after a warm-up:"]
    lines += [
        f"  worker {i}: {n / w:.0f} turns/s, {n / c:.0f} turns/CPU-s"
        for i, (n, w, c) in enumerate(done)
    ]
    lines.append(
        f"parse + extract + encode, all workers: {turns / wall:.0f} turns/s (wall clock) "
        f"against a target of {TARGET_TURNS_PER_S}"
    )
    return "\n".join(lines)


def main() -> None:
    """Parse the arguments, run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns-file", type=Path, default=SAMPLE)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=DEFAULT_TORCH_THREADS)
    parser.add_argument("--transe-dir", type=Path, default=None, help="default: fallback vectors")
    parser.add_argument("--compare-ner", type=Path, default=None, help="another NER model file")
    parser.add_argument(
        "--workers", type=int, default=0, help="also run the chain in N processes at once"
    )
    parser.add_argument(
        "--learned",
        type=Path,
        nargs="?",
        const=LEARNED_MODEL,
        default=None,
        help="also time the chain with this learned extractor (default: the packaged model)",
    )
    args = parser.parse_args()

    import flair
    import torch

    flair.logger.setLevel(logging.WARNING)  # set at its import; hides a vocabulary dump
    torch.set_num_threads(args.torch_threads)
    turns = load_turns(args.turns_file)
    load_before = os.getloadavg()[0]
    stages = Stages(args.transe_dir)
    turn_batches = batches(turns, args.batch)
    runs = [lambda: stages.chain(turn_batches)]
    if args.compare_ner is not None and args.learned is not None:
        parser.error("--compare-ner and --learned each take the one comparison column")
    if args.compare_ner is not None:
        runs.append(compared_chain(stages, args.compare_ner, turn_batches))
    if args.learned is not None:
        runs.append(learned_chain(stages, args.learned, turn_batches))
    chain, *others = median_runs(runs, args.repeat)
    texts = [turn.text for turn in turns]
    [baseline] = median_runs([lambda: stages.baselines(texts)], args.repeat)
    header = (
        f"{len(turns)} turns from {args.turns_file.name} in batches of {args.batch}; "
        f"median of {args.repeat} passes; torch threads {args.torch_threads}; "
        f"{os.cpu_count()} CPUs, 1-min load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    compared_name = (
        f"NER {args.compare_ner.name}" if args.compare_ner else f"learned {args.learned.name}"
    )
    compared = (compared_name, others[0]) if others else None
    print(report(len(turns), stages.load_s, chain, baseline, header, compared))
    if args.workers:
        print("\n" + workers_report(args))


if __name__ == "__main__":
    main()
