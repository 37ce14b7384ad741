"""User actions that state facts: purchases and agent-stored memories.

Confirm/reject/forget actions are decisions about memory and are handled by
the review stage; the actions here *say* something about the user and become
candidate facts like a dialogue turn's, without NLP.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from pipelines.extract.typed import typed
from schemas.events import ActionType, UserAction
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import MemoryKind, Polarity

# A purchase is an observed behaviour, not a statement: strong evidence, but
# below an authoritative CRM record (1.0) because a gift or a mistake happens.
PURCHASE_CONFIDENCE = 0.9
# An agent-stored memory is a second-hand statement: it waits for the user's
# confirmation unless the agent supplies its own (lower or higher) confidence.
STORED_MEMORY_CONFIDENCE = 0.7


def action_facts(action: UserAction) -> list[ExtractedFact]:
    """The candidate facts an action states (none for clicks, views, scrolls)."""
    base = {
        "tenant_id": action.tenant_id,
        "user_id": action.user_id,
        "session_id": action.session_id,
        "event_id": action.event_id,
        "event_ts": action.ts,
    }
    if action.action_type is ActionType.PURCHASE and action.target_id:
        item = str(action.properties.get("name") or action.target_id)
        return [
            ExtractedFact(
                **base,
                subject="user",
                predicate="ordered",
                object=item.casefold().strip(),
                kind=MemoryKind.FACT,
                confidence=PURCHASE_CONFIDENCE,
                text=f"ordered {item}",
                intent="order",
                asserted_by=Assertor.ACTION,
                fields={"PRODUCT": item.casefold().strip()},
            )
        ]
    if action.action_type is ActionType.STORE_MEMORY:
        # An agent's tool names the predicate as it likes ("preferred_phone"):
        # stored under the vocabulary's name and form, as dialogue facts are.
        return typed([_stored_memory(action, base)])
    return []


def _stored_memory(action: UserAction, base: Mapping[str, object]) -> ExtractedFact:
    props = action.properties
    try:
        return ExtractedFact.model_validate(
            {
                **base,
                "subject": props.get("subject", "user"),
                "predicate": props["predicate"],
                "object": props["object"],
                "polarity": props.get("polarity", Polarity.AFFIRMED),
                "kind": props.get("kind", MemoryKind.FACT),
                "confidence": props.get("confidence", STORED_MEMORY_CONFIDENCE),
                "text": props.get("text", ""),
                "intent": "store_memory",
                "asserted_by": Assertor.AGENT,
            }
        )
    except (KeyError, ValidationError) as exc:
        raise ValueError(
            "store_memory needs properties.predicate and properties.object "
            f"(optional: subject, polarity, kind, confidence, text): {exc}"
        ) from exc
