"""Local services without Docker: Kafka (KRaft), Redis, Neo4j (embedded launcher), Chroma.

Opt-in: a Flink session cluster (``flink=True`` or the name "flink"; infra/flink_cluster.py).

Use ``up(settings)``, ``down(settings)`` and ``status(settings)``; state lives
under ``settings.state_dir``, downloads and builds under ``settings.cache_dir``.
"""

from infra.flink_cluster import overview as flink_overview
from infra.lifecycle import FLINK, KNOWN_NAMES, SERVICE_NAMES, StartReport, down, status, up
from infra.service import ServiceStartError, ServiceStatus
from infra.toolchain import ToolchainError

__all__ = [
    "FLINK",
    "KNOWN_NAMES",
    "SERVICE_NAMES",
    "ServiceStartError",
    "ServiceStatus",
    "StartReport",
    "ToolchainError",
    "down",
    "flink_overview",
    "status",
    "up",
]
