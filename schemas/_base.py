"""Shared building blocks of every message model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

# Tenant and user ids become part of the Kafka key "<tenant>:<user>", of Redis
# keys and of Chroma collection names, so they are restricted to a safe
# alphabet without ":" (the key separator).
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.@-]{1,64}$")]
# Event ids come from producers; any printable id up to 128 characters.
EventId = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^\S+$")]

# Scalar JSON values allowed in free-form metadata maps.
Scalar = str | int | float | bool | None


class Frozen(BaseModel):
    """Immutable, closed models: unknown fields are errors, not silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def partition_key(tenant_id: str, user_id: str) -> str:
    """The Kafka message key: all of a user's events land on one partition."""
    return f"{tenant_id}:{user_id}"
