"""Chroma: embedded by default (nothing to run), or a managed ``chroma run`` server.

Embedded mode is chromadb's ``PersistentClient`` on ``settings.chroma_path``
inside the process that uses it (connectors/chroma_memory.py opens it);
``chroma.mode = "server"`` starts the CLI that the chromadb package installs
beside the Python interpreter.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx

from infra.service import Mode, Service
from infra.toolchain import ToolchainError
from memstream.settings import Settings


def chroma_cli() -> str:
    """The ``chroma`` executable of this environment (next to python, else on PATH)."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.is_file():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise ToolchainError("the `chroma` command is missing: is chromadb installed?")
    return found


class ChromaServer(Service):
    """Episodic-memory store: embedded, or a managed Chroma server."""

    name = "chroma"
    # The server is a single Rust/Python process that exits promptly on SIGTERM.
    stop_timeout_s = 10.0

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        # Embedded or server, the data lives where settings say (default <state_dir>/chroma).
        self.data_dir = settings.chroma_path

    @property
    def mode(self) -> Mode:
        """Embedded unless ``chroma.mode`` is "server"."""
        return "managed" if self.settings.chroma.mode == "server" else "embedded"

    @property
    def port(self) -> int | None:
        """The server port, None when embedded."""
        return self.settings.chroma.port if self.mode == "managed" else None

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://{self.settings.chroma.host}:{self.settings.chroma.port}"

    def healthy(self) -> bool:
        """Embedded: always; server: the v2 heartbeat answers."""
        if self.mode == "embedded":
            return True
        try:
            return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def command(self) -> list[str]:
        """``chroma run`` on the data dir and port."""
        chroma = self.settings.chroma
        return [
            chroma_cli(),
            "run",
            "--path",
            str(self.data_dir),
            "--host",
            chroma.host,
            "--port",
            str(chroma.port),
        ]
