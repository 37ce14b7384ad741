"""The Faust worker's state check refuses exactly what its changelog write would refuse."""

from __future__ import annotations

import json

import pytest

from jobs.ingest.faust_worker import table_codec


def test_a_state_encodes_as_the_tables_json() -> None:
    snapshot = {"offsets": {"dialogue.events:0": 2**63 - 1}, "counters": {}}
    assert json.loads(table_codec(snapshot, 1024)) == snapshot


def test_an_integer_beyond_64_bits_fails_as_the_changelog_write_did() -> None:
    # Issue 15's poison: before the input bounds, this is how a worker stopped.
    with pytest.raises(TypeError, match="Integer exceeds 64-bit range"):
        table_codec({"turn": 18446744073709551616}, 1024)


def test_a_state_over_the_changelog_message_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="the changelog takes 64"):
        table_codec({"text": "x" * 100}, 64)
