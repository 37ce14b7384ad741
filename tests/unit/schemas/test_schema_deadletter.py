"""The dead-letter envelope keeps the original bytes, or their identity when too large."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from schemas.deadletter import MAX_ORIGINAL_BYTES, DeadLetter, DeadLetterReason

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def wrap(original: bytes) -> DeadLetter:
    return DeadLetter.wrap(
        original,
        reason=DeadLetterReason.NOT_UTF8,
        detail="not valid UTF-8 at byte 1",
        topic="dialogue.events",
        partition=2,
        offset=41,
        at=AT,
    )


@pytest.mark.parametrize("original", [b"", b"\x00\xff\xfe binary", "中文".encode(), b"x" * 1000])
def test_original_bytes_round_trip_through_json(original: bytes) -> None:
    letter = wrap(original)
    again = DeadLetter.model_validate_json(letter.model_dump_json())
    assert again == letter
    assert again.original() == original
    assert not again.truncated
    assert again.original_size == len(original)
    assert again.original_sha256 == hashlib.sha256(original).hexdigest()


def test_original_at_the_limit_is_kept_whole() -> None:
    letter = wrap(b"a" * MAX_ORIGINAL_BYTES)
    assert not letter.truncated
    assert len(letter.original()) == MAX_ORIGINAL_BYTES


def test_original_above_the_limit_keeps_head_size_and_hash() -> None:
    original = bytes(range(256)) * (MAX_ORIGINAL_BYTES // 256) + b"tail"
    letter = wrap(original)
    assert letter.truncated
    assert letter.original() == original[:MAX_ORIGINAL_BYTES]
    assert letter.original_size == len(original)
    assert letter.original_sha256 == hashlib.sha256(original).hexdigest()


def test_time_defaults_to_now_and_is_timezone_aware() -> None:
    letter = DeadLetter.wrap(
        b"{}", reason=DeadLetterReason.SCHEMA_VIOLATION, detail="x", topic="user.actions"
    )
    assert letter.at.tzinfo is not None
    assert (letter.partition, letter.offset, letter.line) == (None, None, None)


def test_unknown_reason_is_rejected() -> None:
    data = wrap(b"x").model_dump(mode="json") | {"reason": "bad_mood"}
    with pytest.raises(ValidationError, match="reason"):
        DeadLetter.model_validate(data)
