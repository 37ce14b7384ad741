"""Session fixtures for integration tests: the real local services, started once.

`settings` runs ``infra.up`` (idempotent: services already running, e.g. from
`memstream infra up`, are reused) and, at the end of the session, stops only
the services this session started. Every test in this folder is marked
``integration`` here, so the folder decides the marker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import infra
from memstream.settings import Settings, get_settings

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def settings() -> Iterator[Settings]:
    """The project settings, with every local service up and healthy."""
    current = get_settings()
    reports = infra.up(current)
    yield current
    started = [r.name for r in reports if r.started]
    if started:
        infra.down(current, started)


@pytest.fixture(scope="session")
def kafka_bootstrap(settings: Settings) -> str:
    return settings.kafka.bootstrap


@pytest.fixture(scope="session")
def redis_url(settings: Settings) -> str:
    return settings.redis.url


@pytest.fixture(scope="session")
def neo4j_uri(settings: Settings) -> str:
    return settings.neo4j.uri


@pytest.fixture(scope="session")
def chroma_path(settings: Settings) -> Path:
    return settings.chroma_path


@pytest.fixture
def unique() -> str:
    """A short random suffix so a test's tenants, topics and keys are its own."""
    return uuid.uuid4().hex[:10]
