"""Builders for the review tests: hand-made facts, encodings and a feed of events."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from pipelines.review import Reviewer, UserMemoryState
from schemas.events import ActionType, CrmWebhook, DialogueEvent, FieldChange, Role, UserAction
from schemas.facts import ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import Encoding, MemoryRecord
from schemas.ops import MemoryOperation, OpType
from schemas.topics import CRM_WEBHOOKS, DIALOGUE_EVENTS, USER_ACTIONS

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TENANT, USER = "acme", "u1"
DAY = timedelta(days=1)


def fact(event_id: str, predicate: str, obj: str, **kw: Any) -> ExtractedFact:
    """A user-stated fact about the user, confidence 0.9 unless given."""
    values: dict[str, Any] = {
        "tenant_id": TENANT,
        "user_id": USER,
        "session_id": "s1",
        "event_id": event_id,
        "event_ts": T0,
        "subject": "user",
        "predicate": predicate,
        "object": obj,
        "confidence": 0.9,
        "text": f"user {predicate} {obj}",
    }
    values.update(kw)
    return ExtractedFact(**values)


def vec(cos: float) -> Encoding:
    """A 2-d unit text vector whose cosine with ``vec(1.0)`` is ``cos``."""
    return Encoding(text=[cos, math.sqrt(max(0.0, 1.0 - cos * cos))])


class Feed:
    """Drives a Reviewer as a job would: one state, offsets rising per topic."""

    def __init__(self, reviewer: Reviewer | None = None) -> None:
        self.reviewer = reviewer or Reviewer()
        self.state: UserMemoryState = self.reviewer.new_state()
        self.offsets = {DIALOGUE_EVENTS: 0, USER_ACTIONS: 0, CRM_WEBHOOKS: 0}
        # The last event fed, with its lineage and facts, to re-run it.
        self.last: tuple[Any, SourceLineage, list[ExtractedFact]] | None = None

    def _lineage(self, topic: str, event_id: str) -> SourceLineage:
        self.offsets[topic] += 1
        return SourceLineage(
            topic=topic, partition=0, offset=self.offsets[topic], event_id=event_id
        )

    def say(
        self,
        event_id: str,
        *facts: ExtractedFact,
        ts: datetime = T0,
        encodings: list[Encoding | None] | None = None,
        role: Role = Role.USER,
    ) -> list[MemoryOperation]:
        """A dialogue turn with its facts (their event_id/event_ts are aligned)."""
        aligned = [f.model_copy(update={"event_id": event_id, "event_ts": ts}) for f in facts]
        event = DialogueEvent(
            event_id=event_id,
            tenant_id=TENANT,
            user_id=USER,
            ts=ts,
            session_id="s1",
            turn_index=self.offsets[DIALOGUE_EVENTS],
            role=role,
            text=" / ".join(f.text for f in facts) or "hello",
        )
        lineage = self._lineage(DIALOGUE_EVENTS, event_id)
        self.last = (event, lineage, aligned)
        return self.reviewer.on_dialogue(self.state, event, lineage, aligned, encodings)

    def crm(self, event_id: str, *facts: ExtractedFact, ts: datetime = T0) -> list[MemoryOperation]:
        """A CRM webhook whose facts are authoritative."""
        aligned = [
            f.model_copy(update={"event_id": event_id, "event_ts": ts, "authoritative": True})
            for f in facts
        ]
        event = CrmWebhook(
            event_id=event_id,
            tenant_id=TENANT,
            user_id=USER,
            ts=ts,
            source="salesforce",
            entity="contact",
            changes={f.predicate: FieldChange(new=f.object) for f in facts},
        )
        lineage = self._lineage(CRM_WEBHOOKS, event_id)
        self.last = (event, lineage, aligned)
        return self.reviewer.on_crm(self.state, event, lineage, aligned)

    def act(
        self,
        event_id: str,
        action: ActionType,
        target: str | None = None,
        ts: datetime = T0,
        facts: tuple[ExtractedFact, ...] = (),
    ) -> list[MemoryOperation]:
        """A user action (confirm_memory, reject_memory, purchase, ...) and its facts."""
        aligned = [f.model_copy(update={"event_id": event_id, "event_ts": ts}) for f in facts]
        event = UserAction(
            event_id=event_id,
            tenant_id=TENANT,
            user_id=USER,
            ts=ts,
            action_type=action,
            target_id=target,
        )
        lineage = self._lineage(USER_ACTIONS, event_id)
        self.last = (event, lineage, aligned)
        return self.reviewer.on_action(self.state, event, lineage, aligned)

    def current(self, at: datetime) -> list[MemoryRecord]:
        """The state's current heads at ``at``."""
        return list(self.state.current(at))


def of(ops: list[MemoryOperation], op_type: OpType) -> list[MemoryOperation]:
    """The operations of one type, in order."""
    return [op for op in ops if op.op_type is op_type]


def record(op: MemoryOperation) -> MemoryRecord:
    """The record of a fact operation (fails loudly when absent)."""
    assert op.record is not None
    return op.record


def types(ops: list[MemoryOperation]) -> list[str]:
    """The op types in order, for compact assertions."""
    return [op.op_type.value for op in ops]
