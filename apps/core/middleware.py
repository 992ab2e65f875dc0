"""Request id propagation, per-view request metrics, service errors mapped for pages, and URL
values no database column can hold refused before any view looks them up."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from apps.core import metrics
from apps.core.errors import NotFoundError
from apps.core.parsers import NUL_REFUSED
from apps.core.request_context import (
    accept_or_create_request_id,
    is_api_request,
    reset_request_id,
    set_request_id,
)

REQUEST_ID_HEADER = "X-Request-ID"


class RequestIdMiddleware:
    """Accept the caller's X-Request-ID (or make one), return it, expose it to logs and audit."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accept_or_create_request_id(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id
        token = set_request_id(request_id)
        try:
            response = self.get_response(request)
        finally:
            reset_request_id(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class RequestMetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = match.view_name if match and match.view_name else "unmatched"
        metrics.observe_request(
            view=view,
            method=request.method or "",
            status=response.status_code,
            seconds=time.perf_counter() - started,
        )
        return response


class ServiceErrorMiddleware:
    """A page whose service says "no such object" answers Django's own 404 page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        if isinstance(exception, NotFoundError):
            raise Http404(str(exception)) from exception


class UrlValueMiddleware:
    """A URL value (a slug, key or id captured by the route) holding a NUL character names no
    row: PostgreSQL text cannot hold one, so looking it up fails in the database. The API
    answers 400 naming the value, as it does for NUL in a body or query string; a page is not
    found, as a route whose converter refuses the character already answers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable, args: tuple, kwargs: dict
    ) -> HttpResponse | None:
        refused = [name for name, value in kwargs.items() if "\x00" in str(value)]
        if not refused:
            return None
        if is_api_request(request):
            return JsonResponse({name: [NUL_REFUSED] for name in refused}, status=400)
        raise Http404(NUL_REFUSED)
