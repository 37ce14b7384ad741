"""API keys → tenants: the one place a presented key becomes a tenant id.

Keys are configured as a JSON object ``{"<key>": "<tenant>"}``, inline
(``MEMSTREAM_API__KEYS``) or in a file (``MEMSTREAM_API__KEYS_FILE``); a tenant
may have several keys (rotation), a key names exactly one tenant. Only keyed
digests of the keys are kept in memory: the digest key is random per process,
so a memory dump holds nothing that matches a key anywhere else. A presented key
is compared against every stored digest with :func:`hmac.compare_digest`, so
the time taken says nothing about which digest (if any) matched or how far.

Operator keys (the review console, jobs/serve/review.py) are a second keyring
of the same kind, configured as ``{"<key>": "<tenant>/<reviewer>"}``
(``MEMSTREAM_API__OPERATOR_KEYS`` or ``MEMSTREAM_API__OPERATOR_KEYS_FILE``): a
key names one reviewer acting for exactly one tenant. An operator key is never
also an API key (refused at start), so neither ever opens the other's routes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
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


class _Keyring:
    """Keyed digests of keys, each with the value it names; constant-time lookup."""

    def __init__(self) -> None:
        self._pepper = secrets.token_bytes(32)
        self._digests: list[tuple[bytes, str]] = []

    def _add(self, number: int, key: str, value: str, owner: str) -> None:
        if not MIN_KEY_CHARS <= len(key) <= MAX_KEY_CHARS or not key.isprintable():
            raise ApiKeyError(
                f"key #{number} ({owner}) must be {MIN_KEY_CHARS}-{MAX_KEY_CHARS} "
                "printable characters"
            )
        self._digests.append((self._digest(key), value))

    def _digest(self, key: str) -> bytes:
        return hmac.new(self._pepper, key.encode("utf-8"), hashlib.sha256).digest()

    def __len__(self) -> int:
        return len(self._digests)

    def _lookup(self, presented: str | None) -> str | None:
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        digest = self._digest(presented)
        found: str | None = None
        for stored, value in self._digests:  # no early exit: constant work per key
            if hmac.compare_digest(stored, digest):
                found = value
        return found


class ApiKeyring(_Keyring):
    """Resolves a presented API key to its tenant, holding only digests of the keys."""

    def __init__(self, key_to_tenant: Mapping[str, str]) -> None:
        super().__init__()
        for number, (key, tenant) in enumerate(key_to_tenant.items(), start=1):
            self._add(number, key, tenant, f"tenant {tenant!r}")
            if not _TENANT.match(tenant):
                raise ApiKeyError(f"key #{number}: tenant must match {_TENANT.pattern}")

    def tenant_for(self, presented: str | None) -> str | None:
        """The tenant of ``presented``, or None for a missing or unknown key."""
        return self._lookup(presented)


@dataclass(frozen=True)
class Operator:
    """A human reviewer acting for one tenant: who an operator key names."""

    tenant: str
    reviewer: str


class OperatorKeyring(_Keyring):
    """Resolves a presented operator key to its (tenant, reviewer), holding only digests."""

    def __init__(self, key_to_operator: Mapping[str, str]) -> None:
        super().__init__()
        for number, (key, operator) in enumerate(key_to_operator.items(), start=1):
            tenant, _, reviewer = operator.partition("/")
            self._add(number, key, operator, f"tenant {tenant!r}")
            if not (_TENANT.match(tenant) and _TENANT.match(reviewer)):
                raise ApiKeyError(
                    f"operator key #{number} must name <tenant>/<reviewer>, "
                    f"each matching {_TENANT.pattern}"
                )

    def operator_for(self, presented: str | None) -> Operator | None:
        """The operator of ``presented``, or None for a missing or unknown key."""
        found = self._lookup(presented)
        if found is None:
            return None
        tenant, _, reviewer = found.partition("/")
        return Operator(tenant, reviewer)


def _read_file(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ApiKeyError(f"cannot read API keys from {path}: {exc.__class__.__name__}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ApiKeyError(f"{path} must hold a JSON object of key -> string")
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


def load_operator_keyring(
    keys: Mapping[str, str], keys_file: Path | None, api_keys: ApiKeyring
) -> OperatorKeyring:
    """The operator keyring of the inline keys (``api.operator_keys``) plus the keys file.

    Raises ApiKeyError when a key is listed twice for different operators, is
    malformed, or is also one of ``api_keys`` (a key opens one kind of route).
    """
    merged = dict(keys)
    if keys_file is not None:
        for key, operator in _read_file(keys_file).items():
            if merged.setdefault(key, operator) != operator:
                raise ApiKeyError("an operator key is configured for two operators")
    for number, key in enumerate(merged, start=1):
        if api_keys.tenant_for(key) is not None:
            raise ApiKeyError(f"operator key #{number} is also an API key")
    return OperatorKeyring(merged)
