"""The dead-letter envelope (topic ``memory.dlq``): nothing is dropped silently."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field

from schemas._base import Frozen

# The envelope carries the original bytes whole up to this size (base64 grows
# it by a third; the DLQ topic accepts 8 MiB messages). Larger payloads keep
# their head, size and SHA-256 so they can be identified and re-sent.
MAX_ORIGINAL_BYTES = 4 * 1024 * 1024


class DeadLetterReason(StrEnum):
    NOT_UTF8 = "not_utf8"
    MALFORMED_JSON = "malformed_json"
    SCHEMA_VIOLATION = "schema_violation"
    UNKNOWN_TOPIC = "unknown_topic"
    TOO_LARGE = "too_large"
    PROCESSING_ERROR = "processing_error"


class DeadLetter(Frozen):
    schema_version: Literal[1] = 1
    reason: DeadLetterReason
    detail: str = Field(description="Human-readable explanation of what was wrong.")
    errors: list[str] = Field(default_factory=list, description="One line per violation.")
    topic: str
    partition: int | None = None
    offset: int | None = None
    line: int | None = Field(default=None, description="Line number when read from a file.")
    key: str | None = None
    stage: str = Field(default="validate", description="Where it was rejected.")
    original_b64: str
    original_size: int
    original_sha256: str
    truncated: bool = False
    at: AwareDatetime

    @classmethod
    def wrap(
        cls,
        original: bytes,
        *,
        reason: DeadLetterReason,
        detail: str,
        topic: str,
        errors: list[str] | None = None,
        partition: int | None = None,
        offset: int | None = None,
        line: int | None = None,
        key: str | None = None,
        stage: str = "validate",
        at: datetime | None = None,
    ) -> DeadLetter:
        kept = original[:MAX_ORIGINAL_BYTES]
        return cls(
            reason=reason,
            detail=detail,
            errors=errors or [],
            topic=topic,
            partition=partition,
            offset=offset,
            line=line,
            key=key,
            stage=stage,
            original_b64=base64.b64encode(kept).decode("ascii"),
            original_size=len(original),
            original_sha256=hashlib.sha256(original).hexdigest(),
            truncated=len(kept) < len(original),
            at=at or datetime.now(UTC),
        )

    def original(self) -> bytes:
        return base64.b64decode(self.original_b64)
