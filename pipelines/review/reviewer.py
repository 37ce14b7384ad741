"""The review stage: one entry point per input kind over a user's keyed state.

Stateful in the Bytewax style: the caller holds a ``UserMemoryState`` per
``tenant:user`` (a Faust table value, Flink keyed state or a dict in a test),
passes it in with each event and stores it back (``state.snapshot()``).
Each fact goes fact check → timeliness → HITL gate → conflict → promotion,
and route turns the decisions into operations.

Determinism: with the default clock (the event's own time) the same event on
the same state gives the same operations; an event at or below the last
applied offset of its (topic, partition) gives none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import NamedTuple

from pipelines.behaviour import BehaviourItem
from pipelines.review.commit import candidate, commit
from pipelines.review.config import ReviewConfig
from pipelines.review.gate import Gate, hitl
from pipelines.review.observed import review_observed
from pipelines.review.pending import hold, resolve_action, reviewer_of
from pipelines.review.rules import Contradiction, ReviewRules, attribute, load_rules
from pipelines.review.state import PendingCause, UserMemoryState, same_statement
from pipelines.review.timeliness import class_of, day_of_refined, days_named, expiry
from pipelines.route import AppendTurn, Decision, EraseUser, route
from pipelines.vocabulary import PredicateSpec, default_vocabulary
from schemas.events import ActionType, CrmWebhook, DialogueEvent, InputEvent, UserAction
from schemas.facts import ExtractedFact
from schemas.ids import chain_id
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryRecord, Polarity, ReviewOutcome, ReviewStage
from schemas.ops import MemoryOperation, WorkingTurn

Clock = Callable[[], datetime]

_WORD = re.compile(r"\w+")


class _Late(NamedTuple):
    """A statement older than its chain's current value: a repeat of what held then, or not."""

    repeat: bool
    reason: str


class Reviewer:
    """Three-stage write review, HITL gate, promotion and route."""

    def __init__(
        self,
        config: ReviewConfig | None = None,
        rules: ReviewRules | None = None,
        clock: Clock | None = None,
    ) -> None:
        """``clock`` gives "now"; None (the default) uses each event's own time."""
        self.config = config or ReviewConfig()
        self.rules = rules or load_rules()
        # The packaged vocabulary: chains, types and identities are one per process
        # (pipelines/review/state.py compares surface forms with it too).
        self.vocabulary = default_vocabulary()
        self._clock = clock

    def new_state(self) -> UserMemoryState:
        """An empty state sized by this reviewer's caps."""
        return UserMemoryState(
            max_chains=self.config.max_chains, max_pending=self.config.max_pending
        )

    # -- entry points --------------------------------------------------------
    def apply(
        self,
        state: UserMemoryState,
        event: InputEvent,
        lineage: SourceLineage,
        facts: Sequence[ExtractedFact] = (),
        encodings: Sequence[Encoding | None] | None = None,
        *,
        intent: str | None = None,
        observed: Sequence[tuple[BehaviourItem, Encoding | None]] = (),
        clamps: Sequence[str] = (),
    ) -> list[MemoryOperation]:
        """Dispatch any input event to its entry point.

        ``intent``: a turn's, if parsed; ``observed`` and ``clamps``: an action's
        behaviour items and what the window clamped (``on_action``).
        """
        match event:
            case DialogueEvent():
                return self.on_dialogue(state, event, lineage, facts, encodings, intent=intent)
            case UserAction():
                return self.on_action(
                    state, event, lineage, facts, encodings, observed=observed, clamps=clamps
                )
            case CrmWebhook():
                return self.on_crm(state, event, lineage, facts, encodings)

    def on_dialogue(
        self,
        state: UserMemoryState,
        event: DialogueEvent,
        lineage: SourceLineage,
        facts: Sequence[ExtractedFact] = (),
        encodings: Sequence[Encoding | None] | None = None,
        *,
        intent: str | None = None,
    ) -> list[MemoryOperation]:
        """A dialogue turn: the turn to working memory, then its facts reviewed."""

        def decide(at: datetime) -> list[Decision]:
            turn = WorkingTurn(
                session_id=event.session_id,
                turn_index=event.turn_index,
                role=event.role.value,
                text=event.text,
                intent=intent,
                ts=event.ts,
            )
            return [AppendTurn(turn), *self._review_all(state, facts, encodings, lineage, at)]

        return self._once(state, event, lineage, decide)

    def on_crm(
        self,
        state: UserMemoryState,
        event: CrmWebhook,
        lineage: SourceLineage,
        facts: Sequence[ExtractedFact],
        encodings: Sequence[Encoding | None] | None = None,
    ) -> list[MemoryOperation]:
        """A CRM change: its facts (authoritative) reviewed."""
        return self._once(
            state, event, lineage, lambda at: self._review_all(state, facts, encodings, lineage, at)
        )

    def on_action(
        self,
        state: UserMemoryState,
        event: UserAction,
        lineage: SourceLineage,
        facts: Sequence[ExtractedFact] = (),
        encodings: Sequence[Encoding | None] | None = None,
        *,
        observed: Sequence[tuple[BehaviourItem, Encoding | None]] = (),
        clamps: Sequence[str] = (),
    ) -> list[MemoryOperation]:
        """A user action: confirm/reject a pending item, forget the user, or facts.

        ``observed`` are the behaviour items the action completed, with their
        encodings (``clamps``: what the window clamped of the action); they
        pass the gate as observations (pipelines/review/observed.py).
        """
        reviewer = (
            reviewer_of(event)
            if event.action_type in (ActionType.CONFIRM_MEMORY, ActionType.REJECT_MEMORY)
            else None
        )
        if reviewer is not None:
            # Every operation of a reviewer's decision names the reviewer (the
            # review audit reads it from the resolution's lineage).
            lineage = SourceLineage.model_validate(
                {**lineage.model_dump(), "reviewer_id": reviewer}
            )

        def decide(at: datetime) -> list[Decision]:
            match event.action_type:
                case ActionType.CONFIRM_MEMORY | ActionType.REJECT_MEMORY:
                    return resolve_action(self.config, self.rules, state, event, at)
                case ActionType.FORGET_USER:
                    state.forget()
                    return [EraseUser()]
                case _:
                    decisions = self._review_all(state, facts, encodings, lineage, at)
                    seen = review_observed(self.config, state, observed, lineage, at, clamps)
                    return decisions + seen

        return self._once(state, event, lineage, decide)

    # -- per event -----------------------------------------------------------
    def _once(
        self,
        state: UserMemoryState,
        event: InputEvent,
        lineage: SourceLineage,
        decide: Callable[[datetime], list[Decision]],
    ) -> list[MemoryOperation]:
        if lineage.event_id != event.event_id:
            raise ValueError(f"lineage names {lineage.event_id}, the event is {event.event_id}")
        if state.already_applied(lineage):
            return []  # no state change either: a replay leaves the state as it was
        at = self._clock() if self._clock is not None else event.ts
        before = state.copy(predictive=False)
        try:
            state.expire(at)
            ops = route(
                decide(at), tenant_id=event.tenant_id, user_id=event.user_id, lineage=lineage, at=at
            )
        except Exception:
            # All or nothing: a failing event leaves the state as it was, so the
            # job can dead-letter it and carry on with the next one.
            state.rollback(before)
            raise
        state.mark_applied(lineage)
        return ops

    def _review_all(
        self,
        state: UserMemoryState,
        facts: Sequence[ExtractedFact],
        encodings: Sequence[Encoding | None] | None,
        lineage: SourceLineage,
        at: datetime,
    ) -> list[Decision]:
        encs = [None] * len(facts) if encodings is None else list(encodings)
        if len(encs) != len(facts):
            raise ValueError(f"{len(facts)} facts but {len(encs)} encodings")
        decisions: list[Decision] = []
        named = days_named(facts)
        for fact, encoding in zip(facts, encs, strict=True):
            if fact.event_id != lineage.event_id:
                raise ValueError(f"fact from {fact.event_id} reviewed with {lineage.event_id}")
            day = named.get(class_of(fact))
            decisions += self._review_fact(state, fact, encoding, lineage, at, day)
        return decisions

    # -- per fact ------------------------------------------------------------
    def _review_fact(
        self,
        state: UserMemoryState,
        fact: ExtractedFact,
        encoding: Encoding | None,
        lineage: SourceLineage,
        at: datetime,
        named: date | None = None,
    ) -> list[Decision]:
        fact = self._in_full(state, fact, at)
        invalid = self._spec(fact.subject, fact.predicate).problem(fact.object)
        contradictions = self.rules.contradictions(
            fact.subject, fact.predicate, fact.object, fact.polarity, state.current(at)
        )
        chain = self._chain(fact)
        named = named or day_of_refined(fact, state.heads.get(chain), at)
        late = self._late(state, fact, chain)
        if late is not None and late.repeat:
            state.count("late_repeat")
            return []
        always = (
            (invalid, PendingCause.INVALID_VALUE)
            if invalid is not None
            else (late.reason, PendingCause.LATE)
            if late is not None
            else self._disputed(state, fact, at)
        )
        checked, held = self._fact_check(fact, contradictions, always and always[0])
        expires_at, timely = expiry(self.config, fact, named)
        gate = hitl(self.config, fact, held, always)
        if gate.gate is Gate.SKIP:
            state.count("skipped")
            return []
        if gate.cause is PendingCause.NOT_USER and self._echoes(state, fact, chain, at):
            state.count("agent_echo")
            return []
        if invalid is not None:
            state.count("invalid_value")
        elif late is not None:
            state.count("late_value")
        cand = candidate(
            fact,
            chain,
            at=at,
            expires_at=expires_at,
            review=[checked, timely],
            lineage=lineage,
            encoding=encoding,
        )
        # A correction is a new value by definition, and exact structured
        # fields (time, place, number) make a value exact: neither merges.
        may_merge = not fact.is_update and not fact.fields
        if gate.cause is not None:  # set exactly when the gate says pending
            return hold(
                self.config,
                self.rules,
                state,
                cand,
                gate.cause,
                gate.outcome,
                at,
                may_merge=may_merge,
            )
        closes = [c.head for c in contradictions if c.closes]
        closes += [h for h in self._reversed(state, cand, at) if h not in closes]
        return commit(self.config, state, cand, closes, gate.outcome, may_merge=may_merge, at=at)

    def _in_full(self, state: UserMemoryState, fact: ExtractedFact, at: datetime) -> ExtractedFact:
        """The fact with the one current value it names by part ("my sister" -> "sister ana").

        People name a relative or a pet once and then say "my sister" or
        "Biscuit": stored as said, each became a second family member beside
        the named one. With two current values it could be (two sisters), the
        fact stays as said.
        """
        spec = self._spec(fact.subject, fact.predicate)
        if not spec.named or fact.polarity is not Polarity.AFFIRMED:
            return fact
        held = {
            head.object
            for head in state.current(at)
            if head.subject == fact.subject
            and self._spec(head.subject, head.predicate).name == spec.name
            and head.polarity is Polarity.AFFIRMED
            and spec.names_part_of(fact.object, head.object)
        }
        if len(held) != 1:
            return fact
        [whole] = held
        return fact.model_copy(update={"object": whole, "text": ""})  # its words name the part

    def _chain(self, fact: ExtractedFact) -> str:
        return self._chain_of(
            fact.tenant_id, fact.user_id, fact.subject, fact.predicate, fact.object, fact.polarity
        )

    def _late(self, state: UserMemoryState, fact: ExtractedFact, chain: str) -> _Late | None:
        """Whether the fact was said before its chain's current value began.

        Kafka keeps order within a partition only, and CRM webhooks come on a
        topic of their own, so a statement can arrive after a newer one. It
        never replaces the newer value: when a closed version held the same
        value at its time it is a late repeat (nothing to write); a value that
        differs from what held then waits for a human. The head's own value is
        a repeat as usual.
        """
        head = state.heads.get(chain)
        if head is None or fact.event_ts >= head.valid_from:
            return None
        if head.authoritative and not fact.authoritative and head.supersedes is None:
            # A CRM's first record only holds what the system had; the user's
            # own word outranks it whichever arrives first (``_disputed``).
            return None
        if same_statement(head, chain, fact.object, fact.polarity, fact.event_ts):
            return None
        spec = self._spec(fact.subject, fact.predicate)
        if state.held_then(chain, fact.object, fact.polarity, fact.event_ts, spec):
            return _Late(repeat=True, reason="")
        return _Late(
            repeat=False,
            reason=f"said at {fact.event_ts.isoformat()}, before the current "
            f"{head.statement()!r} (since {head.valid_from.isoformat()}), and arrived after it",
        )

    def _echoes(
        self, state: UserMemoryState, fact: ExtractedFact, chain: str, at: datetime
    ) -> bool:
        """Whether an agent's claim only repeats what the user's memory already holds.

        Agents read back what they were told ("Noted, mobile 555-0178", "No
        mushrooms, noted", "I'll post it to 9 Oak Lane"). Queuing that for the
        user's confirmation asks them to confirm their own words, and the queue
        fills with duplicates of current facts. It is not the user's word either,
        so it confirms nothing: it is dropped. A claim that adds a detail ("May
        16 at 4 pm" over "May 16") is new and still waits for the user.
        """
        head = state.heads.get(chain)
        if head is None or not head.is_current(at) or head.polarity is not fact.polarity:
            return False
        if same_statement(head, chain, fact.object, fact.polarity, fact.event_ts):
            return True
        spec = self._spec(fact.subject, fact.predicate)
        said, held = (
            _WORD.findall(spec.normalise(v).casefold()) for v in (fact.object, head.object)
        )
        return bool(said) and set(said) <= set(held)

    def _disputed(
        self, state: UserMemoryState, fact: ExtractedFact, at: datetime
    ) -> tuple[str, PendingCause] | None:
        """Why a CRM's first record of a value must not silently replace the user's word.

        A CRM field changed from an old value is an explicit update and
        supersedes. A field set for the first time only records what the
        system had (a language guessed from the first messages, say): when the
        user's own current statement on that chain says otherwise, and is not
        just less detailed ("monday" before "2026-03-09 9am"), a human decides.
        """
        if not fact.authoritative or fact.is_update or fact.polarity is not Polarity.AFFIRMED:
            return None
        spec = self._spec(fact.subject, fact.predicate)
        if spec.multi_valued:
            return None
        head = state.heads.get(self._chain(fact))
        if head is None or head.authoritative or not head.is_current(at):
            return None
        if head.polarity is not Polarity.AFFIRMED:
            return None
        agrees = spec.same_value(head.object, fact.object, head.valid_from, fact.event_ts)
        refines = spec.same_value(fact.object, head.object, fact.event_ts, head.valid_from)
        if agrees or refines:
            return None
        reason = f"the CRM's first record contradicts the user's own {head.statement()!r}"
        return reason, PendingCause.SOURCES_DISAGREE

    def _spec(self, subject: str, predicate: str) -> PredicateSpec:
        return self.vocabulary.spec(attribute(subject, predicate))

    def _chain_of(
        self, tenant: str, user: str, subject: str, predicate: str, obj: str, polarity: Polarity
    ) -> str:
        # One chain per (subject, predicate) for an affirmed single-valued fact;
        # one per (subject, predicate, value) for a multi-valued predicate's
        # values ("likes sushi" does not supersede "likes cilantro") and for
        # every negated constraint, so "no SMS" is never closed by an unrelated
        # "email is fine" (docs/vocabulary.md, Version chains). The value's
        # identity names the chain, so its surface forms share one; a dated
        # value's (an event's) chain is named without its date, so a new date
        # for the same event supersedes the old one.
        # An affirmed standing window ("weekdays only") is a rule beside the
        # bookings: one chain of its own, so "weekends now" updates it and a
        # booking neither ends it nor is ended by it.
        spec = self._spec(subject, predicate)
        if polarity is Polarity.NEGATED or spec.multi_valued:
            predicate = f"{predicate}\x1f{spec.chain_key(obj)}"
        elif spec.standing(obj):
            predicate = f"{predicate}\x1fstanding"
        return chain_id(tenant, user, subject, predicate)

    def _reversed(
        self, state: UserMemoryState, cand: MemoryRecord, at: datetime
    ) -> list[MemoryRecord]:
        """The current heads that state the same value with the other polarity.

        For a single-valued predicate an affirmed value and its negation live on
        different chains: "actually SMS is fine now" ends "no SMS", and "no SMS"
        ends a current "SMS". A time also reverses a time it narrows: "let's
        keep Monday at 2pm" ends "not Monday", and "not Monday" ends the booking
        "Monday at 2pm". A multi-valued value's flip stays on its own chain (the
        conflict stage versions it).
        """
        spec = self._spec(cand.subject, cand.predicate)
        if spec.multi_valued:
            return []
        flipped = Polarity.AFFIRMED if cand.polarity is Polarity.NEGATED else Polarity.NEGATED

        def reverses(head: MemoryRecord) -> bool:
            if head.polarity is not flipped or head.subject != cand.subject:
                return False
            if self._spec(head.subject, head.predicate).name != spec.name:
                return False
            return spec.reverses(head.object, cand.object, head.valid_from, cand.valid_from)

        return [head for head in state.current(at) if reverses(head)]

    @staticmethod
    def _fact_check(
        fact: ExtractedFact, contradictions: list[Contradiction], invalid: str | None
    ) -> tuple[ReviewOutcome, str | None]:
        if invalid is not None:
            return ReviewOutcome(
                stage=ReviewStage.FACT_CHECK, decision="hold", reason=invalid
            ), None
        if not contradictions:
            return ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="pass"), None
        found = "; ".join(
            f"contradicts {c.head.fact_id} ({c.head.statement()}) by {c.rule}: {c.reason}"
            for c in contradictions
        )
        if fact.is_update or fact.authoritative:
            evidence = "an explicit correction" if fact.is_update else "an authoritative source"
            reason = f"{found}; strong evidence: {evidence}"
            return ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="pass", reason=reason), None
        return ReviewOutcome(stage=ReviewStage.FACT_CHECK, decision="hold", reason=found), found
