"""The hint request of a turn whose trigger fired: what the sink needs to push a hint.

Built from the decision, the turn and the user's keyed state right after the
turn's own review, so it is deterministic per event (its ``hint_id`` comes
from the event id) and names the behaviour items that held at the turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.triggers.model import TriggerDecision
from schemas.events import DialogueEvent
from schemas.hints import BehaviourNote, HintRequest, HintSignal
from schemas.ids import hint_id
from schemas.memory import MemoryRecord

# Behaviour items named in one hint, most recently touched first: a hint is
# read by an agent in a prompt, and a handful of "is comparing ..." lines is
# what a person would mention.
MAX_BEHAVIOUR_NOTES = 5


def hint_request(
    decision: TriggerDecision, event: DialogueEvent, behaviour: Sequence[MemoryRecord]
) -> HintRequest:
    """The request for a fired ``decision`` on ``event`` (``behaviour``: current items)."""
    if not decision.triggered or decision.event_id != event.event_id:
        raise ValueError(f"no fired decision for {event.event_id}")
    reason = "explicit" if decision.reason.value == "explicit" else "implicit"
    return HintRequest(
        hint_id=hint_id(event.tenant_id, event.user_id, event.event_id),
        event_id=event.event_id,
        session_id=event.session_id,
        turn_index=event.turn_index,
        query=event.text,
        ts=event.ts,
        reason=reason,
        signals=[
            HintSignal(name=s.name.value, evidence=s.evidence, value=s.value)
            for s in decision.signals
        ],
        behaviour=[
            BehaviourNote(
                fact_id=record.fact_id,
                text=record.text or record.statement(),
                confidence=record.confidence,
                expires_at=record.expires_at,
            )
            for record in behaviour[:MAX_BEHAVIOUR_NOTES]
        ],
    )


def render_hint(request: HintRequest, memory_block: str) -> str:
    """The hint as an agent pastes it: why memory is needed now, the memory, the behaviour.

    ``memory_block`` is recall's prompt-ready block for the turn
    (``pipelines.context.render_context``), each line with its source.
    """
    why = "; ".join(f"{s.name} ({s.evidence})" for s in request.signals)
    lines = [f"Memory for the user's turn {request.query!r} ({request.reason}: {why})", ""]
    lines.append(memory_block)
    if request.behaviour:
        lines += ["", "Recent behaviour:"]
        lines += [f"- {note.text} [behaviour: {note.fact_id}]" for note in request.behaviour]
    return "\n".join(lines)
