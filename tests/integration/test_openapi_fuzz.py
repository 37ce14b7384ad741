"""Property-based tests over the API's OpenAPI document (schemathesis) against a live uvicorn.

Schemathesis generates requests for every operation of the document — valid
ones and ones that break the schema — and sends them, with a valid key, over
HTTP to the app served by uvicorn on a free port, backed by the real service,
stores and broker. Every answer must be a documented, schema-conformant
response and never a server error; invalid input must be refused with a 4xx.

The schema is loaded from ``openapi_document()`` at import: schemathesis 4.32's
fixture-based loader reads a pytest node attribute that pytest 9 removed, and
its ASGI transport cannot reach an app made in a fixture for its auth probes.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import schemathesis
import uvicorn
from api_helpers import new_key, seed_user
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.checks import positive_data_acceptance

from jobs.serve.api import create_app, openapi_document
from jobs.serve.keys import ApiKeyring
from jobs.serve.memory_service import MemoryService, MemoryStores
from memstream.settings import Settings

# Examples per operation: every operation is tried with valid and invalid data
# through the real stores; 60 keeps the run under three minutes on the 2-core
# dev machine while covering every parameter's boundaries.
EXAMPLES_PER_OPERATION = 60
KEY = new_key()
# uvicorn starts in well under a second; the bound only turns a hang into a failure.
SERVER_START_TIMEOUT_S = 30.0

# The hint streams (server-sent events) never end by design, and a generated
# case reads its answer to the end: they are tested in test_hint_subscribers.py.
schema = schemathesis.openapi.from_dict(openapi_document()).exclude(path_regex=r"/hints$")


@pytest.fixture(scope="module")
def base_url(settings: Settings) -> Iterator[str]:
    stores = MemoryStores.open(settings)
    tenant = f"fuzz-{uuid.uuid4().hex[:10]}"
    seed_user(stores, tenant, "u1", label="fuzz")  # some generated user ids have memory
    app = create_app(MemoryService(stores=stores), ApiKeyring({KEY: tenant}))
    listener = socket.create_server(("127.0.0.1", 0))  # a free port, held from the start
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    server.should_exit = True
    thread.join()
    listener.close()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,  # requests hit real stores: latency is measured in benchmarks, not here
    # The same examples every run, so CI cannot turn red at random; explore with
    # other seeds locally (pytest --hypothesis-seed=N after removing this).
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_no_server_error_and_conformant_answers(case: Case, base_url: str) -> None:
    case.call_and_validate(
        base_url=base_url,
        headers={"Authorization": f"Bearer {KEY}"},
        # RecallFilters requires since < until, a relation between two fields that JSON
        # Schema cannot state: a schema-valid since >= until is rightly a 422.
        excluded_checks=[positive_data_acceptance],
    )
