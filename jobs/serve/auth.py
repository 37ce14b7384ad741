"""How an HTTP request presents a key, for the API and the review console alike.

A key comes as ``Authorization: Bearer <key>`` or in the surface's own header;
two different keys in one request are refused rather than one picked.
"""

from __future__ import annotations

from fastapi import HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials


def unauthorized(detail: str) -> HTTPException:
    """A 401 that tells the client to present a bearer key."""
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def presented_key(
    bearer: HTTPAuthorizationCredentials | None, header_key: str | None, what: str
) -> str | None:
    """The one key the request presents (None: none); 401 when it presents two different ones."""
    presented = bearer.credentials if bearer else None
    if presented and header_key and presented != header_key:
        raise unauthorized(f"two different {what}s presented")
    return presented or header_key
