"""API keys → tenants: resolution, refusal of bad configurations, no key kept in memory."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from jobs.serve.keys import (
    MAX_KEY_CHARS,
    MIN_KEY_CHARS,
    ApiKeyError,
    ApiKeyring,
    load_keyring,
)

KEY_A = "a" * MIN_KEY_CHARS
KEY_A2 = "A2-" + "x" * MIN_KEY_CHARS
KEY_B = "b" * MIN_KEY_CHARS


def test_each_key_resolves_to_its_tenant_and_nothing_else() -> None:
    ring = ApiKeyring({KEY_A: "tenant-a", KEY_A2: "tenant-a", KEY_B: "tenant-b"})
    assert [ring.tenant_for(k) for k in (KEY_A, KEY_A2, KEY_B)] == [
        "tenant-a",
        "tenant-a",
        "tenant-b",
    ]
    for near_miss in (KEY_A[:-1], KEY_A + "a", KEY_A.upper(), f" {KEY_A}", "", None):
        assert ring.tenant_for(near_miss) is None
    assert ring.tenant_for("a" * (MAX_KEY_CHARS + 1)) is None
    assert len(ring) == 3


def test_no_key_is_held_in_memory() -> None:
    ring = ApiKeyring({KEY_A: "tenant-a"})
    assert KEY_A.encode() not in pickle.dumps(ring.__dict__)


@pytest.mark.parametrize(
    "mapping",
    [
        {"short": "tenant-a"},
        {"k" * (MAX_KEY_CHARS + 1): "tenant-a"},
        {KEY_A[:-1] + "\n": "tenant-a"},
        {KEY_A: "tenant:a"},
        {KEY_A: "*"},
        {KEY_A: ""},
    ],
)
def test_malformed_keys_and_tenants_are_refused(mapping: dict[str, str]) -> None:
    with pytest.raises(ApiKeyError) as raised:
        ApiKeyring(mapping)
    assert all(key not in str(raised.value) for key in mapping)  # never echo a key


def test_keys_file_merges_with_inline_keys(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({KEY_B: "tenant-b", KEY_A: "tenant-a"}))
    ring = load_keyring({KEY_A: "tenant-a"}, keys_file)
    assert (ring.tenant_for(KEY_A), ring.tenant_for(KEY_B)) == ("tenant-a", "tenant-b")


@pytest.mark.parametrize(
    "content",
    [
        json.dumps({KEY_A: "tenant-other"}),  # the inline key, for another tenant
        json.dumps([KEY_A, "tenant-a"]),
        json.dumps({KEY_B: 7}),
        "{not json",
    ],
)
def test_bad_keys_files_are_refused_without_echoing_keys(tmp_path: Path, content: str) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(content)
    with pytest.raises(ApiKeyError) as raised:
        load_keyring({KEY_A: "tenant-a"}, keys_file)
    assert KEY_A not in str(raised.value) and KEY_B not in str(raised.value)


def test_missing_keys_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ApiKeyError):
        load_keyring({}, tmp_path / "absent.json")
