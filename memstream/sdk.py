"""The Python SDK agents import: ``from memstream import MemoryClient`` (defined here).

One typed, synchronous client with two ways to reach memory and the same
methods either way:

- ``MemoryClient.in_process(service, tenant_id)`` calls a
  ``MemoryService`` (``from memstream import MemoryService``;
  ``MemoryService.from_settings()``) directly (an agent living in the same
  process as memstream, tests, benchmarks);
- ``MemoryClient.over_http(base_url, api_key)`` calls the HTTP API
  (``memstream serve``); the API key decides the tenant.

Either way a client is bound to one tenant, so no method takes a tenant id.
Errors: an unknown pending id raises a ``LookupError`` (``UnknownPendingError``
in process, :class:`NotFound` over HTTP); invalid input raises a
``ValueError`` (:class:`InvalidRequest` over HTTP); a refused API key raises
:class:`Unauthorized`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, Self
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from schemas.hints import MemoryHint
from schemas.memory import MemoryKind, Polarity, Tier
from schemas.query import ActionReceipt, MemorySnapshot, RecallFilters, RecallHit

if TYPE_CHECKING:  # the service pulls in every store client; HTTP users need none
    from jobs.serve.memory_service import MemoryService

# Recall over HTTP waits this long: a cold MiniLM load on the server takes a few
# seconds, a warm recall well under one (benchmarks/bench_recall.py).
DEFAULT_TIMEOUT_S = 30.0
_USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")  # schemas._base.Identifier
_HITS: TypeAdapter[list[RecallHit]] = TypeAdapter(list[RecallHit])


class MemoryApiError(RuntimeError):
    """The HTTP API answered with an error status."""

    def __init__(self, status: int, detail: str) -> None:
        """Keep the status code and the API's ``detail``."""
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class Unauthorized(MemoryApiError):
    """401: the API key is missing or unknown."""


class NotFound(MemoryApiError, LookupError):
    """404: no such pending item for this user (or the path does not exist)."""


class InvalidRequest(MemoryApiError, ValueError):
    """422 (or 413): the API refused the input."""


def _user_path(user_id: str) -> str:
    if not _USER_ID.match(user_id):
        raise ValueError(f"user_id must match {_USER_ID.pattern}")
    return f"/v1/users/{user_id}"


class MemoryClient:
    """Recall, snapshot, history, context and memory actions for one tenant."""

    def __init__(
        self,
        *,
        service: MemoryService | None = None,
        tenant_id: str | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        """Use :meth:`in_process` or :meth:`over_http`."""
        if (service is None) == (http is None) or (service is not None and tenant_id is None):
            raise ValueError("pass service and tenant_id, or an http client")
        self._service = service
        self._tenant_id = tenant_id or ""
        self._http = http

    @classmethod
    def in_process(cls, service: MemoryService, tenant_id: str) -> MemoryClient:
        """A client calling ``service`` directly, for ``tenant_id``."""
        return cls(service=service, tenant_id=tenant_id)

    @classmethod
    def over_http(
        cls,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        http: httpx.Client | None = None,
    ) -> MemoryClient:
        """A client of the HTTP API at ``base_url`` authenticating with ``api_key``.

        ``http`` is an already configured client (e.g. Starlette's TestClient);
        the key header is added to it.
        """
        client = http or httpx.Client(base_url=base_url, timeout=timeout_s)
        client.headers["Authorization"] = f"Bearer {api_key}"
        return cls(http=client)

    def close(self) -> None:
        """Close the HTTP connection pool (nothing to do in process)."""
        if self._http is not None:
            self._http.close()

    def __enter__(self) -> Self:
        """Use as a context manager that closes the client."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the client."""
        self.close()

    # -- reads ---------------------------------------------------------------
    def recall(
        self,
        user_id: str,
        query: str,
        k: int = 10,
        as_of: datetime | None = None,
        tiers: Sequence[Tier] | None = None,
        filters: RecallFilters | None = None,
        include_history: bool = False,
    ) -> list[RecallHit]:
        """The ``k`` facts best matching ``query`` that held at ``as_of`` (default now)."""
        if self._service is not None:
            return self._service.recall(
                self._tenant_id, user_id, query, k, as_of, tiers, filters, include_history
            )
        body = {
            "query": query,
            "k": k,
            "as_of": as_of.isoformat() if as_of else None,
            "tiers": [t.value for t in tiers] if tiers is not None else None,
            "filters": filters.model_dump(mode="json") if filters else None,
            "include_history": include_history,
        }
        return _HITS.validate_python(self._call("POST", f"{_user_path(user_id)}/recall", body))

    def snapshot(self, user_id: str) -> MemorySnapshot:
        """Current rules, facts, statuses and pending items of the user."""
        if self._service is not None:
            return self._service.snapshot(self._tenant_id, user_id)
        return MemorySnapshot.model_validate(self._call("GET", f"{_user_path(user_id)}/snapshot"))

    def history(self, user_id: str, subject: str, predicate: str) -> list[RecallHit]:
        """Every version of (subject, predicate), oldest first, with validity."""
        if self._service is not None:
            return self._service.history(self._tenant_id, user_id, subject, predicate)
        params = {"subject": subject, "predicate": predicate}
        path = f"{_user_path(user_id)}/history"
        return _HITS.validate_python(self._call("GET", path, params=params))

    def context(self, user_id: str, query: str, k: int = 10) -> str:
        """The prompt-ready memory block for ``query``."""
        if self._service is not None:
            return self._service.context(self._tenant_id, user_id, query, k)
        params = {"query": query, "k": str(k)}
        block = self._call("GET", f"{_user_path(user_id)}/context", params=params)
        return str(block["context"])

    def hints(self, user_id: str, *, from_beginning: bool = False) -> Iterator[MemoryHint]:
        """Hints pushed for the user as they come: subscribe instead of polling recall.

        Each is the prompt-ready context for one of the user's turns that
        needed memory (``MemoryHint.context``), with its sources, the signals
        that fired and the user's current behaviour items. Blocks between
        hints; stop by closing the iterator (``close()``, or leaving a ``for``
        loop with ``break``). ``from_beginning`` also yields the hints still on
        the topic, oldest first. Over HTTP this reads the API's
        server-sent-events stream.
        """
        if self._service is not None:
            feed = self._service.hints(self._tenant_id, user_id, from_beginning=from_beginning)
            try:
                yield from (hint for hint in feed if hint is not None)
            finally:
                feed.close()  # the follower's consumer goes with the caller
            return
        assert self._http is not None  # noqa: S101 - only reached in HTTP mode
        params = {"from_beginning": "true" if from_beginning else "false"}
        path = f"{_user_path(user_id)}/hints"
        # No read timeout: a stream is quiet between hints (keep-alives every 15 s).
        timeout = httpx.Timeout(DEFAULT_TIMEOUT_S, read=None)
        with self._http.stream("GET", path, params=params, timeout=timeout) as response:
            if not response.is_success:
                response.read()
                self._raise(response)
            for data in sse_data(response.iter_lines()):
                yield MemoryHint.model_validate_json(data)

    # -- actions ---------------------------------------------------------------
    def confirm(self, user_id: str, pending_id: str) -> ActionReceipt:
        """Confirm one of the user's pending items (published as an action event)."""
        if self._service is not None:
            return self._service.confirm(self._tenant_id, user_id, pending_id)
        return self._receipt(
            "POST", f"{_user_path(user_id)}/pending/{quote(pending_id, '')}/confirm"
        )

    def reject(self, user_id: str, pending_id: str) -> ActionReceipt:
        """Reject one of the user's pending items (published as an action event)."""
        if self._service is not None:
            return self._service.reject(self._tenant_id, user_id, pending_id)
        return self._receipt(
            "POST", f"{_user_path(user_id)}/pending/{quote(pending_id, '')}/reject"
        )

    def store(
        self,
        user_id: str,
        predicate: str,
        object: str,  # noqa: A002 - the triple's field name everywhere in memstream
        subject: str = "user",
        polarity: Polarity = Polarity.AFFIRMED,
        kind: MemoryKind = MemoryKind.FACT,
        text: str = "",
        confidence: float | None = None,
    ) -> ActionReceipt:
        """Ask the pipeline to add a memory; it is reviewed like any other fact."""
        if self._service is not None:
            return self._service.store(
                self._tenant_id,
                user_id,
                predicate,
                object,
                subject,
                polarity,
                kind,
                text,
                confidence,
            )
        body = {
            "predicate": predicate,
            "object": object,
            "subject": subject,
            "polarity": polarity.value,
            "kind": kind.value,
            "text": text,
            "confidence": confidence,
        }
        return self._receipt("POST", f"{_user_path(user_id)}/memories", body)

    def forget(self, user_id: str) -> ActionReceipt:
        """Erase the user from every tier (published as a forget_user action)."""
        if self._service is not None:
            return self._service.forget(self._tenant_id, user_id)
        return self._receipt("DELETE", _user_path(user_id))

    # -- HTTP ------------------------------------------------------------------
    def _receipt(self, method: str, path: str, body: dict[str, Any] | None = None) -> ActionReceipt:
        return ActionReceipt.model_validate(self._call(method, path, body))

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        assert self._http is not None  # noqa: S101 - only reached in HTTP mode
        response = self._http.request(method, path, json=body, params=params)
        if response.is_success:
            return response.json()
        self._raise(response)

    @staticmethod
    def _raise(response: httpx.Response) -> NoReturn:
        try:
            detail = str(response.json().get("detail", response.text))
        except ValueError:
            detail = response.text
        error = {401: Unauthorized, 404: NotFound, 413: InvalidRequest, 422: InvalidRequest}
        raise error.get(response.status_code, MemoryApiError)(response.status_code, detail)


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each ``hint`` event of a server-sent-events stream (comments skipped)."""
    event, data = "message", list[str]()
    for line in lines:
        if not line:  # a blank line ends an event
            if data and event == "hint":
                yield "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue  # a comment: the opening line and keep-alives
        elif line.startswith("event:"):
            event = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].removeprefix(" "))
