"""The committed JSON Schema files are exactly what the models generate now.

If this fails after a model change, run ``memstream schemas export`` and commit
the regenerated files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.export import JSON_DIR, MODELS, export, render


@pytest.mark.parametrize("name", sorted(MODELS))
def test_committed_schema_matches_model(name: str) -> None:
    committed = (JSON_DIR / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == render(MODELS[name]), "run `memstream schemas export`"


def test_no_stale_schema_files() -> None:
    committed = {path.name for path in JSON_DIR.glob("*.schema.json")}
    assert committed == {f"{name}.schema.json" for name in MODELS}


def test_export_writes_valid_draft_2020_12_documents(tmp_path: Path) -> None:
    written = export(tmp_path)
    assert len(written) == len(MODELS)
    for path in written:
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["additionalProperties"] is False
