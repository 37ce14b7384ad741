"""The three input topics: dialogue turns, user actions, CRM webhooks."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from schemas._base import EventId, Frozen, Identifier, partition_key
from schemas.bounds import (
    MAX_CRM_FIELDS,
    Count64,
    EventTime,
    FactScalar,
    JsonMap,
    MapKey,
    ScalarMap,
    SchemaVersion1,
)

# A turn longer than this is rejected to the dead-letter topic: dialogue turns
# are sentences, not documents, and the NLP stages are sized for that.
MAX_TURN_CHARS = 100_000


class Role(StrEnum):
    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"


class _InputEvent(Frozen):
    schema_version: SchemaVersion1 = 1
    event_id: EventId
    tenant_id: Identifier
    user_id: Identifier
    ts: EventTime

    @property
    def key(self) -> str:
        return partition_key(self.tenant_id, self.user_id)


class DialogueEvent(_InputEvent):
    """One turn of a dialogue (topic ``dialogue.events``)."""

    session_id: Identifier
    turn_index: Count64
    turn_id: str | None = Field(default=None, max_length=128)
    role: Role
    text: str = Field(max_length=MAX_TURN_CHARS)
    lang: str = Field(default="en", pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
    metadata: ScalarMap = Field(default_factory=dict)


class ActionType(StrEnum):
    CLICK = "click"
    VIEW = "view"
    SCROLL = "scroll"
    SEARCH = "search"
    ADD_TO_CART = "add_to_cart"
    PURCHASE = "purchase"
    RATE = "rate"
    CONFIRM_MEMORY = "confirm_memory"
    REJECT_MEMORY = "reject_memory"
    # Agent-side writes travel as events so the pipeline stays the only writer.
    STORE_MEMORY = "store_memory"
    FORGET_USER = "forget_user"


# The properties of a confirm_memory / reject_memory action that the review
# console sets: who decided (it goes into the lineage of what the decision
# writes) and, for an edit-and-confirm, the corrected object value.
REVIEWER_PROPERTY = "reviewer_id"
EDITED_OBJECT_PROPERTY = "object"


class UserAction(_InputEvent):
    """A user (or agent-on-behalf-of-user) action (topic ``user.actions``).

    ``properties`` carries an action's details: a store_memory's triple, a
    purchase's item name, or a human reviewer's ``REVIEWER_PROPERTY`` and
    ``EDITED_OBJECT_PROPERTY`` on a confirm_memory / reject_memory.
    """

    session_id: Identifier | None = None
    action_type: ActionType
    target_id: str | None = Field(default=None, max_length=256)
    duration_ms: Count64 | None = None
    properties: JsonMap = Field(default_factory=dict)


class FieldChange(Frozen):
    # Fact-object sized, not map-text sized: a longer value could only fail
    # later, at extraction, as a processing error instead of a schema violation.
    old: FactScalar = None
    new: FactScalar = None


class CrmWebhook(_InputEvent):
    """A CRM record change; authoritative structured facts (topic ``crm.webhooks``)."""

    source: str = Field(min_length=1, max_length=64)
    entity: str = Field(min_length=1, max_length=64)
    changes: Annotated[dict[MapKey, FieldChange], Field(min_length=1, max_length=MAX_CRM_FIELDS)]


InputEvent = DialogueEvent | UserAction | CrmWebhook
