"""``memstream serve``'s dashboard, loaded in headless Chromium, over real lag on the real broker.

The server runs as the CLI starts it (a subprocess, real stores), sampling one
private consumer group every half second. The test appends to a private topic
and moves the group's committed offsets in rounds, so its lag and throughput
change between samples; then Chromium loads ``/dashboard`` and dumps the DOM
its script built. The charts must hold a line per series for the group with a
point per sample, the table the group's status and the lag in messages that
``memstream lag``'s code computes from Kafka on its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import new_key
from metrics_helpers import Traffic, free_port, private_topic, wait_until

from connectors.kafka_offsets import OffsetReader
from jobs.ops.lag import LagMonitor
from pipelines.lag import Rules, Status

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVE = "import typer; from jobs.cli.serve import serve; typer.run(serve)"
PARTITIONS = 2
# Fast enough for several samples per round of traffic, slow enough to be cheap.
SAMPLE_INTERVAL_S = 0.5
ROUNDS = 4
# The flags of the brief for a container: no sandbox (root), no GPU, no
# background requests (no network here), /tmp instead of a small /dev/shm.
CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
]
# Virtual time lets the page's fetch and drawing finish before the DOM is
# dumped, without a wall-clock sleep; 10 s of it is many polls of the page.
VIRTUAL_TIME_MS = 10_000


class Dom(HTMLParser):
    """The dashboard's polylines and table cells, from a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, str]] = []
        self.cells: dict[tuple[str, str], str] = {}  # (group, column) -> text
        self.body: dict[str, str] = {}
        self._row: str | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "polyline":
            self.lines.append(found)
        elif tag == "body":
            self.body = found
        elif tag == "tr" and "data-group" in found:
            self._row = found["data-group"]
        elif tag == "td" and self._row is not None:
            self._cell = found.get("class", "").split()[0]

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._cell is not None:
            key = (self._row, self._cell)
            self.cells[key] = self.cells.get(key, "") + data


@pytest.fixture
def dashboard(kafka_bootstrap: str, unique: str, tmp_path: Path) -> Iterator[tuple[str, Traffic]]:
    """``memstream serve`` sampling a private group with some lag; yields (base URL, traffic)."""
    with private_topic(kafka_bootstrap, f"dash-{unique}", PARTITIONS) as topic:
        traffic = Traffic(kafka_bootstrap, topic, f"dash-{unique}-group", PARTITIONS)
        traffic.produce(5)
        traffic.consume(2)  # the group exists (with lag) before the server looks for it
        keys_file = tmp_path / "keys.json"
        keys_file.write_text(json.dumps({new_key(): f"dash-{unique}"}))
        port = free_port()
        env = {
            **os.environ,
            "MEMSTREAM_METRICS__LAG_GROUPS": json.dumps([traffic.group]),
            "MEMSTREAM_METRICS__LAG_INTERVAL_S": str(SAMPLE_INTERVAL_S),
        }
        command = [
            sys.executable, "-c", SERVE,
            "--keys-file", str(keys_file), "--port", str(port), "--log-level", "warning",
        ]  # fmt: skip
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            server = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command, cwd=REPO_ROOT, env=env, stdout=out, stderr=out
            )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until(lambda: _answers(base) or server.poll() is not None, "memstream serve")
            assert server.poll() is None, log.read_text(errors="replace")[-3000:]
            yield base, traffic
        finally:
            server.terminate()
            server.wait(timeout=30)
            traffic.close()


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _data(base: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}/dashboard/data", timeout=10)
    answer.raise_for_status()
    document: dict[str, Any] = answer.json()
    return document


def _sampled(base: str, group: str) -> int:
    return len(_data(base)["series"].get(group, []))


def _next_samples(base: str, group: str, count: int) -> None:
    """Wait until the server has taken ``count`` more samples of ``group``."""
    seen = _sampled(base, group)
    wait_until(lambda: _sampled(base, group) >= seen + count, f"{count} new lag sample(s)")


def _render(url: str, profile: Path) -> str:
    command = [
        *CHROMIUM,
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={VIRTUAL_TIME_MS}",
        "--dump-dom",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_dashboard_charts_real_lag_and_throughput(
    dashboard: tuple[str, Traffic], kafka_bootstrap: str, tmp_path: Path
) -> None:
    base, traffic = dashboard
    group = traffic.group
    _next_samples(base, group, 1)
    for _ in range(ROUNDS):
        traffic.produce(10)
        traffic.consume(6)
        _next_samples(base, group, 1)
    # Traffic over; two more samples, so the latest was taken wholly after it.
    _next_samples(base, group, 2)

    expected = LagMonitor(OffsetReader(kafka_bootstrap), Rules()).refresh([group])
    assert [g.lag for g in expected] == [traffic.lag]
    data = _data(base)
    points = data["series"][group]
    assert any(p["in_per_s"] and p["in_per_s"] > 0 for p in points)
    assert any(p["out_per_s"] and p["out_per_s"] > 0 for p in points)

    dom = Dom()
    dom.feed(_render(f"{base}/dashboard", tmp_path / "chromium-profile"))
    assert dom.body.get("data-rendered") == "true"
    lines = {(line["data-group"], line["data-series"]): line for line in dom.lines}
    for series in ("lag", "lag_seconds", "in", "out"):
        line = lines[(group, series)]
        drawn = re.findall(r"[\d.]+,[\d.]+", line["points"])
        assert len(drawn) == int(line["data-points"]) >= 2, (series, line)
    assert len(set(lines[(group, "lag")]["points"].split())) > 1  # the lag moved: not flat

    assert dom.cells[(group, "group")] == group
    assert dom.cells[(group, "lag")] == str(expected[0].lag)
    status = dom.cells[(group, "status")]
    assert status in {s.value for s in Status}
    latest = {g["group"]: g for g in _data(base)["latest"]["groups"]}
    assert status == latest[group]["status"]
    assert float(dom.cells[(group, "lag-seconds")]) > 0
