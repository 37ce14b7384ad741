"""Hints for subscribers: ``memory.hints`` followed for one tenant, or one of its users.

The CLI (``memstream hints``), ``MemoryService.hints`` (the SDK in process)
and the HTTP API's server-sent-events stream all read hints here. A feed is
bound to one tenant by its caller (the API: by the API key); a hint is handed
out only when both its Kafka key and its payload name that tenant (and user),
so one tenant never sees another's hints.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Protocol

from connectors.kafka_tail import follow
from schemas._base import partition_key
from schemas.hints import MemoryHint


class HintFeed(Protocol):
    """Follows ``memory.hints`` (``KafkaHintFeed``, or a test's stand-in)."""

    def follow(
        self, tenant_id: str, user_id: str | None = None, *, from_beginning: bool = False
    ) -> Generator[MemoryHint | None]:
        """Hints of the tenant (of one user when given); None after each quiet poll."""
        ...


class KafkaHintFeed:
    """``memory.hints`` on a broker, read_committed, without a consumer group."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        """``topic``: the namespaced ``memory.hints``."""
        self.bootstrap = bootstrap
        self.topic = topic

    def follow(
        self, tenant_id: str, user_id: str | None = None, *, from_beginning: bool = False
    ) -> Generator[MemoryHint | None]:
        """Hints as they are committed, oldest first; None after each quiet poll."""
        if user_id is not None:
            records = follow(
                self.bootstrap,
                self.topic,
                key=partition_key(tenant_id, user_id),
                from_beginning=from_beginning,
            )
        else:
            prefix = f"{tenant_id}:"
            records = follow(
                self.bootstrap, self.topic, key_prefix=prefix, from_beginning=from_beginning
            )
        for record in records:
            if record is None:
                yield None
                continue
            hint = MemoryHint.model_validate_json(record.value)
            # The key said so; the payload must agree (ids hold no ":", so the
            # prefix is exactly the tenant).
            if hint.tenant_id == tenant_id and user_id in (None, hint.user_id):
                yield hint
