"""Which ``memory.ops`` record owns each hint, so a hint is published once per turn.

The sink publishes a hint in the Kafka transaction that commits the offset of
the ``request_hint`` operation asking for it (jobs/sink/job.py). That makes
one record's hint exactly-once, but the same request can be on ``memory.ops``
twice: a Faust worker killed between publishing a batch and storing its
states publishes it again, and a Flink job started afresh replays every
operation. Those copies are byte-identical but sit at other offsets.

So the first record to ask for a hint claims it here, by its position
(``partition:offset``). A record asking again for a hint it owns is the same
record redelivered (its earlier transaction aborted, or the sink died before
committing it): it publishes. A record asking for a hint another record owns
is a copy: it does not. The claim lives outside every user's key space, so
an erasure does not reopen it, and expires after ``ttl`` (a copy arriving
later than that would publish the hint again).
"""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import redis

from connectors.redis_memory import RedisKeys

# SET NX with an expiry, else compare: one round trip, atomic.
_CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
"""


class HintClaims:
    """Claims of hints by the ``memory.ops`` record that requested them."""

    def __init__(
        self, client: redis.Redis, *, namespace: str | None = None, ttl: timedelta
    ) -> None:
        """``client`` with ``decode_responses=True``; ``namespace`` as the stores'."""
        self.client = client
        self.keys = RedisKeys(namespace)
        self.ttl_ms = int(ttl.total_seconds() * 1000)
        self._claim = client.register_script(_CLAIM)

    def claim(self, tenant_id: str, hint_id: str, owner: str) -> bool:
        """Whether ``owner`` (``"partition:offset"``) owns the hint: first to ask, or again."""
        key = self.keys.hint_owner(tenant_id, hint_id)
        return bool(cast(int, self._claim(keys=[key], args=[owner, self.ttl_ms])))
