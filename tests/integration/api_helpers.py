"""Helpers of the HTTP API and MCP tests: seeded users in the real stores, keys, leak checks.

``seed_user`` writes one user's memory through the real tier writers (ops from
``tier_ops``): a preference, a negated rule, a phone number that changed (a
version chain), a status and an item pending confirmation. Every value carries
the tenant's ``label`` so that a response from another tenant's key can be
searched for it: ``leaked`` finds any of a seeded user's label, fact ids or
pending id in a response body. ``call_tools`` drives an MCP server through the
SDK's own client over its in-memory transport.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolResult, Tool
from tier_ops import fact, held, op, phone_change, upsert

from connectors.kafka_io import end_offsets, read_topic
from jobs.serve.memory_service import MemoryStores
from schemas.events import UserAction
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.ops import MemoryOperation, OpType, StatusEntry
from schemas.query import ActionReceipt

# A status must outlive the test run; an hour is far beyond any test's length.
STATUS_TTL_S = 3600


@dataclass(frozen=True)
class SeededUser:
    """What ``seed_user`` wrote, to look for in (or assert absent from) answers."""

    tenant: str
    user: str
    label: str
    pending_id: str
    fact_ids: tuple[str, ...]

    @property
    def markers(self) -> tuple[str, ...]:
        """Strings only this user's memory contains."""
        return (self.label, self.pending_id, *self.fact_ids)


def new_key() -> str:
    """A fresh random API key."""
    return secrets.token_urlsafe(24)


def seed_user(stores: MemoryStores, tenant: str, user: str, label: str) -> SeededUser:
    """Write a user's memory to Redis, Chroma and Neo4j through the real writers."""
    now = datetime.now(UTC)
    likes = fact(tenant, user, "user", "likes", f"{label} tea", event_id=f"{user}-{label}-1")
    weekend = fact(
        tenant,
        user,
        "installation_time",
        "in",
        "weekend",
        event_id=f"{user}-{label}-2",
        kind=MemoryKind.RULE,
        polarity=Polarity.NEGATED,
    )
    closed, current, phone_ops = phone_change(tenant, user)
    diet = held(
        fact(tenant, user, "user", "diet", f"vegan {label}", event_id=f"{user}-{label}-3"),
        "contradicts an order",
    )
    working: list[MemoryOperation] = [
        op(
            OpType.ADD_PENDING,
            tenant,
            user,
            event_id=diet.lineage.event_id,
            at=now,  # pending items lapse a week after they were queued
            tiers=[Tier.WORKING],
            record=diet,
        ),
        op(
            OpType.SET_STATUS,
            tenant,
            user,
            event_id=f"{user}-{label}-4",
            at=now,
            tiers=[Tier.WORKING],
            status=StatusEntry(name="current_project", value=label, ttl_s=STATUS_TTL_S),
        ),
    ]
    ops = [upsert(likes), upsert(weekend), *phone_ops, *working]
    for sink in (stores.redis, stores.chroma, stores.neo4j):
        sink.write(ops)
        sink.flush()
    fact_ids = (likes.fact_id, weekend.fact_id, closed.fact_id, current.fact_id)
    return SeededUser(tenant, user, label, diet.fact_id, fact_ids)


def leaked(body: str, other: SeededUser) -> list[str]:
    """The markers of ``other``'s memory that appear in ``body``."""
    return [marker for marker in other.markers if marker in body]


def published_action(bootstrap: str, receipt: ActionReceipt) -> tuple[str | None, UserAction]:
    """The key and event a receipt points at, read back from Kafka."""
    # Every other partition from its end: only the receipt's record is of interest.
    start = end_offsets(bootstrap, receipt.topic) | {receipt.partition: receipt.offset}
    records = read_topic(bootstrap, receipt.topic, start=start, idle_s=0.5)
    record = next(
        r for r in records if (r.partition, r.offset) == (receipt.partition, receipt.offset)
    )
    return record.key, UserAction.model_validate_json(record.value)


def call_tools(
    server: FastMCP, calls: Sequence[tuple[str, dict[str, Any]]]
) -> list[CallToolResult]:
    """Call tools in order through the SDK's client, over its in-memory transport."""

    async def session_calls() -> list[CallToolResult]:
        async with create_connected_server_and_client_session(server) as session:
            return [await session.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(session_calls)


def list_tools(server: FastMCP) -> list[Tool]:
    """The tools the server offers, as a client sees them."""

    async def listed() -> list[Tool]:
        async with create_connected_server_and_client_session(server) as session:
            return (await session.list_tools()).tools

    return anyio.run(listed)
