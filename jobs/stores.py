"""The one place the settings become store clients: :func:`open_stores`.

Every job that reads or writes memory — the query service (``memstream serve``,
``memstream mcp``), the sink, the sample run's report, ``memstream trace``,
replay and the audit, and the benchmarks — opens Redis, Chroma and Neo4j
here, so all of them reach the same stores: embedded Chroma at
``settings.chroma_path`` or the Chroma server when ``chroma.mode`` is
``server``, Neo4j with its credentials, Redis at its URL; and all of them in
the same store namespace (``None``: live memory; a name: a shadow or test run).

The Chroma and Neo4j writers append their erase counts to the erasure audit
of the working tier's Redis (``ErasureAudit``), as the sink needs; a reader
never writes, so it does not matter there.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import NamedTuple

import chromadb
from chromadb.config import Settings as ChromaClientSettings

from connectors.chroma_memory import ChromaMemory
from connectors.namespace_dump import UserDump, dump_user, namespace_users
from connectors.neo4j_memory import Neo4jMemory
from connectors.protocols import DEFAULT_CHUNK_SIZE, DEFAULT_LATENCY_BUDGET_S
from connectors.redis_memory import RedisMemory
from memstream.settings import Settings, get_settings


class Stores(NamedTuple):
    """A connector of each tier, in one store namespace; a context manager that closes them."""

    working: RedisMemory
    episodic: ChromaMemory
    semantic: Neo4jMemory

    def setup(self) -> None:
        """Create what each store needs (constraints, collections); safe to call again."""
        for store in self:
            store.setup()

    def close(self) -> None:
        """Release the clients (the Neo4j driver; the others hold nothing to release)."""
        for store in self:
            store.close()

    def users(self) -> list[tuple[str, str]]:
        """Every (tenant, user) with memory in this namespace (``NamespaceReader``)."""
        return namespace_users(*self)

    def dump(self, tenant_id: str, user_id: str) -> UserDump:
        """All of one user's memory in this namespace (``NamespaceReader``)."""
        return dump_user(*self, tenant_id, user_id)

    def __enter__(self) -> Stores:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def chroma_client(settings: Settings) -> chromadb.ClientAPI:
    """The Chroma the settings name: the server (``chroma.mode=server``) or the embedded store."""
    chroma = settings.chroma
    if chroma.mode == "server":
        return chromadb.HttpClient(
            host=chroma.host,
            port=chroma.port,
            settings=ChromaClientSettings(anonymized_telemetry=False),
        )
    return chromadb.PersistentClient(
        path=str(settings.chroma_path), settings=ChromaClientSettings(anonymized_telemetry=False)
    )


def open_stores(
    settings: Settings | None = None,
    namespace: str | None = None,
    *,
    latency_budget_s: float = DEFAULT_LATENCY_BUDGET_S,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    clock: Callable[[], datetime] | None = None,
) -> Stores:
    """Connect to the Redis, Chroma and Neo4j the settings name, in ``namespace``.

    ``settings`` None: :func:`~memstream.settings.get_settings`. ``namespace``
    None (or ``""``) is live memory. ``latency_budget_s`` is the Chroma and
    Neo4j writers' budget (the sink's backpressure; ``math.inf`` for a batch
    job without a spool). Working memory never reports a slow write as
    backpressure: it has no spool to fall back to, so a slow Redis is waited
    for. ``chunk_size`` and ``clock`` (default: the connectors' own) go to
    every connector (benchmarks and tests pin them). Use as ``with
    open_stores(settings) as stores:``, or keep the result and call
    ``close()`` (a long-lived service).
    """
    settings = settings or get_settings()
    namespace = namespace or None
    neo = settings.neo4j
    password = neo.password.get_secret_value()
    working = RedisMemory.from_url(
        settings.redis.url, namespace=namespace, latency_budget_s=math.inf
    )
    episodic = ChromaMemory(
        chroma_client(settings),
        namespace=namespace,
        latency_budget_s=latency_budget_s,
        erasure_audit=working.audit,
    )
    semantic = Neo4jMemory.connect(
        neo.uri,
        (neo.user, password) if password else None,
        namespace=namespace,
        latency_budget_s=latency_budget_s,
        erasure_audit=working.audit,
    )
    return Stores(working, episodic, semantic)
