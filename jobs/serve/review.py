"""The human review console of ``memstream serve``: a tenant's held items, and decisions on them.

``GET /review`` is one self-contained page (``review.html``: vanilla JS, no
external asset) that calls the JSON routes under ``/review/api``:

- ``GET /review/api/items``: the tenant's pending and held items, newest first,
  each with its cause (``ReviewOutcome.cause``: low confidence, not the user's
  voice, contradiction, ...), the source turn it was extracted from (the
  turn's episode in the episodic tier), the current facts it contradicts and
  the version chain it would join;
- ``POST /review/api/users/{user}/pending/{id}/confirm`` (body ``{"object":
  "..."}`` to edit-and-confirm) and ``.../reject``: the same ``user.actions``
  event as the API's confirm and reject (``MemoryService.confirm/reject``),
  with the reviewer's id, which the review stage puts into the lineage of what
  the decision writes;
- ``GET /review/api/decisions``: the tenant's review audit (what the Redis
  writer recorded as it applied each confirm and reject).

Every API call presents an operator key (``Authorization: Bearer <key>`` or
``X-Operator-Key``; jobs/serve/keys.py), which names one reviewer of one
tenant; API keys open none of these routes. Everything is read and decided
for the key's tenant only: another tenant's pending id is answered like an
unknown one (404), as the API does. The page itself holds no data and needs
no key. None of the routes is part of the OpenAPI document (the agents' API).
"""

from __future__ import annotations

import re
from datetime import datetime
from importlib.resources import files
from typing import Annotated, Protocol

from fastapi import Body, Depends, FastAPI, Path, Request, Security
from fastapi.responses import HTMLResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import Field, StringConstraints

from connectors.protocols import EpisodicReader, WorkingMemoryReader
from connectors.redis_memory import PendingEntry, ReviewEntry
from jobs.serve.auth import presented_key, unauthorized
from jobs.serve.keys import Operator, OperatorKeyring
from schemas._base import Frozen, Identifier
from schemas.episodes import Episode
from schemas.memory import MemoryRecord, MemoryState, ReviewStage
from schemas.query import ActionReceipt, MemorySnapshot, RecallHit

PAGE = files("jobs.serve").joinpath("review.html").read_text(encoding="utf-8")
# The contradicted facts are named by id in the fact check's reason
# (pipelines/review/reviewer.py: "contradicts f_... (statement) by rule: why").
_FACT_ID = re.compile(r"\bf_[0-9a-f]{24}\b")
# Same pattern as jobs.serve.api's PENDING_ID_PATTERN (schemas.ids.fact_id).
PENDING_ID_PATTERN = r"^f_[0-9a-f]{24}$"
# A corrected value has the bounds of MemoryRecord.object; blank is refused.
ObjectText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1024)]


class ReviewStores(Protocol):
    """The readers the console lists items with (``MemoryStores``' Redis and Chroma)."""

    @property
    def redis(self) -> WorkingMemoryReader:
        """Pending queues, their users and the review audit."""
        ...

    @property
    def chroma(self) -> EpisodicReader:
        """The source turns (episodes)."""
        ...


class ReviewService(Protocol):
    """What the console needs of ``jobs.serve.memory_service.MemoryService``."""

    @property
    def stores(self) -> ReviewStores:
        """The store readers."""
        ...

    def snapshot(self, tenant_id: str, user_id: str) -> MemorySnapshot:
        """The user's current facts and rules."""
        ...

    def history(
        self, tenant_id: str, user_id: str, subject: str, predicate: str
    ) -> list[RecallHit]:
        """The version chain of one (subject, predicate), oldest first."""
        ...

    def confirm(
        self,
        tenant_id: str,
        user_id: str,
        pending_id: str,
        *,
        reviewer_id: str | None = None,
        object: str | None = None,  # noqa: A002 - the service's parameter name
    ) -> ActionReceipt:
        """Publish a confirm_memory action."""
        ...

    def reject(
        self, tenant_id: str, user_id: str, pending_id: str, *, reviewer_id: str | None = None
    ) -> ActionReceipt:
        """Publish a reject_memory action."""
        ...


class SourceTurn(Frozen):
    """The turn a held fact was extracted from, as said (its episode)."""

    event_id: str
    role: str
    text: str
    context: str | None = Field(default=None, description="The turn it answers, if short.")
    session_id: str
    turn_index: int
    ts: datetime


class ReviewItem(Frozen):
    """One pending or held item as the console shows it."""

    user_id: str
    pending_id: str
    cause: str = Field(description="ReviewOutcome.cause of the HITL gate (or 'unknown').")
    reason: str = Field(description="Every review stage's reason to hold it.")
    statement: str
    subject: str
    predicate: str
    object: str
    polarity: str
    kind: str
    confidence: float
    said_at: datetime
    queued_at: datetime
    expires_at: datetime
    source_event_id: str
    source: SourceTurn | None = Field(
        default=None, description="None when the fact came from no dialogue turn (CRM, API)."
    )
    contradicts: list[RecallHit] = Field(
        default_factory=list, description="Current facts it contradicts (fact check, chain head)."
    )
    chain: list[RecallHit] = Field(
        default_factory=list, description="The version chain it would join, oldest first."
    )


class ReviewQueue(Frozen):
    """What ``GET /review/api/items`` answers."""

    tenant_id: str
    reviewer_id: str
    items: list[ReviewItem]
    truncated: bool = Field(description="More items wait than the console lists.")


class EditedConfirm(Frozen):
    """An edit-and-confirm's body: the corrected object value (omit to confirm as held)."""

    object: ObjectText | None = None


def _cause(record: MemoryRecord) -> str:
    for outcome in reversed(record.review):
        if outcome.stage is ReviewStage.HITL and outcome.cause:
            return outcome.cause
    return "unknown"  # queued before the gate recorded causes


def _contradicted_ids(record: MemoryRecord) -> list[str]:
    found: list[str] = []
    for outcome in record.review:
        if outcome.stage is ReviewStage.FACT_CHECK and outcome.decision == "hold":
            found += [f for f in _FACT_ID.findall(outcome.reason) if f not in found]
    return found


def _source(episodes: dict[str, Episode], event_id: str) -> SourceTurn | None:
    episode = episodes.get(event_id)
    if episode is None:
        return None
    return SourceTurn(
        event_id=event_id,
        role=episode.role.value,
        text=episode.text,
        context=episode.context,
        session_id=episode.session_id,
        turn_index=episode.turn_index,
        ts=episode.ts,
    )


UserContext = tuple[dict[str, Episode], dict[str, RecallHit]]


class ReviewConsole:
    """Lists a tenant's held items and publishes a reviewer's decisions on them."""

    def __init__(self, service: ReviewService, max_items: int = 200) -> None:
        """Over ``service`` (its readers and its confirm/reject), listing ``max_items`` at most."""
        self.service = service
        self.max_items = max_items

    def queue(self, operator: Operator) -> ReviewQueue:
        """The operator's tenant's pending and held items, newest first."""
        tenant = operator.tenant
        redis = self.service.stores.redis
        waiting: list[PendingEntry] = []
        for user in redis.pending_users(tenant):
            waiting += redis.pending_items(tenant, user)
        waiting.sort(
            key=lambda p: (p.record.recorded_at, p.record.valid_from, p.record.fact_id),
            reverse=True,
        )
        shown = waiting[: self.max_items]
        items = []
        contexts: dict[str, UserContext] = {}
        for entry in shown:
            user = entry.record.user_id
            if user not in contexts:
                contexts[user] = self._user_context(tenant, user)
            items.append(self._item(tenant, entry, contexts[user]))
        return ReviewQueue(
            tenant_id=tenant,
            reviewer_id=operator.reviewer,
            items=items,
            truncated=len(waiting) > len(shown),
        )

    def _user_context(self, tenant: str, user: str) -> UserContext:
        """The user's source turns by event id, and current facts and rules by id."""
        stored = self.service.stores.chroma.user_episodes(tenant, user)
        episodes = {s.episode.lineage.event_id: s.episode for s in stored}
        snapshot = self.service.snapshot(tenant, user)
        current = {hit.fact_id: hit for hit in (*snapshot.rules, *snapshot.facts)}
        return episodes, current

    def _item(self, tenant: str, entry: PendingEntry, context: UserContext) -> ReviewItem:
        episodes, current = context
        record = entry.record
        chain = self.service.history(tenant, record.user_id, record.subject, record.predicate)
        contradicted = [current[f] for f in _contradicted_ids(record) if f in current]
        # A held update of the same chain contradicts the chain's current head.
        contradicted += [
            version
            for version in chain
            if version.fact_id in current
            and version not in contradicted
            and (version.object, version.polarity) != (record.object, record.polarity)
        ]
        return ReviewItem(
            user_id=record.user_id,
            pending_id=record.fact_id,
            cause=_cause(record),
            reason=entry.reason,
            statement=record.statement(),
            subject=record.subject,
            predicate=record.predicate,
            object=record.object,
            polarity=record.polarity.value,
            kind=record.kind.value,
            confidence=record.confidence,
            said_at=record.valid_from,
            queued_at=record.recorded_at,
            expires_at=entry.expires_at,
            source_event_id=record.lineage.event_id,
            source=_source(episodes, record.lineage.event_id),
            contradicts=contradicted,
            chain=[v for v in chain if v.state is MemoryState.COMMITTED],
        )

    def confirm(
        self, operator: Operator, user_id: str, pending_id: str, corrected: str | None = None
    ) -> ActionReceipt:
        """Publish the API's confirm_memory, with the reviewer (and a corrected value)."""
        return self.service.confirm(
            operator.tenant, user_id, pending_id, reviewer_id=operator.reviewer, object=corrected
        )

    def reject(self, operator: Operator, user_id: str, pending_id: str) -> ActionReceipt:
        """Publish the API's reject_memory, with the reviewer."""
        return self.service.reject(
            operator.tenant, user_id, pending_id, reviewer_id=operator.reviewer
        )

    def decisions(self, operator: Operator) -> list[ReviewEntry]:
        """The tenant's audited confirms and rejects, newest first."""
        return list(reversed(self.service.stores.redis.review_decisions(operator.tenant)))


_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <operator key>`")
_operator_header = APIKeyHeader(name="X-Operator-Key", auto_error=False)


def _operator(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    header_key: Annotated[str | None, Security(_operator_header)],
) -> Operator:
    """The operator of the presented key; 401 when missing, unknown or ambiguous."""
    key = presented_key(bearer, header_key, "operator key")
    keyring: OperatorKeyring = request.app.state.operator_keyring
    operator = keyring.operator_for(key)
    if operator is None:
        raise unauthorized("missing or unknown operator key")
    return operator


def _console(request: Request) -> ReviewConsole:
    console: ReviewConsole = request.app.state.review_console
    return console


OperatorOf = Annotated[Operator, Depends(_operator)]
Console = Annotated[ReviewConsole, Depends(_console)]
UserId = Annotated[Identifier, Path()]
PendingId = Annotated[str, Path(pattern=PENDING_ID_PATTERN)]


def add_review(app: FastAPI, console: ReviewConsole, keys: OperatorKeyring) -> None:
    """Serve the console page and its JSON routes on ``app``; ``keys``: the operators."""
    app.state.review_console = console
    app.state.operator_keyring = keys

    @app.get("/review", include_in_schema=False)
    def review_page() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.get("/review/api/items", include_in_schema=False)
    def review_items(operator: OperatorOf, review: Console) -> ReviewQueue:
        return review.queue(operator)

    @app.post(
        "/review/api/users/{user_id}/pending/{pending_id}/confirm",
        status_code=202,
        include_in_schema=False,
    )
    def review_confirm(
        user_id: UserId,
        pending_id: PendingId,
        operator: OperatorOf,
        review: Console,
        body: Annotated[EditedConfirm | None, Body()] = None,
    ) -> ActionReceipt:
        corrected = body.object if body is not None else None
        return review.confirm(operator, user_id, pending_id, corrected)

    @app.post(
        "/review/api/users/{user_id}/pending/{pending_id}/reject",
        status_code=202,
        include_in_schema=False,
    )
    def review_reject(
        user_id: UserId, pending_id: PendingId, operator: OperatorOf, review: Console
    ) -> ActionReceipt:
        return review.reject(operator, user_id, pending_id)

    @app.get("/review/api/decisions", include_in_schema=False)
    def review_decisions(operator: OperatorOf, review: Console) -> list[ReviewEntry]:
        return review.decisions(operator)
