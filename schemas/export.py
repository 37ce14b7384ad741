"""Generate the JSON Schema files in schemas/json/ from the models.

Non-Python producers validate against these files; a test keeps them equal to
the models (run ``memstream schemas export`` after changing a model).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from schemas.deadletter import DeadLetter
from schemas.events import CrmWebhook, DialogueEvent, UserAction
from schemas.hints import MemoryHint
from schemas.memory import MemoryRecord
from schemas.ops import MemoryOperation

JSON_DIR = Path(__file__).parent / "json"

MODELS: dict[str, type[BaseModel]] = {
    "dialogue.events": DialogueEvent,
    "user.actions": UserAction,
    "crm.webhooks": CrmWebhook,
    "memory.ops": MemoryOperation,
    "memory.dlq": DeadLetter,
    "memory.hints": MemoryHint,
    "memory.record": MemoryRecord,
}


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export(directory: Path = JSON_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = directory / f"{name}.schema.json"
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written
