"""Bytes in, a validated event or a dead letter out. Pure: no I/O."""

from __future__ import annotations

import json

from pydantic import ValidationError

from schemas.deadletter import DeadLetter, DeadLetterReason
from schemas.events import InputEvent
from schemas.topics import INPUT_MODELS

# Kafka's own default message limit; a turn this large is a producer bug.
MAX_EVENT_BYTES = 1024 * 1024


class InvalidEvent(ValueError):
    """An input message that cannot become an event, with the reason why."""

    def __init__(self, reason: DeadLetterReason, detail: str, errors: list[str] | None = None):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.errors = errors or []

    def to_dead_letter(self, original: bytes, topic: str, **where: int | str | None) -> DeadLetter:
        return DeadLetter.wrap(
            original,
            reason=self.reason,
            detail=self.detail,
            errors=self.errors,
            topic=topic,
            **where,  # type: ignore[arg-type]  # partition/offset/line/key/stage
        )


def _format_errors(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"{loc}: {err['msg']}")
    return lines


def decode_event(topic: str, raw: bytes) -> InputEvent:
    """Validate one raw message of an input topic; raise InvalidEvent if bad."""
    model = INPUT_MODELS.get(topic)
    if model is None:
        raise InvalidEvent(
            DeadLetterReason.UNKNOWN_TOPIC,
            f"unknown input topic {topic!r}; expected one of {', '.join(INPUT_MODELS)}",
        )
    if len(raw) > MAX_EVENT_BYTES:
        raise InvalidEvent(
            DeadLetterReason.TOO_LARGE,
            f"message is {len(raw):,} bytes; the limit is {MAX_EVENT_BYTES:,} bytes",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidEvent(
            DeadLetterReason.NOT_UTF8, f"not valid UTF-8 at byte {exc.start}: {exc.reason}"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(
            DeadLetterReason.MALFORMED_JSON,
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:
        # Arrays or objects nested past the parser's recursion limit: still a
        # bad message, not a failure of the stage that reads it.
        raise InvalidEvent(
            DeadLetterReason.MALFORMED_JSON, "malformed JSON: nested too deeply to parse"
        ) from None
    if not isinstance(data, dict):
        raise InvalidEvent(
            DeadLetterReason.SCHEMA_VIOLATION,
            f"expected a JSON object, got {type(data).__name__}",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = _format_errors(exc)
        raise InvalidEvent(
            DeadLetterReason.SCHEMA_VIOLATION,
            f"{model.__name__} invalid: {'; '.join(errors[:5])}",
            errors,
        ) from None
