"""``import memstream``: the public names, loaded lazily (no torch, chromadb or store client)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import memstream

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "torch",
    "chromadb",
    "neo4j",
    "redis",
    "confluent_kafka",
    "spacy",
    "jobs.serve.memory_service",
)


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return [
        m
        for m in json.loads(out.splitlines()[-1])
        if m.split(".")[0] in {h.split(".")[0] for h in HEAVY} or m in HEAVY
    ]


def test_import_memstream_loads_no_heavy_module() -> None:
    assert _loaded_after("import memstream") == []


def test_the_client_and_settings_load_without_the_service_stack() -> None:
    assert _loaded_after("from memstream import MemoryClient, get_settings") == []


def test_the_public_names_are_the_real_objects() -> None:
    from jobs.serve.memory_service import MemoryService
    from memstream.sdk import MemoryClient
    from memstream.settings import get_settings

    assert memstream.MemoryService is MemoryService
    assert memstream.MemoryClient is MemoryClient
    assert memstream.get_settings is get_settings
    assert callable(MemoryService.from_settings)
    assert {"MemoryClient", "MemoryService", "get_settings"} <= set(dir(memstream))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        memstream.no_such_thing  # noqa: B018
