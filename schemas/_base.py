"""Shared building blocks of every message model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

# Tenant and user ids become part of the Kafka key "<tenant>:<user>", of Redis
# keys and of Chroma collection names, so they are restricted to a safe
# alphabet without ":" (the key separator).
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.@-]{1,64}$")]
# Event ids come from producers; any printable id up to 128 characters: no
# control character and no space of any kind. Spelled out rather than \S, on
# which regex engines disagree (Rust's counts U+0085 as a space, ECMA-262's,
# the published JSON Schema's dialect, counts U+FEFF instead).
_NOT_PRINTABLE = (
    r"\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
EventId = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=f"^[^{_NOT_PRINTABLE}]+$")
]

# Scalar JSON values allowed in free-form metadata maps.
Scalar = str | int | float | bool | None


class Frozen(BaseModel):
    """Immutable, closed models: unknown fields are errors, not silently kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def partition_key(tenant_id: str, user_id: str) -> str:
    """The Kafka message key: all of a user's events land on one partition."""
    return f"{tenant_id}:{user_id}"
