"""Subscribing to memory.hints over the real broker: the CLI, the SSE stream, the SDK.

Hints of two tenants (both with a user ``pat``) are on a private
``memory.hints``; every subscriber is bound to one tenant and must hand out
that tenant's hints only, in order, the live ones as well as the kept ones.
The API runs under uvicorn with the real ``MemoryService`` (stores and
broker of the test's namespace).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import uvicorn
from metrics_helpers import free_port

from connectors import kafka_admin
from connectors.kafka_io import KeyedProducer
from jobs.serve.api import create_app
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MemoryService
from memstream.sdk import MemoryClient
from memstream.settings import Settings
from schemas.hints import HintSignal, MemoryHint
from schemas.lineage import SourceLineage
from schemas.topics import MEMORY_HINTS, Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# A subscriber that has not delivered a hint published a moment ago within this is stuck.
WAIT_S = 60.0


def hint(tenant: str, user: str, n: int) -> MemoryHint:
    return MemoryHint(
        hint_id=f"h_{tenant}_{user}_{n}",
        tenant_id=tenant,
        user_id=user,
        session_id="s1",
        turn_index=n,
        event_id=f"{tenant}-{user}-{n}",
        ts=T0,
        reason="explicit",
        signals=[HintSignal(name="memory_cue", evidence="as I said")],
        query="As I said, call me on my number.",
        context=f"Key:\n- {tenant}'s {user} phone is 0770090012{n}",
        hits=[],
        lineage=SourceLineage(
            topic="dialogue.events", partition=0, offset=n, event_id=f"{tenant}-{user}-{n}"
        ),
        published_at=T0,
    )


def publish(bootstrap: str, topic: str, *hints: MemoryHint) -> None:
    producer = KeyedProducer(bootstrap, client_id="memstream-hint-test")
    for h in hints:
        producer.send(topic, h.model_dump_json().encode(), key=h.key)
    producer.flush()


@pytest.fixture
def namespace(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    prefix = f"hintsub-{unique}."
    topic = Topics(prefix).name(MEMORY_HINTS)
    kafka_admin.ensure_topics(kafka_bootstrap, [kafka_admin.TopicSpec(topic, 3)])
    publish(
        kafka_bootstrap,
        topic,
        hint("acme", "pat", 1),
        hint("globex", "pat", 1),
        hint("acme", "sam", 1),
        hint("acme", "pat", 2),
    )
    yield prefix
    kafka_admin.delete_topics(kafka_bootstrap, [topic])


def _cli(namespace: str, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "jobs.cli.app", "hints", "--namespace", namespace, *args]
    return subprocess.Popen(  # noqa: S603 - our own interpreter and module
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _json_lines(process: subprocess.Popen[str]) -> list[MemoryHint]:
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, err
    return [MemoryHint.model_validate_json(line) for line in out.splitlines()]


def test_cli_shows_one_users_hints_and_never_another_tenants(namespace: str) -> None:
    args = ("--tenant", "acme", "--user", "pat", "--from-beginning", "--json", "--count", "2")
    shown = _json_lines(_cli(namespace, *args))
    assert [h.hint_id for h in shown] == ["h_acme_pat_1", "h_acme_pat_2"]


def test_cli_follows_a_whole_tenant_and_prints_the_context(namespace: str) -> None:
    args = ("--tenant", "acme", "--from-beginning", "--count", "3")
    process = _cli(namespace, *args)
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, err
    assert out.count("── h_acme_") == 3 and "globex" not in out
    assert "acme:pat · turn 1 of s1" in out and "explicit: memory_cue (as I said)" in out
    assert "- acme's sam phone is 07700900121" in out


def test_cli_delivers_a_hint_published_after_it_started(
    namespace: str, kafka_bootstrap: str
) -> None:
    process = _cli(namespace, "--tenant", "globex", "--json", "--count", "1")
    assert process.stderr is not None
    line = process.stderr.readline()  # printed once the follower is positioned
    assert line.startswith("following"), line
    publish(
        kafka_bootstrap, Topics(namespace).hints, hint("acme", "pat", 3), hint("globex", "pat", 9)
    )
    shown = _json_lines(process)
    assert [h.hint_id for h in shown] == ["h_globex_pat_9"]


def test_cli_refuses_a_bad_tenant_id(namespace: str) -> None:
    process = _cli(namespace, "--tenant", "acme:pat")
    _, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 2 and "--tenant must match" in err


@pytest.fixture
def api(settings: Settings, namespace: str) -> Iterator[tuple[str, dict[str, str]]]:
    """The HTTP API under uvicorn over the namespace: (base url, tenant -> key)."""
    service = MemoryService.from_settings(settings, namespace)
    keys = {"acme": "key-acme-" + namespace, "globex": "key-globex-" + namespace}
    app = create_app(service, ApiKeyring({k: t for t, k in keys.items()}), keepalive_s=1.0)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield base, keys
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        service.close()


def _events(lines: Iterator[str], n: int) -> list[MemoryHint]:
    hints: list[MemoryHint] = []
    for line in lines:
        if line.startswith("data: "):
            hints.append(MemoryHint.model_validate_json(line[len("data: ") :]))
            if len(hints) == n:
                break
    return hints


def test_sse_stream_is_scoped_to_the_keys_tenant(
    api: tuple[str, dict[str, str]], namespace: str, kafka_bootstrap: str
) -> None:
    base, keys = api
    headers = {"Authorization": f"Bearer {keys['globex']}"}
    timeout = httpx.Timeout(WAIT_S)
    with httpx.stream(
        "GET",
        f"{base}/v1/hints",
        headers=headers,
        timeout=timeout,
        params={"from_beginning": "true"},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        assert next(lines) == ": following memory.hints"
        (kept,) = _events(lines, 1)
        assert kept.hint_id == "h_globex_pat_1"
        # Live: another tenant's hint for a user of the same name, then its own.
        publish(
            kafka_bootstrap,
            Topics(namespace).hints,
            hint("acme", "pat", 4),
            hint("globex", "pat", 5),
        )
        (live,) = _events(lines, 1)
        assert live.hint_id == "h_globex_pat_5"


def test_sse_stream_of_one_user_and_its_keepalive(api: tuple[str, dict[str, str]]) -> None:
    base, keys = api
    headers = {"X-API-Key": keys["acme"]}
    with httpx.stream(
        "GET",
        f"{base}/v1/users/pat/hints",
        headers=headers,
        timeout=httpx.Timeout(WAIT_S),
        params={"from_beginning": "true"},
    ) as response:
        lines = response.iter_lines()
        received = []
        for line in lines:
            received.append(line)
            if line == ": keep-alive":
                break
    ids = [line.removeprefix("id: ") for line in received if line.startswith("id: ")]
    assert ids == ["h_acme_pat_1", "h_acme_pat_2"]
    assert "event: hint" in received


def test_sse_stream_needs_a_key(api: tuple[str, dict[str, str]]) -> None:
    base, _ = api
    assert httpx.get(f"{base}/v1/users/pat/hints", timeout=WAIT_S).status_code == 401


def test_sdk_hints_over_http_and_in_process(
    api: tuple[str, dict[str, str]], settings: Settings, namespace: str
) -> None:
    base, keys = api
    with MemoryClient.over_http(base, keys["acme"]) as client:
        stream = client.hints("sam", from_beginning=True)
        first = next(stream)
        stream.close()
    assert (first.key, first.hint_id) == ("acme:sam", "h_acme_sam_1")

    service = MemoryService.from_settings(settings, namespace)
    try:
        local = MemoryClient.in_process(service, "globex").hints("pat", from_beginning=True)
        assert next(local).hint_id == "h_globex_pat_1"
        local.close()
    finally:
        service.close()
