"""Retrieval quality on LongMemEval (oracle split): memstream recall beside BM25 and MiniLM.

For each sampled question, in one run against the real services:

1. its haystack sessions become the dialogue events of ONE user (user id =
   question id), in time order, each carrying ``turn_id = {session}:{turn index}``;
   the questions of one recall-set conversation share one haystack and date,
   so it is ingested once, under the first of them;
2. they run through the real ingest pipeline (``jobs.ingest.stages.load_pipeline`` /
   ``run_batch``: parse, extract, encode, review, route) and the operations go
   through the real Redis, Chroma and Neo4j writers, in a private namespace;
3. ``MemoryService.recall(tenant, user, question, k=10)`` at the question's date
   ranks the memories; each result names its turn through its lineage (a fact
   standing for the turn it ranked by, through its source's lineage);
4. the baselines rank the same raw turns: Okapi BM25 (rank-bm25 defaults, lower-cased
   word tokens) and MiniLM cosine (the all-MiniLM-L6-v2 the pipeline embeds with,
   which reads a turn's first 256 tokens);
5. the user is erased through the writers (ERASE_USER) when the next haystack
   comes and at the end, so nothing is left.

Evidence = the turns flagged ``has_answer``. Metrics (benchmarks/longmemeval_scoring.py):
``any@k`` is 1 when at least one evidence turn is among the top k results, the
table's mean is the share of questions; ``recovered@k`` is the fraction of a
question's evidence turns among the top k results, averaged over questions.
memstream's k results are memories (several may come from one turn, and it may
return fewer than k); the baselines' are turns. ``chance`` is the exact
expectation for turns in random order: an oracle haystack holds only the
evidence sessions (about 22 turns), so even chance finds evidence often. The
summary also counts the evidence turns the pipeline made any memory from: what
the extraction kept bounds what recall can return.

Knowledge-update ordering (``latest-first@10``), on the knowledge-update
questions whose evidence spans sessions of different dates: the share of them
where a turn of the most recently dated evidence session is in the top 10 and
ranks above every evidence turn of an earlier session (an earlier one outside
the top 10 counts as below). ``both-in@10`` is the share where the top 10 holds
latest and outdated evidence at once. For memstream, a superseded version is
closed by the review and not current at the question's date, so it is not
recalled at all: ordering is decided by the version chain, not by rank.

Questions without evidence and abstention questions (``_abs``) are not scored.
The data is read from ``--data`` (never copied into this repository).

Run (services from ``memstream infra up``)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 FLAIR_CACHE_ROOT=~/.cache/memstream/flair \
    PYSTOW_HOME=~/.cache/memstream/pystow \
    python benchmarks/bench_longmemeval.py --per-type 20 --seed 7

Wall time is dominated by the NLP stages over the haystack turns (about 22 per
question, 1,200 characters on average): a few seconds per question on an idle
2-core machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt
from longmemeval_data import (
    DEFAULT_DATA,
    Question,
    by_haystack,
    events,
    haystack_key,
    load_questions,
    records,
    sample,
    turn_of,
    with_distractors,
)
from longmemeval_scoring import Tally, bm25_ranking, cosine_ranking
from recallset_data import load_recallset
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from connectors.chroma_memory import ChromaMemory
from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisMemory
from jobs.ingest.stages import load_pipeline, run_batch
from jobs.serve.memory_service import KafkaActionPublisher, MemoryService, MemoryStores
from memstream.settings import get_settings
from pipelines.encode import Encoder
from pipelines.ingest import IngestPipeline
from schemas.lineage import SourceLineage
from schemas.memory import Tier
from schemas.ops import MemoryOperation, OpType
from schemas.topics import USER_ACTIONS

TENANT = "lme"
K = 10  # LongMemEval's retrieval evaluation reports recall@5 and @10
KS = (5, K)
SYSTEMS = ("memstream", "bm25", "minilm", "rrf")
# Reciprocal-rank fusion constant (Cormack et al. 2009's 60).
RRF_K = 60
# Memories are made from these operations; their lineage names the source turn.
MEMORY_OPS = (OpType.UPSERT_FACT, OpType.ADD_PENDING)


class Clock:
    """The service's and writers' "now": each question's own date."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)  # replaced by each question's date before use

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Stats:
    """What the run did, for the summary under the tables."""

    questions: int = 0
    turns: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    dead_letters: int = 0
    results: list[int] = field(default_factory=list)
    evidence_turns: int = 0
    evidence_memorised: int = 0  # evidence turns the pipeline made at least one memory from
    seconds: dict[str, float] = field(default_factory=dict)


class Bench:
    """The stores, the pipeline and the service of one run (private namespace)."""

    def __init__(self, pipeline: IngestPipeline, encoder: Encoder, chroma_dir: str) -> None:
        settings = get_settings()
        self.pipeline, self.encoder, self.clock = pipeline, encoder, Clock()
        self.namespace = f"bench-lme-{uuid.uuid4().hex[:8]}"
        password = settings.neo4j.password.get_secret_value()
        auth = (settings.neo4j.user, password) if password else None
        ns, clock = self.namespace, self.clock
        # No latency budget: a slow write on the busy machine must not raise backpressure.
        budget = math.inf
        self.redis = RedisMemory.from_url(
            settings.redis.url, namespace=ns, clock=clock, latency_budget_s=budget
        )
        self.chroma = ChromaMemory.open(
            chroma_dir, namespace=ns, clock=clock, latency_budget_s=budget
        )
        self.neo4j = Neo4jMemory.connect(
            settings.neo4j.uri, auth, namespace=ns, clock=clock, latency_budget_s=budget
        )
        self.neo4j.setup()
        stores = MemoryStores(
            redis=self.redis,
            chroma=self.chroma,
            neo4j=self.neo4j,
            embedder=encoder,
            publisher=KafkaActionPublisher(settings.kafka.bootstrap),  # recall publishes nothing
        )
        self.service = MemoryService(stores=stores, clock=self.clock)
        self.stats = Stats()
        # --dump: one JSON line per question with each system's top k, for reading misses.
        self.dump: TextIO | None = None
        # The haystack in the stores: its key, the question whose user holds it, its ops.
        self._held: tuple[tuple[object, ...], Question, list[MemoryOperation]] | None = None
        # The raw turns' MiniLM vectors of the held haystack: a recall set asks up to
        # 30 questions of one conversation, and re-embedding its turns for each was
        # nine tenths of a run (533 of 643 s for friends_blind1 on a loaded machine).
        self._turn_vectors: tuple[tuple[str, ...], npt.NDArray[np.float32]] | None = None

    def apply(self, ops: Sequence[MemoryOperation]) -> None:
        """Through the three real writers, as the sink job applies a batch."""
        for sink in (self.redis, self.chroma, self.neo4j):
            sink.write(ops)
            sink.flush()

    def run(self, question: Question, tally: Tally) -> None:
        """Ingest (once per haystack), recall, score against the baselines: one question.

        The questions of one recall-set conversation share its haystack and
        date, so it is ingested once, under the first question's user, and
        erased when the next haystack comes (or at ``close``).
        """
        self.clock.now = question.asked_at
        started = time.perf_counter()
        key = haystack_key(question)
        if self._held is None or self._held[0] != key:
            self._erase_held()
            dialogue = events(question, TENANT)
            batch = run_batch(self.pipeline, records(dialogue), lambda _key: None)
            ops = [op for result in batch.results for op in result.ops]
            self.stats.dead_letters += sum(r.dead_letter is not None for r in batch.results)
            self.stats.ops.update(op.op_type.value for op in ops)
            self.stats.turns += len(question.turns)
            ingested = time.perf_counter()
            self.apply(ops)
            self._held = (key, question, ops)
        else:
            ingested = time.perf_counter()
        _, owner, ops = self._held
        written = time.perf_counter()
        hits = self.service.recall(TENANT, owner.question_id, question.question, k=K)
        recalled = time.perf_counter()
        turn_ids = [t.turn_id for t in question.turns]
        texts = [t.text for t in question.turns]
        by_bm25 = bm25_ranking(question.question, texts)
        asked = np.asarray(self.encoder.embed_texts([question.question]), np.float32)[0]
        by_minilm = cosine_ranking(asked, self._vectors_of(tuple(turn_ids), texts))
        fused: dict[int, float] = {}
        for ranking in (by_bm25, by_minilm):
            for place, i in enumerate(ranking):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + place + 1)
        rankings: dict[str, list[str | None]] = {
            "memstream": [turn_of(h) for h in hits],
            "bm25": [turn_ids[i] for i in by_bm25],
            "minilm": [turn_ids[i] for i in by_minilm],
            "rrf": [turn_ids[i] for i in sorted(fused, key=lambda i: (-fused[i], i))],
        }
        baselines = time.perf_counter()
        evidence = {t.turn_id for t in question.evidence}
        latest, outdated = question.evidence_by_recency()
        tally.add_chance(question.question_type, len(question.turns), len(evidence))
        for system, ranked in rankings.items():
            tally.add_recall(system, question.question_type, ranked, evidence)
            if question.question_type == "knowledge-update" and latest and outdated:
                tally.add_update_order(system, ranked, latest, outdated, K)
        if self.dump is not None:
            texts_of = dict(zip(turn_ids, texts, strict=True))
            line = {
                "question_id": question.question_id,
                "type": question.question_type,
                "question": question.question,
                "evidence": sorted(evidence),
                "top": {name: ranked[:K] for name, ranked in rankings.items()},
                "memstream": [f"{h.hit_kind}: {h.statement}" for h in hits],
                "evidence_text": [texts_of[t] for t in sorted(evidence) if t in texts_of],
            }
            self.dump.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.stats.questions += 1
        self.stats.results.append(len(hits))
        memorised = {
            op.record.lineage.turn_id for op in ops if op.op_type in MEMORY_OPS and op.record
        }
        self.stats.evidence_turns += len(evidence)
        self.stats.evidence_memorised += len(evidence & memorised)
        for phase, took in (
            ("ingest (parse..route)", ingested - started),
            ("store writes", written - ingested),
            ("memstream recall", recalled - written),
            ("baselines (bm25 + minilm)", baselines - recalled),
        ):
            self._add_time(phase, took)

    def _vectors_of(self, key: tuple[str, ...], texts: list[str]) -> npt.NDArray[np.float32]:
        """The raw turns' vectors, embedded once per haystack."""
        if self._turn_vectors is None or self._turn_vectors[0] != key:
            vectors = np.asarray(self.encoder.embed_texts(texts), np.float32)
            self._turn_vectors = (key, vectors)
        return self._turn_vectors[1]

    def _add_time(self, phase: str, took: float) -> None:
        self.stats.seconds[phase] = self.stats.seconds.get(phase, 0.0) + took

    def _erase_held(self) -> None:
        """Erase the user holding the current haystack, through the writers."""
        if self._held is not None:
            started = time.perf_counter()
            self.apply([erase_op(self._held[1])])
            self._held = None
            self._add_time("erase", time.perf_counter() - started)

    def close(self) -> None:
        """Erase the last haystack, drop what the run left in Redis, close Neo4j."""
        self._erase_held()
        leftovers = list(self.redis.client.scan_iter(match=f"{self.namespace}:*", count=500))
        if leftovers:
            self.redis.client.delete(*leftovers)
        self.neo4j.close()


def erase_op(question: Question) -> MemoryOperation:
    """The operation a forget_user action routes to: erase the user from every tier."""
    event_id = f"lme-forget-{question.question_id}"
    return MemoryOperation(
        op_id=event_id,
        op_type=OpType.ERASE_USER,
        tenant_id=TENANT,
        user_id=question.question_id,
        tiers=list(Tier),
        lineage=SourceLineage(topic=USER_ACTIONS, partition=0, offset=0, event_id=event_id),
        at=question.asked_at,
    )


def print_tables(tally: Tally, stats: Stats, wall_s: float) -> None:
    """The recall tables, the knowledge-update ordering table and the run summary."""
    types = tally.types()
    systems = (*SYSTEMS, "chance")
    for metric, title in (
        ("any", "any-hit@k: share of questions with >= 1 evidence turn in the top k"),
        (
            "all",
            "recall_all@k (LongMemEval): share of questions with every evidence turn in the top k",
        ),
        ("recovered", "recovered@k: mean fraction of a question's evidence turns in the top k"),
    ):
        print(f"\n{title}\n")
        header = "".join(f"{f'{s}@{k}':>14}" for s in systems for k in KS)
        print(f"{'question type':<26}{'n':>4}{header}")
        for question_type in [*types, None]:
            n = tally.count("bm25", f"{metric}@{K}", question_type)
            cells = "".join(
                f"{tally.mean(s, f'{metric}@{k}', question_type):>14.3f}"
                for s in systems
                for k in KS
            )
            print(f"{question_type or 'overall':<26}{n:>4}{cells}")
    print("\nNDCG@10 (LongMemEval, binary relevance over evidence turns)\n")
    print(f"{'question type':<26}{'n':>4}" + "".join(f"{s:>14}" for s in SYSTEMS))
    for question_type in [*types, None]:
        n = tally.count("bm25", "ndcg@10", question_type)
        cells = "".join(f"{tally.mean(s, 'ndcg@10', question_type):>14.3f}" for s in SYSTEMS)
        print(f"{question_type or 'overall':<26}{n:>4}{cells}")
    n = tally.count("bm25", f"latest-first@{K}")
    print(f"\nknowledge-update ordering over {n} questions with evidence in sessions of 2+ dates\n")
    print(f"{'system':<12}{f'latest-first@{K}':>18}{f'both-in@{K}':>14}")
    for system in SYSTEMS:
        first = tally.mean(system, f"latest-first@{K}")
        both = tally.mean(system, f"both-in@{K}")
        print(f"{system:<12}{first:>18.3f}{both:>14.3f}")
    print(
        f"\n{stats.questions} questions, {stats.turns} turns ingested,"
        f" {stats.dead_letters} dead letters; ops: {dict(sorted(stats.ops.items()))}"
    )
    results = stats.results
    print(
        f"memstream results per question: mean {sum(results) / max(len(results), 1):.1f},"
        f" {sum(r < K for r in results)} question(s) with fewer than {K}"
    )
    print(
        f"evidence turns the pipeline made a memory (fact or pending item) from:"
        f" {stats.evidence_memorised} of {stats.evidence_turns}"
        f" (memstream's ceiling for recovered@k)"
    )
    for phase, took in stats.seconds.items():
        print(f"  {phase:<28}{took:>8.1f} s")
    print(f"wall time {wall_s:.0f} s")


def _open_bench(pipeline: IngestPipeline, chroma_dir: str) -> Bench:
    """The bench on the local services, or an exit that says how to start them."""
    import redis
    from neo4j.exceptions import ServiceUnavailable

    try:
        return Bench(pipeline, Encoder.load(), chroma_dir)
    except (redis.ConnectionError, ServiceUnavailable) as exc:
        raise SystemExit(
            f"a store is unavailable ({type(exc).__name__}): start the local services "
            "with `memstream infra up`, then run this again"
        ) from None


def main() -> None:
    """Parse the arguments, run every sampled question, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="longmemeval_oracle.json")
    parser.add_argument("--per-type", type=int, default=None, help="questions per type")
    parser.add_argument(
        "--limit", type=int, default=None, help="questions in all (after --per-type)"
    )
    parser.add_argument("--seed", type=int, default=7, help="sampling seed")
    parser.add_argument(
        "--types", nargs="+", default=(), metavar="TYPE", help="only these question types"
    )
    parser.add_argument(
        "--distractors",
        type=int,
        default=0,
        help="pad each haystack with N sessions of other questions (about 500 turns at 40)",
    )
    parser.add_argument(
        "--recallset",
        type=Path,
        default=None,
        help="score a blind recall set of benchmarks/recallset/ instead of LongMemEval",
    )
    parser.add_argument(
        "--hints",
        action="store_true",
        help="score the hints pushed when each question is asked as the next user turn"
        f" (benchmarks/hint_quality.py; LongMemEval types default to {' and '.join(HINT_TYPES)})",
    )
    parser.add_argument(
        "--hint-session",
        choices=("last", "new"),
        default="last",
        help="with --hints: ask in the haystack's last session, or as a new session's first turn",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        metavar="FILE",
        help="write each question's top-k of every system as JSON lines, to read the misses",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    pool = load_recallset(args.recallset) if args.recallset else load_questions(args.data)
    types = args.types or (HINT_TYPES if args.hints and not args.recallset else ())
    wanted = [q for q in pool if q.question_type in types] if types else pool
    questions = sample(wanted, per_type=args.per_type, limit=args.limit, seed=args.seed)
    # Distractor sessions come from the whole pool, not only the sampled questions.
    if args.distractors:
        padded = {q.question_id: q for q in with_distractors(pool, args.distractors, args.seed)}
        questions = [padded[q.question_id] for q in questions]
    questions = by_haystack(questions)
    by_type = Counter(q.question_type for q in questions)
    print(f"{len(questions)} questions: {dict(sorted(by_type.items()))}")
    # Flair configures its logger at import (INFO, to stdout) and then logs its
    # whole character vocabulary when the NER model loads: quiet it after import.
    import flair  # noqa: F401

    logging.getLogger("flair").setLevel(logging.WARNING)
    pipeline = load_pipeline(get_settings())
    tally = Tally(ks=KS)
    with tempfile.TemporaryDirectory(prefix="bench-lme-") as chroma_dir:
        bench = _open_bench(pipeline, chroma_dir)
        if args.hints:
            _run_hints(bench, questions, started, new_session=args.hint_session == "new")
            return
        bench.dump = args.dump.open("w", encoding="utf-8") if args.dump else None
        try:
            with Progress(
                TextColumn("{task.description:<28}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            ) as progress:
                task = progress.add_task("questions", total=len(questions))
                for question in questions:
                    progress.update(task, description=question.question_type)
                    bench.run(question, tally)
                    progress.advance(task)
        finally:
            bench.close()
            if bench.dump is not None:
                bench.dump.close()
    print_tables(tally, bench.stats, time.perf_counter() - started)


# The questions where a later turn needs an earlier fact (issue 16, item 4).
HINT_TYPES = ("multi-session", "knowledge-update")


def _run_hints(
    bench: Bench, questions: Sequence[Question], started: float, *, new_session: bool
) -> None:
    """The ``--hints`` run: each question asked as the next user turn, its hints scored."""
    from hint_quality import HintRun, print_hint_tables

    hints = HintRun(bench, TENANT, new_session=new_session)
    try:
        with Progress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as progress:
            task = progress.add_task("question turns", total=len(questions))
            for question in questions:
                progress.update(task, description=question.question_type)
                hints.run(question)
                progress.advance(task)
    finally:
        hints.close()
        bench.close()
    print_hint_tables(hints.tally, hints.k)
    print(
        f"\n{len(questions)} questions, {bench.stats.turns} haystack turns ingested,"
        f" {bench.stats.dead_letters} dead letters; wall time {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
