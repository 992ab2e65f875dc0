"""Home page and the operations endpoints (/healthz, /readyz, /metrics)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found

from apps.core import metrics
from apps.core.request_context import is_api_request
from apps.core.selectors import readiness


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages without an icon link (the admin site)."""
    return HttpResponseRedirect(static("favicon.svg"))


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "alive"})


@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    checks = readiness()
    ready = all(check.ok for check in checks)
    body = {
        "status": "ready" if ready else "not_ready",
        "checks": {check.name: {"ok": check.ok, "detail": check.detail} for check in checks},
    }
    return JsonResponse(body, status=200 if ready else 503)


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(metrics.render(), content_type="text/plain; version=0.0.4; charset=utf-8")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """API clients get a JSON 404 like every other API error; people get the page."""
    if is_api_request(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)
