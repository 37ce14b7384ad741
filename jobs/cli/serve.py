"""``memstream serve`` (the HTTP API under uvicorn) and ``memstream mcp`` (the MCP tools).

Both build one :class:`~jobs.serve.memory_service.MemoryService` from the settings
(Redis, Chroma, Neo4j, MiniLM, a Kafka producer) and refuse to start without
API keys: an API where every call is a 401 is a misconfiguration, not a server.
The key → tenant map is a JSON object ``{"<key>": "<tenant>"}`` in ``--keys-file``
(``jobs.serve.keys``). ``memstream mcp`` serves the one tenant of the key in
``--key-file``; over stdio it writes nothing but protocol messages to stdout.

The service modules are imported inside the commands: they load chromadb and
the encoders, which ``memstream --help`` should not wait for.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from jobs.serve.keys import (
    ApiKeyError,
    ApiKeyring,
    OperatorKeyring,
    load_keyring,
    load_operator_keyring,
)
from memstream.settings import get_settings

if TYPE_CHECKING:
    from jobs.serve.memory_service import MemoryService

EXIT_USAGE = 2
# Loopback by default: exposing the API beyond the machine is a deliberate choice.
DEFAULT_HOST = "127.0.0.1"
# Outside memstream's service ports (infra: 16379, 17687, 18000, 19092-3) and
# uvicorn's 8000, which a developer's other app often holds.
DEFAULT_PORT = 18080
DEFAULT_MCP_PORT = 18081  # the MCP HTTP transports, beside the API

_err = Console(stderr=True, highlight=False, soft_wrap=True)

KeysFile = Annotated[
    Path | None,
    typer.Option(
        "--keys-file",
        exists=True,
        dir_okay=False,
        help='JSON object of API key -> tenant, e.g. {"k-1f3c…": "acme"}.',
    ),
]


class Transport(StrEnum):
    """How an MCP client reaches the server."""

    STDIO = "stdio"
    SSE = "sse"
    STREAMABLE_HTTP = "streamable-http"


def _keyring(keys_file: Path | None) -> ApiKeyring:
    try:
        api = get_settings().api
        keyring = load_keyring(api.keys, keys_file or api.keys_file)
    except ApiKeyError as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if not len(keyring):
        _err.print(
            "error: no API keys configured: pass --keys-file, or set MEMSTREAM_API__KEYS "
            "(JSON key -> tenant) or MEMSTREAM_API__KEYS_FILE"
        )
        raise typer.Exit(EXIT_USAGE)
    return keyring


OperatorKeysFile = Annotated[
    Path | None,
    typer.Option(
        "--operator-keys-file",
        exists=True,
        dir_okay=False,
        help='JSON object of operator key -> "<tenant>/<reviewer>": serves /review.',
    ),
]


def _operator_keyring(keys_file: Path | None, api_keys: ApiKeyring) -> OperatorKeyring:
    try:
        api = get_settings().api
        return load_operator_keyring(
            api.operator_keys, keys_file or api.operator_keys_file, api_keys
        )
    except ApiKeyError as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


def _service() -> MemoryService:
    from jobs.serve.memory_service import MemoryService

    # jobs.stores.open_stores: the stores the sink writes (Chroma server mode included).
    return MemoryService.from_settings(get_settings())


def serve(
    keys_file: KeysFile = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = DEFAULT_PORT,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    operator_keys_file: OperatorKeysFile = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) until Ctrl-C.

    Also /metrics (Prometheus) and /dashboard (consumer lag and throughput,
    sampled every settings metrics.lag_interval_s), neither needing a key;
    with operator keys, /review (the human review console, jobs/serve/review.py).
    """
    import uvicorn

    from connectors.kafka_offsets import OffsetReader
    from jobs.ops.lag import LagMonitor, rules_from_settings
    from jobs.serve.api import create_app
    from jobs.serve.dashboard import LagSampler

    keyring = _keyring(keys_file)
    operators = _operator_keyring(operator_keys_file, keyring)
    settings = get_settings()
    metrics = settings.metrics
    sampler = LagSampler(
        LagMonitor(OffsetReader(settings.kafka.bootstrap), rules_from_settings(settings)),
        metrics.lag_groups,
        metrics.lag_interval_s,
        metrics.lag_history,
    ).start()
    service = _service()
    app = create_app(service, keyring, sampler, keepalive_s=settings.hints.keepalive_s)
    if len(operators):
        from jobs.serve.review import ReviewConsole, add_review

        add_review(app, ReviewConsole(service, settings.api.review_max_items), operators)
    _err.print(
        f"memstream API on http://{host}:{port}/docs ({len(keyring)} key(s)), "
        f"dashboard on http://{host}:{port}/dashboard"
        + (f", review console on http://{host}:{port}/review" if len(operators) else "")
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        sampler.stop()
        service.close()


def mcp(
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            exists=True,
            dir_okay=False,
            help="File holding this server's API key: its tenant is the one the tools serve "
            "(default: MEMSTREAM_API__MCP_KEY).",
        ),
    ] = None,
    keys_file: KeysFile = None,
    transport: Annotated[Transport, typer.Option(help="MCP transport.")] = Transport.STDIO,
    host: Annotated[str, typer.Option(help="Interface (HTTP transports).")] = DEFAULT_HOST,
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="TCP port (HTTP transports).")
    ] = DEFAULT_MCP_PORT,
) -> None:
    """Serve the MCP tools read, search, store, history and confirm for one tenant."""
    from jobs.serve.mcp_server import mcp_server_for_key

    keyring = _keyring(keys_file)
    if key_file is not None:
        api_key = key_file.read_text(encoding="utf-8").strip()
    elif (configured := get_settings().api.mcp_key) is not None:
        api_key = configured.get_secret_value()
    else:
        _err.print("error: no key to serve: pass --key-file or set MEMSTREAM_API__MCP_KEY")
        raise typer.Exit(EXIT_USAGE)
    try:
        server = mcp_server_for_key(_service(), keyring, api_key, host=host, port=port)
    except ApiKeyError as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    server.run(transport.value)
