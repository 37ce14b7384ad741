"""``bench_longmemeval.py --hints``: does the hint pushed for a question turn hold its evidence?

Each question is asked as the user's next turn: the haystack's last session
goes on with one more user turn (the question, at the question's date). Per
question, against the stores of the bench:

1. the haystack runs through the real ingest pipeline (``run_batch``) once per
   haystack and its operations through the three writers; the user's state
   after it is kept as a snapshot;
2. the question turn runs through the same pipeline from that snapshot, so the
   retrieval trigger (``pipelines/triggers`` inside ``IngestPipeline``)
   decides it with the session's real history, and the turn's own operations
   are applied before any recall, as the sink applies a batch first;
3. when the turn's operations end with ``request_hint``, the sink's own
   ``HintComposer`` (jobs/sink/hints.py) composes the hint from that operation
   (claim in Redis, ``MemoryService.recall`` at k = ``MEMSTREAM_HINTS__K``);
   "always recall" composes one through the same composer for every question
   turn, from a request routed as the pipeline routes one.

A recall set's questions share their conversation's haystack; here each
question gets it ingested afresh (under its own user), so no question turn's
writes are in the stores when another is asked. That costs an ingest per
question: use ``--limit`` on the recall sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import redis
from hint_scoring import POLICIES, HintTally, wanted_evidence  # benchmarks/ sibling
from longmemeval_data import Question, events, haystack_key, records, turn_of

from connectors.redis_hints import HintClaims
from jobs.ingest.stages import run_batch
from jobs.sink.hints import HintComposer, Requested
from memstream.settings import get_settings
from pipelines.ingest import IngestResult, SourceRecord
from pipelines.review.state import UserMemoryState
from pipelines.route import RequestHint, route
from schemas.events import DialogueEvent, Role
from schemas.hints import HintRequest, MemoryHint
from schemas.ids import hint_id
from schemas.lineage import SourceLineage
from schemas.ops import MemoryOperation, OpType
from schemas.topics import DIALOGUE_EVENTS

if TYPE_CHECKING:
    from bench_longmemeval import Bench

ASK_TURN_ID = "ask"  # the question turn's turn id: never an evidence turn's


def question_event(
    question: Question, tenant_id: str, *, new_session: bool = False
) -> DialogueEvent:
    """The question as the next user turn of the haystack's last session (or of a new one)."""
    last = question.turns[-1]
    index = max(t.index for t in question.turns if t.session_id == last.session_id) + 1
    return DialogueEvent(
        event_id=f"lme-{question.question_id}-{ASK_TURN_ID}",
        tenant_id=tenant_id,
        user_id=question.question_id,
        session_id=f"{last.session_id}-{ASK_TURN_ID}" if new_session else last.session_id,
        turn_index=0 if new_session else index,
        turn_id=ASK_TURN_ID,
        role=Role.USER,
        text=question.question,
        ts=max(question.asked_at, last.at + timedelta(seconds=1)),
    )


def fired_user_turns(results: Sequence[IngestResult]) -> tuple[int, int]:
    """(user turns decided, how many fired) among ``results``."""
    decided = [r.trigger for r in results if r.trigger is not None]
    users = [d for d in decided if d.reason.value != "not_user"]
    return len(users), sum(d.triggered for d in users)


@dataclass
class _Held:
    key: tuple[object, ...]
    owner: Question
    snapshot: dict[str, Any]
    offsets: int  # records of the haystack: the question turn's offset


class HintRun:
    """Runs the question turns of a bench and tallies the hints (replaces ``Bench.run``)."""

    def __init__(self, bench: Bench, tenant_id: str, *, new_session: bool = False) -> None:
        """``new_session``: ask each question as the first turn of a session of its own."""
        settings = get_settings()
        self.bench, self.tenant_id, self.new_session = bench, tenant_id, new_session
        claims = HintClaims(
            redis.Redis.from_url(settings.redis.url, decode_responses=True),
            namespace=bench.namespace,
            ttl=settings.hints.claim_ttl,
        )
        self.k = settings.hints.k
        self.composer = HintComposer(lambda: bench.service, claims, k=self.k)
        self.tally = HintTally()
        self._held: _Held | None = None

    def run(self, question: Question) -> None:
        """Ingest the haystack (once), ask the question as the next turn, score its hints."""
        bench = self.bench
        bench.clock.now = question.asked_at
        held = self._haystack(question)
        ask = question_event(question, self.tenant_id, new_session=self.new_session)
        # After the haystack's offsets: the review skips an offset it has seen.
        record = SourceRecord(
            DIALOGUE_EVENTS, 0, held.offsets, ask.key.encode(), ask.model_dump_json().encode()
        )
        batch = run_batch(
            bench.pipeline, [record], lambda _key: UserMemoryState.restore(held.snapshot)
        )
        result = batch.results[0]
        if result.dead_letter is not None:
            raise RuntimeError(f"question turn dead-lettered: {result.dead_letter}")
        bench.clock.now = ask.ts
        bench.apply(result.ops)  # the turn's own writes come first, as in the sink
        requests = [op for op in result.ops if op.op_type is OpType.REQUEST_HINT]
        fired = bool(requests)
        hint = self._compose(requests[0], held.offsets) if fired else None
        always = hint if hint is not None else self._compose(self._always(ask), held.offsets)
        decision = result.trigger
        evidence = wanted_evidence(question.question_type, *question.evidence_by_recency())
        self.tally.add_question(
            question.question_type,
            fired=fired,
            hint_turns=_turns(hint),
            always_turns=_turns(always),
            evidence=evidence,
            signals=[s.name.value for s in decision.signals] if decision else (),
        )
        self.tally.add_user_turns(*fired_user_turns([result]))

    def _haystack(self, question: Question) -> _Held:
        # One haystack per question, also where a recall set's questions share
        # one: an earlier question turn's writes (its episode) would otherwise
        # sit in the stores, and a hint could recall them.
        key = (question.question_id, *haystack_key(question))
        if self._held is not None and self._held.key == key:
            return self._held
        self._erase()
        bench = self.bench
        dialogue = records(events(question, self.tenant_id))
        batch = run_batch(bench.pipeline, dialogue, lambda _key: None)
        ops = [op for result in batch.results for op in result.ops]
        bench.stats.dead_letters += sum(r.dead_letter is not None for r in batch.results)
        bench.stats.ops.update(op.op_type.value for op in ops)
        bench.stats.turns += len(question.turns)
        # A hint a haystack turn requested is not scored: it goes nowhere, as
        # replayed history's requests would (the question turn is what is asked).
        bench.apply([op for op in ops if op.op_type is not OpType.REQUEST_HINT])
        self.tally.add_user_turns(*fired_user_turns(batch.results))
        state = batch.states[question_event(question, self.tenant_id).key]
        self._held = _Held(key, question, state.snapshot(), len(dialogue))
        return self._held

    def _compose(self, op: MemoryOperation, offset: int) -> MemoryHint:
        hints = self.composer.compose([Requested(op, 0, offset)])
        if len(hints) != 1:
            raise RuntimeError(f"the composer made {len(hints)} hints of one request")
        return hints[0]

    def _always(self, ask: DialogueEvent) -> MemoryOperation:
        """A request for a turn the trigger let pass, routed as the pipeline routes one."""
        request = HintRequest(
            hint_id=hint_id(ask.tenant_id, ask.user_id, f"{ask.event_id}-always"),
            event_id=ask.event_id,
            session_id=ask.session_id,
            turn_index=ask.turn_index,
            query=ask.text,
            ts=ask.ts,
            reason="implicit",
        )
        lineage = SourceLineage(topic=DIALOGUE_EVENTS, partition=0, offset=0, event_id=ask.event_id)
        (op,) = route(
            [RequestHint(request)],
            tenant_id=ask.tenant_id,
            user_id=ask.user_id,
            lineage=lineage,
            at=ask.ts,
            first_index=0,
        )
        return op

    def _erase(self) -> None:
        if self._held is not None:
            from bench_longmemeval import erase_op

            self.bench.apply([erase_op(self._held.owner)])
            self._held = None

    def close(self) -> None:
        """Erase the last haystack (the bench's own close drops the rest)."""
        self._erase()


def _turns(hint: MemoryHint | None) -> list[str | None]:
    if hint is None:
        return []
    return [turn_of(h) for h in hint.hits]


def print_hint_tables(tally: HintTally, k: int) -> None:
    """The hint table per question type, the cost, and the signals on question turns."""
    print(
        f"\nhints holding the evidence (k={k}): share of question turns, asked as the next"
        " user turn, whose pushed hint recalls an evidence turn\n"
    )
    header = "".join(f"{p:>12}" for p in POLICIES)
    print(f"{'question type':<26}{'n':>4}{'fired':>8}{header}")
    for question_type in [*tally.types(), None]:
        cells = "".join(f"{tally.share(p, question_type):>12.3f}" for p in POLICIES)
        print(
            f"{question_type or 'overall':<26}{tally.count(question_type):>4}"
            f"{tally.fire_share(question_type):>8.3f}{cells}"
        )
    print(
        f"\ntrigger keeps {tally.captured():.3f} of always-recall's evidence;"
        f" cost: {tally.user_turns_fired} of {tally.user_turns} user turns ingested fire"
        f" ({tally.cost():.3f})"
    )
    print(f"signals on question turns (fired or not): {dict(tally.signals.most_common())}")
