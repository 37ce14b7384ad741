"""The review console of ``memstream serve``, driven in headless Chromium over the real stores.

Two tenants' users state facts through the real review stage (a vegan diet,
then an order it contradicts: held); their operations, episodes included, are
applied by the real Redis, Chroma and Neo4j writers. ``memstream serve`` runs
as the CLI starts it (a subprocess) with an operator key per tenant. Chromium
loads ``/review`` through the DevTools protocol, enters a key and reads the
DOM the page's script built: the tenant's held item with its cause, source
turn, contradicted fact and chain — and nothing of the other tenant's. A click
on Confirm publishes the API's ``confirm_memory`` event on ``user.actions``
with the reviewer's id; read back from Kafka, it is applied by the review
stage and the writers exactly as the ingest and sink jobs do, and the stores
then hold the committed fact with the reviewer in its lineage and the
decision in the review audit, which the reloaded page lists. An Edit &
confirm commits the corrected value the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import new_key, published_action
from metrics_helpers import free_port, wait_until
from websockets.sync.client import ClientConnection, connect

from jobs.serve.memory_service import MemoryService, MemoryStores
from memstream.settings import Settings
from pipelines.episodes import episode_ops
from pipelines.review import Reviewer, UserMemoryState
from schemas.events import DialogueEvent, Role, UserAction
from schemas.facts import ExtractedFact
from schemas.lineage import SourceLineage
from schemas.memory import MemoryState
from schemas.ops import MemoryOperation, OpType
from schemas.query import ActionReceipt
from schemas.topics import DIALOGUE_EVENTS, USER_ACTIONS

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVE = "import typer; from jobs.cli.serve import serve; typer.run(serve)"
# The server loads MiniLM and connects to every store before it listens.
SERVE_START_TIMEOUT_S = 120.0
# The flags of tests/integration/test_dashboard.py plus no QUIC, first-run,
# component or sync traffic: nothing leaves the machine.
CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
]
PAGE_WAIT_S = 60.0
T0 = datetime.now(UTC) - timedelta(hours=2)


@dataclass
class Flow:
    """The review stage and the real writers, fed as the ingest and sink jobs feed them."""

    stores: MemoryStores
    reviewer: Reviewer = field(default_factory=Reviewer)
    states: dict[tuple[str, str], UserMemoryState] = field(default_factory=dict)
    offset: int = 0

    def _state(self, tenant: str, user: str) -> UserMemoryState:
        return self.states.setdefault((tenant, user), self.reviewer.new_state())

    def apply(self, ops: list[MemoryOperation]) -> list[MemoryOperation]:
        for sink in (self.stores.redis, self.stores.chroma, self.stores.neo4j):
            sink.write(ops)
            sink.flush()
        return ops

    def says(
        self,
        tenant: str,
        user: str,
        event_id: str,
        text: str,
        fact: tuple[str, str, str],
        at: datetime,
    ) -> list[MemoryOperation]:
        """A user turn stating one (subject, predicate, object)."""
        self.offset += 1
        event = DialogueEvent(
            event_id=event_id,
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            turn_index=self.offset,
            role=Role.USER,
            text=text,
            ts=at,
        )
        subject, predicate, obj = fact
        extracted = ExtractedFact(
            tenant_id=tenant,
            user_id=user,
            session_id="s1",
            event_id=event_id,
            event_ts=at,
            subject=subject,
            predicate=predicate,
            object=obj,
            confidence=0.9,
            text=f"{subject} {predicate} {obj}",
        )
        # A private high offset: the lineage need not point at a record here.
        lineage = SourceLineage(
            topic=DIALOGUE_EVENTS, partition=0, offset=10**12 + self.offset, event_id=event_id
        )
        state = self._state(tenant, user)
        reviewed = self.reviewer.on_dialogue(state, event, lineage, [extracted])
        return self.apply([*reviewed, *episode_ops(state, event, lineage, reviewed)])

    def deliver(self, action: UserAction, partition: int, offset: int) -> list[MemoryOperation]:
        """A published action at its Kafka position, through the review stage and the writers."""
        state = self._state(action.tenant_id, action.user_id)
        lineage = SourceLineage(
            topic=USER_ACTIONS, partition=partition, offset=offset, event_id=action.event_id
        )
        return self.apply(self.reviewer.on_action(state, action, lineage))


@dataclass(frozen=True)
class Tenant:
    tenant: str
    user: str
    label: str  # in every value of this tenant's memory, to look for in the other's page
    held: str  # the pending id
    key: str  # the operator key


@pytest.fixture(scope="module")
def stores(settings: Settings) -> MemoryStores:
    return MemoryStores.open(settings)


def _held(flow: Flow, tenant: str, user: str, label: str) -> Tenant:
    flow.says(tenant, user, f"{user}-{label}-1", f"I am vegan {label}", ("diet", "is", "vegan"), T0)
    ops = flow.says(
        tenant,
        user,
        f"{user}-{label}-2",
        f"I ordered a bacon burger {label}",
        ("user", "ordered", f"bacon burger {label}"),
        T0 + timedelta(minutes=5),
    )
    (held,) = [op.record for op in ops if op.op_type is OpType.ADD_PENDING and op.record]
    return Tenant(tenant, user, label, held.fact_id, new_key())


@pytest.fixture(scope="module")
def world(stores: MemoryStores, unique: str) -> tuple[Flow, Tenant, Tenant]:
    flow = Flow(stores)
    acme = _held(flow, f"rev-acme-{unique}", "u1", f"a{unique}")
    globex = _held(flow, f"rev-globex-{unique}", "u9", f"g{unique}")
    return flow, acme, globex


@pytest.fixture(scope="module")
def unique() -> str:
    return os.urandom(5).hex()


@pytest.fixture(scope="module")
def server(
    world: tuple[Flow, Tenant, Tenant], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    _, acme, globex = world
    where = tmp_path_factory.mktemp("review-serve")
    keys_file = where / "keys.json"
    keys_file.write_text(json.dumps({new_key(): acme.tenant}))
    operators_file = where / "operators.json"
    operators_file.write_text(
        json.dumps({acme.key: f"{acme.tenant}/alice", globex.key: f"{globex.tenant}/bob"})
    )
    port = free_port()
    command = [
        sys.executable, "-c", SERVE, "--keys-file", str(keys_file),
        "--operator-keys-file", str(operators_file), "--port", str(port),
        "--log-level", "warning",
    ]  # fmt: skip
    log = where / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            command, cwd=REPO_ROOT, stdout=out, stderr=out
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: _answers(base) or process.poll() is not None,
            "memstream serve",
            SERVE_START_TIMEOUT_S,
        )
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


class Browser:
    """One headless Chromium page, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - the system's Chromium
            [*CHROMIUM, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        wait_until(lambda: port_file.exists() and port_file.read_text().strip() != "", "DevTools")
        port = port_file.read_text().split()[0]
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(t for t in targets if t["type"] == "page")
        self.socket: ClientConnection = connect(page["webSocketDebuggerUrl"], max_size=None)
        self._id = 0

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=PAGE_WAIT_S))
            if message.get("id") == self._id:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises awaited)."""
        answer = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    def wait_for(self, expression: str, what: str) -> None:
        deadline = time.monotonic() + PAGE_WAIT_S
        while not self.evaluate(expression):
            assert time.monotonic() < deadline, f"the page never showed {what}"
            time.sleep(0.2)

    def open_console(self, base: str, operator: Tenant) -> None:
        """Load /review and sign in with the operator's key; wait for its tenant's queue."""
        self.send("Page.navigate", url=f"{base}/review")
        self.wait_for("document.readyState === 'complete'", "the page")
        self.evaluate(
            f"document.getElementById('key').value = {json.dumps(operator.key)};"
            "document.getElementById('open').click(); true"
        )
        rendered = (
            "document.body.dataset.rendered === 'true'"
            f" && document.body.dataset.tenant === {json.dumps(operator.tenant)}"
        )
        self.wait_for(rendered, f"{operator.tenant}'s queue")

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)


# The page's items and audit rows as data, read from the DOM.
ITEMS_JS = """JSON.stringify({
  tenant: document.body.dataset.tenant,
  error: document.getElementById('error').textContent,
  text: document.body.innerText,
  items: [...document.querySelectorAll('article.item')].map(a => ({
    pending: a.dataset.pendingId, user: a.dataset.user, cause: a.dataset.cause,
    state: a.dataset.state,
    statement: a.querySelector('.statement').textContent,
    source: a.querySelector('.source').textContent,
    contradicts: [...a.querySelectorAll('.contradicts li')].map(li => li.textContent),
    chain: a.querySelector('.chain-of').textContent,
    outcome: a.querySelector('.outcome').textContent,
    event: a.dataset.eventId || null, topic: a.dataset.topic || null,
    partition: a.dataset.partition || null, offset: a.dataset.offset || null})),
  decisions: [...document.querySelectorAll('#decisions tbody tr')].map(
    r => [...r.querySelectorAll('td')].map(td => td.textContent))
})"""


def _page(browser: Browser) -> dict[str, Any]:
    page: dict[str, Any] = json.loads(browser.evaluate(ITEMS_JS))
    return page


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    opened = Browser(profile)
    try:
        yield opened
    finally:
        opened.close()


def test_each_operator_sees_only_their_tenants_items(
    server: str, world: tuple[Flow, Tenant, Tenant], browser: Browser
) -> None:
    _, acme, globex = world
    for mine, other in ((acme, globex), (globex, acme)):
        browser.open_console(server, mine)
        page = _page(browser)
        assert page["error"] == "" and page["tenant"] == mine.tenant
        (item,) = page["items"]
        assert (item["pending"], item["user"], item["cause"]) == (
            mine.held,
            mine.user,
            "contradiction",
        )
        assert f"bacon burger {mine.label}" in item["statement"]
        assert f"I ordered a bacon burger {mine.label}" in item["source"]
        assert any("vegan" in fact for fact in item["contradicts"])
        assert "user · ordered" in item["chain"]
        # Nothing of the other tenant: not its pending id, values, user or tenant id.
        for marker in (other.held, other.label, other.tenant):
            assert marker not in page["text"], marker

    # The JSON routes agree: one tenant's key never reads or decides the other's items.
    headers = {"X-Operator-Key": globex.key}
    listed = httpx.get(f"{server}/review/api/items", headers=headers, timeout=30)
    assert listed.status_code == 200 and acme.held not in listed.text
    refused = httpx.post(
        f"{server}/review/api/users/{acme.user}/pending/{acme.held}/confirm",
        headers=headers,
        timeout=30,
    )
    assert refused.status_code == 404


def test_a_confirm_in_the_page_reaches_the_stores_with_the_reviewer(
    server: str,
    world: tuple[Flow, Tenant, Tenant],
    browser: Browser,
    stores: MemoryStores,
    kafka_bootstrap: str,
) -> None:
    flow, acme, globex = world
    browser.open_console(server, acme)
    article = f"document.querySelector('article[data-pending-id=\"{acme.held}\"]')"
    browser.evaluate(f"{article}.querySelector('button.confirm').click(); true")
    browser.wait_for(f"{article}.dataset.state === 'confirmed'", "the confirmation")
    (item,) = _page(browser)["items"]
    assert item["outcome"].startswith("confirmed: event confirm_memory-" + acme.held)

    # The event the page's click published: the API's confirm_memory, with the reviewer.
    receipt = ActionReceipt(
        action_type="confirm_memory",
        event_id=item["event"],
        tenant_id=acme.tenant,
        user_id=acme.user,
        topic=item["topic"],
        partition=int(item["partition"]),
        offset=int(item["offset"]),
        target_id=acme.held,
    )
    key, action = published_action(kafka_bootstrap, receipt)
    assert key == f"{acme.tenant}:{acme.user}"
    assert (action.action_type.value, action.target_id) == ("confirm_memory", acme.held)
    assert action.properties == {"reviewer_id": "alice"}

    # Applied as the ingest and sink jobs apply it: the stores hold the committed fact.
    flow.deliver(action, receipt.partition, receipt.offset)
    service = MemoryService(stores=stores)
    snapshot = service.snapshot(acme.tenant, acme.user)
    committed = {hit.fact_id: hit for hit in snapshot.facts}
    assert acme.held in committed and committed[acme.held].state is MemoryState.COMMITTED
    lineage = committed[acme.held].lineage
    assert lineage is not None and lineage.reviewer_id == "alice"
    assert lineage.event_id == f"{acme.user}-{acme.label}-2"  # still the source turn's
    assert snapshot.pending == []
    (decision,) = stores.redis.review_decisions(acme.tenant)
    assert (decision.pending_id, decision.resolution, decision.reviewer_id) == (
        acme.held,
        "confirmed",
        "alice",
    )
    assert stores.redis.review_decisions(globex.tenant) == []

    # The reloaded page: the item is gone and the audit lists the decision.
    browser.open_console(server, acme)
    page = _page(browser)
    assert page["items"] == []
    assert [row[2:5] for row in page["decisions"]] == [[acme.held, "confirmed", "alice"]]
    # The other tenant's queue is untouched.
    browser.open_console(server, globex)
    assert [item["pending"] for item in _page(browser)["items"]] == [globex.held]


def test_edit_and_confirm_in_the_page_commits_the_corrected_value(
    server: str,
    world: tuple[Flow, Tenant, Tenant],
    browser: Browser,
    stores: MemoryStores,
    kafka_bootstrap: str,
) -> None:
    flow, _, globex = world
    corrected = f"veggie burger {globex.label}"
    browser.open_console(server, globex)
    article = f"document.querySelector('article[data-pending-id=\"{globex.held}\"]')"
    browser.evaluate(
        f"{article}.querySelector('input.corrected').value = {json.dumps(corrected)};"
        f"{article}.querySelector('button.edit').click(); true"
    )
    browser.wait_for(f"{article}.dataset.state === 'confirmed'", "the edited confirmation")
    (item,) = _page(browser)["items"]
    receipt = ActionReceipt(
        action_type="confirm_memory",
        event_id=item["event"],
        tenant_id=globex.tenant,
        user_id=globex.user,
        topic=item["topic"],
        partition=int(item["partition"]),
        offset=int(item["offset"]),
        target_id=globex.held,
    )
    _, action = published_action(kafka_bootstrap, receipt)
    assert action.properties == {"reviewer_id": "bob", "object": corrected}

    flow.deliver(action, receipt.partition, receipt.offset)
    snapshot = MemoryService(stores=stores).snapshot(globex.tenant, globex.user)
    (ordered,) = [hit for hit in snapshot.facts if hit.predicate == "ordered"]
    assert ordered.object == corrected and ordered.fact_id != globex.held
    assert ordered.lineage is not None and ordered.lineage.reviewer_id == "bob"
    assert snapshot.pending == []
    (decision,) = stores.redis.review_decisions(globex.tenant)
    assert (decision.pending_id, decision.reviewer_id) == (globex.held, "bob")
