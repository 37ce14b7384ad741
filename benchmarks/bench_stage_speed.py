"""Speed of the ingest stages: parse, extract, encode, and the three together.

    HF_HUB_OFFLINE=1 FLAIR_CACHE_ROOT=~/.cache/memstream/flair \
    ~/.cache/memstream/venv/bin/python benchmarks/bench_stage_speed.py [--repeat 3]

Input: the committed sample stream (data/sample/dialogue.events.jsonl), in
batches as a worker would take them from Kafka. Prints the model load times,
then turns/s of each stage alone and of the chain parse -> extract -> encode,
with each stage's share of the chain's time, beside two baselines measured in
the same run over the same turns: spaCy's tokenizer alone, and the full spaCy
pipeline the parse stage runs (``nlp.pipe``). Timings are the median of
``--repeat`` passes after one warm-up pass. The target (issue 3) is >= 300
turns/s for the chain on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from schemas.events import DialogueEvent

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "dialogue.events.jsonl"
TARGET_TURNS_PER_S = 300  # issue 3, "speed"
# Turns per batch: what one Kafka poll hands a worker (the Faust/Flink jobs
# batch at this size); larger batches amortise nlp.pipe and MiniLM better.
DEFAULT_BATCH = 128
# One intra-op torch thread: the deployment runs one worker per core (PyFlink
# parallelism 2 on 2 cores, STACK.md), and on this shared machine 2 threads
# measured 18 MiniLM facts/s against 110 with 1 (threads fight for the cores).
DEFAULT_TORCH_THREADS = 1


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by ``action()`` and its result."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


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
        spent = dict.fromkeys(("parse", "extract", "encode"), 0.0)
        facts_seen = 0
        for batch in turn_batches:
            started = time.perf_counter()
            parsed = self.parser.parse_batch(batch)
            parsed_at = time.perf_counter()
            per_turn = self.extractor.extract_batch(list(zip(batch, parsed, strict=True)))
            extracted_at = time.perf_counter()
            facts = [fact for turn_facts in per_turn for fact in turn_facts]
            self.encoder.encode(facts)
            encoded_at = time.perf_counter()
            spent["parse"] += parsed_at - started
            spent["extract"] += extracted_at - parsed_at
            spent["encode"] += encoded_at - extracted_at
            facts_seen += len(facts)
        spent["facts"] = facts_seen
        return spent

    def baselines(self, texts: list[str]) -> dict[str, float]:
        """Seconds for spaCy's tokenizer alone and its full pipeline over ``texts``."""
        nlp = self.parser.nlp
        tokenise, _ = timed(lambda: list(nlp.tokenizer.pipe(texts)))
        full, _ = timed(lambda: list(nlp.pipe(texts)))
        return {"tokenise": tokenise, "spacy": full}


def median_runs(run: Callable[[], dict[str, float]], repeat: int) -> dict[str, float]:
    """The per-key median of ``repeat`` runs (after one warm-up run)."""
    run()
    results = [run() for _ in range(repeat)]
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def report(
    turns: int,
    load_s: dict[str, float],
    chain: dict[str, float],
    baseline: dict[str, float],
    header: str,
) -> str:
    """The result tables as text."""
    total = chain["parse"] + chain["extract"] + chain["encode"]
    rows = [
        ("baseline: spaCy tokenizer only", baseline["tokenise"], None),
        ("baseline: full spaCy nlp.pipe", baseline["spacy"], None),
        ("parse", chain["parse"], chain["parse"] / total),
        ("extract", chain["extract"], chain["extract"] / total),
        ("encode", chain["encode"], chain["encode"] / total),
        ("parse + extract + encode", total, 1.0),
    ]
    lines = [header, "", f"{'model load':<34}{'seconds':>10}"]
    lines += [f"{name:<34}{seconds:>10.2f}" for name, seconds in load_s.items()]
    lines += ["", f"{'stage':<34}{'turns/s':>10}{'ms/turn':>10}{'share':>8}"]
    for name, seconds, share in rows:
        share_text = f"{share:>8.0%}" if share is not None else f"{'':>8}"
        lines.append(
            f"{name:<34}{turns / seconds:>10.0f}{seconds / turns * 1e3:>10.2f}{share_text}"
        )
    facts = int(chain["facts"])
    lines += [
        "",
        f"encode: {facts} facts from {turns} turns, {facts / chain['encode']:.0f} facts/s",
        f"chain: {turns / total:.0f} turns/s against a target of {TARGET_TURNS_PER_S}: "
        + ("MET" if turns / total >= TARGET_TURNS_PER_S else "NOT MET"),
    ]
    return "\n".join(lines)


def main() -> None:
    """Parse the arguments, run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns-file", type=Path, default=SAMPLE)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=DEFAULT_TORCH_THREADS)
    parser.add_argument("--transe-dir", type=Path, default=None, help="default: fallback vectors")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.torch_threads)
    turns = load_turns(args.turns_file)
    load_before = os.getloadavg()[0]
    stages = Stages(args.transe_dir)
    turn_batches = batches(turns, args.batch)
    chain = median_runs(lambda: stages.chain(turn_batches), args.repeat)
    texts = [turn.text for turn in turns]
    baseline = median_runs(lambda: stages.baselines(texts), args.repeat)
    header = (
        f"{len(turns)} turns from {args.turns_file.name} in batches of {args.batch}; "
        f"median of {args.repeat} passes; torch threads {args.torch_threads}; "
        f"{os.cpu_count()} CPUs, 1-min load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(report(len(turns), stages.load_s, chain, baseline, header))


if __name__ == "__main__":
    main()
