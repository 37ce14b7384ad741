"""API keys → tenants: the one place a presented key becomes a tenant id.

Keys are configured as a JSON object ``{"<key>": "<tenant>"}``, inline
(``MEMSTREAM_API__KEYS``) or in a file (``MEMSTREAM_API__KEYS_FILE``); a tenant
may have several keys (rotation), a key names exactly one tenant. Only keyed
digests of the keys are kept in memory: the digest key is random per process,
so a memory dump holds nothing that matches a key anywhere else. A presented key
is compared against every stored digest with :func:`hmac.compare_digest`, so
the time taken says nothing about which digest (if any) matched or how far.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

# Same alphabet as schemas._base.Identifier: a tenant id becomes part of Kafka
# keys, Redis keys and Chroma collection names.
_TENANT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
# 16 characters of a URL-safe random token carry 96 bits; a shorter key could be
# guessed by an online attacker given enough requests.
MIN_KEY_CHARS = 16
# Headers and JSON files are not the place for kilobyte keys; the bound also caps
# the hashing work an unauthenticated request can cause.
MAX_KEY_CHARS = 256


class ApiKeyError(ValueError):
    """The key configuration is invalid (the message never contains a key)."""


class ApiKeyring:
    """Resolves a presented API key to its tenant, holding only digests of the keys."""

    def __init__(self, key_to_tenant: Mapping[str, str]) -> None:
        self._pepper = secrets.token_bytes(32)
        self._digests: list[tuple[bytes, str]] = []
        for number, (key, tenant) in enumerate(key_to_tenant.items(), start=1):
            if not MIN_KEY_CHARS <= len(key) <= MAX_KEY_CHARS or not key.isprintable():
                raise ApiKeyError(
                    f"key #{number} (tenant {tenant!r}) must be {MIN_KEY_CHARS}-{MAX_KEY_CHARS} "
                    "printable characters"
                )
            if not _TENANT.match(tenant):
                raise ApiKeyError(f"key #{number}: tenant must match {_TENANT.pattern}")
            self._digests.append((self._digest(key), tenant))

    def _digest(self, key: str) -> bytes:
        return hmac.new(self._pepper, key.encode("utf-8"), hashlib.sha256).digest()

    def __len__(self) -> int:
        return len(self._digests)

    def tenant_for(self, presented: str | None) -> str | None:
        """The tenant of ``presented``, or None for a missing or unknown key."""
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        digest = self._digest(presented)
        found: str | None = None
        for stored, tenant in self._digests:  # no early exit: constant work per key
            if hmac.compare_digest(stored, digest):
                found = tenant
        return found


def _read_file(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ApiKeyError(f"cannot read API keys from {path}: {exc.__class__.__name__}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ApiKeyError(f"{path} must hold a JSON object of key -> tenant strings")
    return data


def load_keyring(keys: Mapping[str, str], keys_file: Path | None = None) -> ApiKeyring:
    """The keyring of the inline keys (settings ``api.keys``) plus those of the keys file.

    Raises ApiKeyError when a key is listed twice for different tenants or a
    key or tenant is malformed.
    """
    merged = dict(keys)
    if keys_file is not None:
        for key, tenant in _read_file(keys_file).items():
            if merged.setdefault(key, tenant) != tenant:
                raise ApiKeyError(f"a key of tenant {tenant!r} is also configured for another")
    return ApiKeyring(merged)
