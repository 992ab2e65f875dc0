"""The current request id, visible to logs and audit events without passing it around."""

from __future__ import annotations

import contextvars
import re
import uuid
from typing import Any

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def accept_or_create_request_id(incoming: str | None) -> str:
    """Keep a caller's id when it is safe to log, otherwise make a fresh one."""
    if incoming and _VALID_REQUEST_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


def set_request_id(value: str) -> contextvars.Token:
    return _request_id.set(value)


def reset_request_id(token: contextvars.Token) -> None:
    _request_id.reset(token)


def current_request_id() -> str:
    return _request_id.get()


def request_team(request: Any) -> Any:
    """The team an API call acts for: the token's team, else the session's current team.

    Reading `request.user` first makes DRF authenticate, which is when a token sets the team.
    """
    if not request.user.is_authenticated:
        return None
    return getattr(request, "team", None)


def is_api_request(request: Any) -> bool:
    """Whether the caller is an API client (answered in JSON) rather than a person (a page)."""
    return request.path.startswith("/api/")
