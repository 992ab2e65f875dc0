"""API throttling: request rates per principal, and failed credentials per client address.

DRF's throttles run after authentication, so a wrong token never reaches them; failed
credentials are therefore counted by AuthFailureThrottleMiddleware, which refuses an address
that failed too often before its credential is even looked up. Both keep their counters in
Django's cache (set CACHE_URL to Redis when several processes serve the app). Rates are read
at request time from settings.API_THROTTLE_RATES; API_THROTTLE_ENABLED turns both off.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from rest_framework.throttling import SimpleRateThrottle

RUNNER_API_NAMESPACE = "runner-api"
ENROLL_VIEW = "runner-api:enroll"


class ApiRateThrottle(SimpleRateThrottle):
    """One throttle for every API view, scoped by who calls: the enrollment endpoint per
    address, a runner per runner, a person (session or token) per user, anyone else per
    address. A refusal is 429 {detail, code: throttled} with Retry-After."""

    def get_rate(self) -> str | None:
        return None  # chosen per request in allow_request

    def allow_request(self, request, view) -> bool:
        if not settings.API_THROTTLE_ENABLED:
            return True
        self.scope, ident = _scope_and_ident(request)
        self.rate = settings.API_THROTTLE_RATES.get(self.scope)
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.cache_format % {"scope": self.scope, "ident": ident}
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        if len(self.history) >= self.num_requests:
            return self.throttle_failure()
        return self.throttle_success()

    def get_cache_key(self, request, view) -> str | None:  # required by the base class
        return self.key


def _scope_and_ident(request) -> tuple[str, str]:
    match = request._request.resolver_match
    address = client_address(request._request) or "unknown"
    if match and match.view_name == ENROLL_VIEW:
        return "enroll", address
    runner = getattr(request.auth, "pk", None)  # the Runner, on the runner API
    if match and match.namespace == RUNNER_API_NAMESPACE and runner is not None:
        return "runner", str(runner)
    if request.user and request.user.is_authenticated:
        return "user", str(request.user.pk)
    return "anon", address


def client_address(request: HttpRequest) -> str | None:
    """The peer address; behind a proxy, the one it saw (TRUSTED_PROXY_HOPS); None: unknown."""
    if settings.API_TRUSTED_PROXY_HOPS:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = settings.API_TRUSTED_PROXY_HOPS
        if len(forwarded) >= hops and forwarded[-hops]:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR") or None


def _failure_key(address: str) -> str:
    return f"auth-failures:{address}"


def _presents_credential(request: HttpRequest) -> bool:
    """An Authorization header, or a body holding an enrollment token."""
    if "HTTP_AUTHORIZATION" in request.META:
        return True
    try:
        return resolve(request.path_info).view_name == ENROLL_VIEW
    except Resolver404:
        return False


def _refused(request: HttpRequest, response: HttpResponse) -> bool:
    """401: an unknown credential. 403 counts on enrollment only (an unknown token); elsewhere
    it is a valid credential without the right role, no guess."""
    if response.status_code == 401:
        return True
    match = request.resolver_match
    return response.status_code == 403 and bool(match and match.view_name == ENROLL_VIEW)


class AuthFailureThrottleMiddleware:
    """After API_AUTH_FAILURE_LIMIT refused credentials from one address within
    API_AUTH_FAILURE_WINDOW_S, that address gets 429 for any credential until the window
    since its first counted failure has passed."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not (settings.API_THROTTLE_ENABLED and _presents_credential(request)):
            return self.get_response(request)
        address, now = client_address(request) or "unknown", time.time()
        window = settings.API_AUTH_FAILURE_WINDOW_S
        failures = cache.get(_failure_key(address))
        if failures and failures["since"] + window <= now:
            failures = None
        if failures and failures["count"] >= settings.API_AUTH_FAILURE_LIMIT:
            return _too_many_failures(int(failures["since"] + window - now) + 1)
        response = self.get_response(request)
        if _refused(request, response):
            failures = failures or {"since": now, "count": 0}
            failures["count"] += 1
            cache.set(_failure_key(address), failures, timeout=window)
        return response


def _too_many_failures(wait: int) -> JsonResponse:
    response = JsonResponse(
        {
            "detail": f"Too many refused credentials from this address; retry in {wait} s.",
            "code": "throttled",
        },
        status=429,
    )
    response["Retry-After"] = str(wait)
    return response
