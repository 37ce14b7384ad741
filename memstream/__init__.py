"""memstream: memory for AI agents, from Kafka streams of dialogue.

The public Python API::

    from memstream import MemoryClient, MemoryService, get_settings

    service = MemoryService.from_settings()  # the stores and broker the settings name
    client = MemoryClient.in_process(service, tenant_id="acme")

The names are loaded on first use (PEP 562): ``import memstream`` loads no
torch, chromadb or store client; ``MemoryService`` does when it is first named.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.serve.memory_service import MemoryService
    from memstream.sdk import MemoryClient
    from memstream.settings import Settings, get_settings

# Public name -> the module defining it.
_EXPORTS = {
    "MemoryClient": "memstream.sdk",
    "MemoryService": "jobs.serve.memory_service",
    "Settings": "memstream.settings",
    "get_settings": "memstream.settings",
}

__all__ = ["MemoryClient", "MemoryService", "Settings", "get_settings"]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memstream' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
