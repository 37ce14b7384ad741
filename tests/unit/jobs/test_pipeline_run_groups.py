"""The sample run waits on the consumer groups the settings name (not on built-in names)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from jobs.ops import pipeline_run
from jobs.ops.pipeline_run import Engine, _Progress, _wait_applied
from memstream.settings import Settings


@pytest.mark.parametrize(
    ("engine", "ingest_env", "ingest_group"),
    [
        (Engine.FAUST, "MEMSTREAM_INGEST__GROUP_ID", "my-ingest"),
        (Engine.FLINK, "MEMSTREAM_FLINK__GROUP_ID", "my-flink"),
    ],
)
def test_waits_on_the_groups_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, ingest_env: str, ingest_group: str
) -> None:
    monkeypatch.setenv("MEMSTREAM_SINK__GROUP_ID", "my-sink")
    monkeypatch.setenv(ingest_env, ingest_group)
    settings = Settings()
    asked: list[tuple[str, list[str]]] = []

    def progress(reader: object, bootstrap: str, group: str, topics: list[str]) -> _Progress:
        asked.append((group, topics))
        return _Progress(committed=10, end=10)

    monkeypatch.setattr(pipeline_run, "OffsetReader", lambda bootstrap: object())
    monkeypatch.setattr(pipeline_run, "_progress", progress)
    monkeypatch.setattr(pipeline_run, "_spooled", lambda settings, ns: 0)
    running = SimpleNamespace(process=SimpleNamespace(poll=lambda: None, returncode=None))

    _wait_applied(settings, engine, running, running, "ns.", Console(quiet=True))  # type: ignore[arg-type]

    groups = [group for group, _ in asked]
    assert groups == [f"ns.{ingest_group}", "ns.my-sink"]
    assert asked[1][1] == ["ns.memory.ops"]
