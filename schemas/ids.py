"""Deterministic ids: the same input always yields the same id.

Replays and retries therefore produce the same facts and operations, which is
what makes the store writes idempotent (exactly-once effect).
"""

from __future__ import annotations

import hashlib


def _digest(*parts: str | int) -> str:
    joined = "\x1f".join(str(p) for p in parts)  # unit separator: no collisions via joins
    return hashlib.blake2b(joined.encode("utf-8"), digest_size=12).hexdigest()


def chain_id(tenant_id: str, user_id: str, subject: str, predicate: str) -> str:
    """Id of the version chain of one (subject, predicate) of one user."""
    return "c_" + _digest(tenant_id, user_id, subject.casefold(), predicate.casefold())


def fact_id(chain: str, event_id: str, obj: str, polarity: str) -> str:
    """Id of one fact version: its chain plus the event that stated it."""
    return "f_" + _digest(chain, event_id, obj.casefold(), polarity)


def op_id(event_id: str, index: int, kind: str) -> str:
    """Id of the ``index``-th operation decided for a source event."""
    return "o_" + _digest(event_id, index, kind)


def episode_id(tenant_id: str, user_id: str, event_id: str) -> str:
    """Id of the episode of one dialogue turn (its source event)."""
    return "e_" + _digest(tenant_id, user_id, event_id)


def hint_id(tenant_id: str, user_id: str, event_id: str) -> str:
    """Id of the hint pushed for one dialogue turn (its source event)."""
    return "h_" + _digest(tenant_id, user_id, event_id)
