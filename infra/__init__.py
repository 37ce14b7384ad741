"""Local services without Docker: Kafka (KRaft), Redis, Neo4j (embedded launcher), Chroma.

Use ``up(settings)``, ``down(settings)`` and ``status(settings)``; state lives
under ``settings.state_dir``, downloads and builds under ``settings.cache_dir``.
"""

from infra.lifecycle import SERVICE_NAMES, StartReport, down, status, up
from infra.service import ServiceStartError, ServiceStatus
from infra.toolchain import ToolchainError

__all__ = [
    "SERVICE_NAMES",
    "ServiceStartError",
    "ServiceStatus",
    "StartReport",
    "ToolchainError",
    "down",
    "status",
    "up",
]
