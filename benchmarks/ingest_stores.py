"""What bench_ingest.py reads back from the stores: when each dialogue turn becomes visible.

Every dialogue turn the ingest job takes in yields an ``append_turn`` operation
(pipelines/review/reviewer.py), which the sink job writes to the session's
sorted set of turns in Redis working memory (connectors/redis_memory.py). That
is the engine-independent "visible in the stores" signal: ``TurnWatcher`` polls
those sorted sets and notes, per turn, the first poll that sees it.

A session keeps only its last ``TURNS_KEPT`` turns, and one sink batch can
write more than that for a session, so a turn may be trimmed before any poll
sees it. The sink applies one user's operations in order (``memory.ops`` is
keyed by user, one partition per key), so a later turn of the session being
visible means this one was written too: a turn counts as seen once the
session's highest turn index reaches it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import cast

import redis

from connectors.neo4j_memory import Neo4jMemory
from connectors.redis_memory import RedisKeys
from memstream.settings import Settings

# Same cadence as ingest_readers.Watcher's Kafka poll, so both columns have
# the same resolution (a visible turn is noted at most one poll late).
POLL_S = 0.05

TurnKey = tuple[str, str, str, int]  # (tenant, user, session, turn_index)


def turn_key(value: bytes) -> TurnKey:
    """The turn a ``dialogue.events`` record holds, as the watcher names it."""
    event = json.loads(value)
    return (event["tenant_id"], event["user_id"], event["session_id"], int(event["turn_index"]))


class TurnWatcher:
    """Polls Redis working memory in a thread: when each expected turn is first visible."""

    def __init__(self, redis_url: str, store_namespace: str, turns: Iterable[TurnKey]) -> None:
        """Start polling for ``turns`` in the sorted sets of ``store_namespace``."""
        self._client = redis.Redis.from_url(redis_url, decode_responses=True)
        keys = RedisKeys(store_namespace)
        # Redis key of a session -> its turns not seen yet; only the thread mutates it.
        self._unseen: dict[str, list[TurnKey]] = {}
        for turn in turns:
            tenant, user, session, _ = turn
            self._unseen.setdefault(keys.user(tenant, user, "turns", session), []).append(turn)
        self._first_seen_ms: dict[TurnKey, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="bench-turns", daemon=True)
        self._thread.start()

    def first_seen_ms(self) -> dict[TurnKey, int]:
        """Every turn seen so far, with the wall-clock time (ms) of the first poll that saw it."""
        with self._lock:
            return dict(self._first_seen_ms)

    def wait_seen(
        self, turns: Iterable[TurnKey], timeout_s: float, check: Callable[[], None]
    ) -> bool:
        """Wait until every one of ``turns`` has been seen; False on timeout.

        ``check`` runs at every poll and raises to give up early (the sink exited).
        """
        wanted = set(turns)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if wanted <= self.first_seen_ms().keys():
                return True
            check()
            time.sleep(POLL_S)
        return False

    def _poll(self) -> None:
        try:
            while not self._stop.wait(POLL_S):
                sessions = [key for key, unseen in self._unseen.items() if unseen]
                pipe = self._client.pipeline(transaction=False)
                for key in sessions:
                    pipe.zrange(key, -1, -1, withscores=True)  # the highest turn index
                replies = cast(list[list[tuple[str, float]]], pipe.execute())
                seen_ms = time.time_ns() // 1_000_000
                for key, reply in zip(sessions, replies, strict=True):
                    if reply:
                        self._note(key, int(reply[0][1]), seen_ms)
        finally:
            self._client.close()

    def _note(self, key: str, latest: int, seen_ms: int) -> None:
        unseen = []
        with self._lock:
            for turn in self._unseen[key]:
                if turn[3] <= latest:
                    self._first_seen_ms.setdefault(turn, seen_ms)
                else:
                    unseen.append(turn)
        self._unseen[key] = unseen

    def close(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join(timeout=10)


def drop_store_namespace(settings: Settings, store_namespace: str) -> None:
    """Delete what a sink wrote under ``store_namespace`` in Redis and Neo4j.

    Chroma is not touched here: the benchmark's sink runs an embedded Chroma in
    a directory of its own, removed with the directory.
    """
    client = redis.Redis.from_url(settings.redis.url, decode_responses=True)
    try:
        # The namespace's keys and its spools' (jobs/sink_lane.spool_namespace)
        # all start with it; it is unique per run, so the pattern is too.
        doomed = list(client.scan_iter(match=f"{store_namespace}*", count=1000))
        if doomed:
            client.delete(*doomed)
    finally:
        client.close()
    neo = settings.neo4j
    password = neo.password.get_secret_value()
    graph = Neo4jMemory.connect(neo.uri, (neo.user, password) if password else None)
    try:
        # Every node carries its namespace in ``ns`` (connectors/neo4j_memory.py).
        graph.driver.execute_query("MATCH (n {ns: $ns}) DETACH DELETE n", ns=store_namespace)
    finally:
        graph.close()
