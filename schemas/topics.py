"""Topic names and which model validates each input topic."""

from __future__ import annotations

from typing import Final

from schemas.events import CrmWebhook, DialogueEvent, UserAction

DIALOGUE_EVENTS: Final = "dialogue.events"
USER_ACTIONS: Final = "user.actions"
CRM_WEBHOOKS: Final = "crm.webhooks"
MEMORY_OPS: Final = "memory.ops"
MEMORY_PENDING: Final = "memory.pending"
MEMORY_DLQ: Final = "memory.dlq"

INPUT_MODELS: Final[dict[str, type[DialogueEvent | UserAction | CrmWebhook]]] = {
    DIALOGUE_EVENTS: DialogueEvent,
    USER_ACTIONS: UserAction,
    CRM_WEBHOOKS: CrmWebhook,
}
INPUT_TOPICS: Final = tuple(INPUT_MODELS)
OUTPUT_TOPICS: Final = (MEMORY_OPS, MEMORY_PENDING, MEMORY_DLQ)
ALL_TOPICS: Final = INPUT_TOPICS + OUTPUT_TOPICS
