"""Topics(namespace): the one place a namespace goes in front of a topic name."""

from __future__ import annotations

import pytest

from schemas.topics import (
    ALL_TOPICS,
    CRM_WEBHOOKS,
    DIALOGUE_EVENTS,
    INPUT_TOPICS,
    MEMORY_DLQ,
    MEMORY_OPS,
    MEMORY_PENDING,
    USER_ACTIONS,
    Topics,
)


def test_plain_names_without_a_namespace() -> None:
    topics = Topics()
    assert topics.memory_ops == MEMORY_OPS
    assert topics.pending == MEMORY_PENDING
    assert topics.dlq == MEMORY_DLQ
    assert topics.inputs == list(INPUT_TOPICS)


def test_every_name_carries_the_namespace() -> None:
    topics = Topics("run7.")
    assert topics.dialogue_events == "run7." + DIALOGUE_EVENTS
    assert topics.user_actions == "run7." + USER_ACTIONS
    assert topics.crm_webhooks == "run7." + CRM_WEBHOOKS
    assert topics.memory_ops == "run7.memory.ops"
    assert topics.pending == "run7.memory.pending"
    assert topics.dlq == "run7.memory.dlq"
    assert topics.inputs == ["run7." + t for t in INPUT_TOPICS]
    assert topics.outputs == ["run7.memory.ops", "run7.memory.pending", "run7.memory.dlq"]
    assert topics.all == ["run7." + t for t in ALL_TOPICS]
    assert topics.name("anything") == "run7.anything"
    assert topics.names(["a", "b"]) == ["run7.a", "run7.b"]


def test_base_undoes_the_namespace() -> None:
    topics = Topics("ns.")
    assert topics.base(topics.memory_ops) == MEMORY_OPS
    with pytest.raises(ValueError, match="not under namespace"):
        topics.base("other.memory.ops")
