"""Login throttling with django-axes: the backend, the client address and the lockout page.

Axes counts failed logins per account and per address (settings: LOGIN_FAILURE_LIMIT,
LOGIN_LOCKOUT_MINUTES) and refuses further attempts of a locked account or address, the
right password included, until the lockout expires.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.core.throttles import client_address


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' backend, except that authenticate() without a request (a management command, a
    shell) is no login over the network: axes cannot count it by address and lets it pass."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def login_address(request: HttpRequest) -> str | None:
    """The same client address the API throttles use (TRUSTED_PROXY_HOPS)."""
    return client_address(request)


def locked_out(request: HttpRequest, credentials: Any = None, *args: Any, **kwargs: Any):
    """429 with a page that says why and for how long, and Retry-After in seconds."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    response: HttpResponse = render(
        request,
        "core/login_locked.html",
        {"minutes": minutes, "limit": settings.AXES_FAILURE_LIMIT},
        status=429,
    )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
