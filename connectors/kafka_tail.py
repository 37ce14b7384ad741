"""Following a topic as it grows: the records whose key matches, as they are committed.

For subscribers rather than jobs: no consumer group is joined and no offset
committed, so any number of followers read the same records independently,
and a follower that goes away leaves nothing behind. Reads are
``read_committed``: a record of an open or aborted transaction is never
handed out (the sink publishes hints in transactions).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from connectors import kafka_admin
from connectors.kafka_io import Record, consumer

# How long one poll waits: the follower yields None after each empty poll, so
# its caller can send a keep-alive or notice it should stop.
DEFAULT_POLL_S = 0.5


def follow(
    bootstrap: str,
    topic: str,
    *,
    key: str | None = None,
    key_prefix: str | None = None,
    from_beginning: bool = False,
    poll_s: float = DEFAULT_POLL_S,
) -> Iterator[Record | None]:
    """Records of ``topic`` with exactly ``key`` or a key starting with ``key_prefix``.

    From the end each partition has when the follower starts (only what
    comes from then on), or from its beginning. Yields None once positioned
    and after every poll that brought nothing, so the iteration never blocks
    longer than ``poll_s``; close the generator to stop.
    """
    count = kafka_admin.partition_counts(bootstrap, [topic]).get(topic)
    if count is None:
        raise KeyError(f"topic {topic!r} does not exist on {bootstrap}")
    # A group id is required by the client; nothing is ever committed under it.
    reader = consumer(bootstrap, f"memstream-follow-{uuid.uuid4().hex[:12]}", read_committed=True)
    try:
        # The log ends looked up now, not OFFSET_END (resolved at some later fetch):
        # a record produced once this returns is never skipped.
        starts = [
            OFFSET_BEGINNING
            if from_beginning
            else reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10.0)[1]
            for p in range(count)
        ]
        reader.assign([TopicPartition(topic, p, start) for p, start in enumerate(starts)])
        yield None  # positioned: what is produced from now on will be read
        while True:
            message = reader.poll(poll_s)
            if message is None:
                yield None
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"following {topic}: {error.str()}")
            raw_key = message.key()
            found = raw_key.decode("utf-8", "replace") if raw_key is not None else ""
            if key is not None and found != key:
                continue
            if key_prefix is not None and not found.startswith(key_prefix):
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            yield Record(str(message.topic()), partition, offset, found, message.value() or b"")
    finally:
        reader.close()
