"""The audit page (filters, pagination, per-event diff) and its CSV export."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from apps.audit.filters import AuditEventFilter
from apps.audit.selectors import audit_events_visible_to, event_diff

PAGE_SIZE = 50
CSV_COLUMNS = [
    "id",
    "occurred_at",
    "actor_type",
    "actor_name",
    "team_id",
    "request_id",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "message",
    "before",
    "after",
    "hash",
]


def _filtered(request: HttpRequest) -> AuditEventFilter:
    events = audit_events_visible_to(user=request.user, team=request.team)
    return AuditEventFilter(request.GET or None, queryset=events)


@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    filterset = _filtered(request)
    filterset.offer_choices()
    page = Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(event, event_diff(event)) for event in page.object_list]
    query = request.GET.copy()
    query.pop("page", None)
    context = {"filter": filterset, "page": page, "rows": rows, "query": query.urlencode()}
    return render(request, "audit/event_list.html", context)


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
def event_csv(request: HttpRequest) -> HttpResponse:
    writer = csv.writer(_Echo())

    def rows() -> Iterator[str]:
        yield writer.writerow(CSV_COLUMNS)
        for event in _filtered(request).qs.iterator(chunk_size=1000):
            yield writer.writerow([getattr(event, column) for column in CSV_COLUMNS])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="audit-events.csv"'
    return response
