"""Topic names and which model validates each input topic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from schemas.events import CrmWebhook, DialogueEvent, UserAction

DIALOGUE_EVENTS: Final = "dialogue.events"
USER_ACTIONS: Final = "user.actions"
CRM_WEBHOOKS: Final = "crm.webhooks"
MEMORY_OPS: Final = "memory.ops"
MEMORY_PENDING: Final = "memory.pending"
MEMORY_DLQ: Final = "memory.dlq"
# Written by the sink job (not the ingest job): hints pushed to agents.
MEMORY_HINTS: Final = "memory.hints"

INPUT_MODELS: Final[dict[str, type[DialogueEvent | UserAction | CrmWebhook]]] = {
    DIALOGUE_EVENTS: DialogueEvent,
    USER_ACTIONS: UserAction,
    CRM_WEBHOOKS: CrmWebhook,
}
INPUT_TOPICS: Final = tuple(INPUT_MODELS)
OUTPUT_TOPICS: Final = (MEMORY_OPS, MEMORY_PENDING, MEMORY_DLQ)
ALL_TOPICS: Final = (*INPUT_TOPICS, *OUTPUT_TOPICS, MEMORY_HINTS)


@dataclass(frozen=True, slots=True)
class Topics:
    """The full topic names under one namespace (``""`` is the plain names).

    ``Topics("run1.").memory_ops == "run1.memory.ops"``: the one place a
    namespace prefix is put in front of a topic name.
    """

    namespace: str = ""

    def name(self, topic: str) -> str:
        """The namespaced name of a base topic name (``"memory.ops"`` → ``ns + it``)."""
        return self.namespace + topic

    def names(self, topics: Iterable[str]) -> list[str]:
        """The namespaced names of several base topic names, in order."""
        return [self.namespace + t for t in topics]

    @property
    def dialogue_events(self) -> str:
        return self.namespace + DIALOGUE_EVENTS

    @property
    def user_actions(self) -> str:
        return self.namespace + USER_ACTIONS

    @property
    def crm_webhooks(self) -> str:
        return self.namespace + CRM_WEBHOOKS

    @property
    def memory_ops(self) -> str:
        return self.namespace + MEMORY_OPS

    @property
    def pending(self) -> str:
        return self.namespace + MEMORY_PENDING

    @property
    def dlq(self) -> str:
        return self.namespace + MEMORY_DLQ

    @property
    def hints(self) -> str:
        return self.namespace + MEMORY_HINTS

    @property
    def inputs(self) -> list[str]:
        """The namespaced input topics, in ``INPUT_TOPICS`` order."""
        return self.names(INPUT_TOPICS)

    @property
    def outputs(self) -> list[str]:
        """The namespaced output topics (ops, pending, dlq)."""
        return self.names(OUTPUT_TOPICS)

    @property
    def all(self) -> list[str]:
        return self.names(ALL_TOPICS)

    def base(self, name: str) -> str:
        """The base name of a namespaced topic name (raises if not under this namespace)."""
        if not name.startswith(self.namespace):
            raise ValueError(f"topic {name!r} is not under namespace {self.namespace!r}")
        return name[len(self.namespace) :]
