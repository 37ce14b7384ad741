"""Redis: Debian's redis-server on the project port, data under the state dir.

Persistence is AOF (``appendonly yes``, fsync every second), not RDB snapshots:
Redis holds the pending queue and the backpressure spool, whose whole point is
that operations survive a store outage (docs/guarantees.md), so a restart must give
them back; an RDB snapshot could lose everything since the last save, and
``--save ""`` would lose all. At most about one second of writes is lost on a
crash, which the Kafka replay covers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import redis

from infra.service import Mode, Service
from infra.toolchain import ToolchainError

# Debian's package name for the server binary.
_DEBIAN_PACKAGE = "redis-server"


def ensure_redis_server() -> str:
    """The redis-server executable, installed with apt-get when missing."""
    found = shutil.which("redis-server")
    if found is not None:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    for step in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", _DEBIAN_PACKAGE]):
        done = subprocess.run([*sudo, *step], capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0:
            raise ToolchainError(
                f"could not install {_DEBIAN_PACKAGE} ({' '.join(step)}): {done.stderr[-2000:]}"
            )
    found = shutil.which("redis-server")
    if found is None:
        raise ToolchainError(f"{_DEBIAN_PACKAGE} installed but redis-server is not on PATH")
    return found


class RedisServer(Service):
    """The working-memory Redis (or an existing server when ``redis.managed`` is false)."""

    name = "redis"
    # Redis answers SIGTERM by writing the AOF and exiting, well under a second
    # for development data; 15 s leaves room for a large spool.
    stop_timeout_s = 15.0

    @property
    def mode(self) -> Mode:
        """Managed unless settings point at an existing server."""
        return "managed" if self.settings.redis.managed else "external"

    @property
    def port(self) -> int | None:
        """The Redis port."""
        return self.settings.redis.port

    def healthy(self) -> bool:
        """PING answered."""
        client = redis.Redis.from_url(
            self.settings.redis.url, socket_connect_timeout=1, socket_timeout=1
        )
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    @property
    def auth_file(self) -> Path:
        """Config file holding the password (only when one is set)."""
        return self.data_dir / "auth.conf"

    def prepare(self) -> None:
        """Create the data dir; write the password, if any, to a private config file."""
        super().prepare()
        password = self.settings.redis.password
        if password is not None:
            # A file, not argv: argv shows in `ps` and in the log's start line.
            self.auth_file.touch(mode=0o600)
            self.auth_file.chmod(0o600)
            self.auth_file.write_text(f"requirepass {password.get_secret_value()}\n")

    def command(self) -> list[str]:
        """redis-server in the foreground, bound to the configured host and port."""
        settings = self.settings.redis
        # redis-server reads a config file given as its first argument.
        config = [str(self.auth_file)] if settings.password is not None else []
        return [
            ensure_redis_server(),
            *config,
            "--bind",
            settings.host,
            "--port",
            str(settings.port),
            "--dir",
            str(self.data_dir),
            "--daemonize",
            "no",
            # Output to stdout, which infra/process.py sends to the log file.
            "--logfile",
            "",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
        ]
