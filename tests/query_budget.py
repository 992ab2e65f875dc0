"""Query budgets of pages and services: one that starts reading per row (an N+1) fails its test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse


def page_queries(client, name: str, *args: Any, query: dict[str, Any] | None = None) -> int:
    """How many queries one GET of the named page reads (it must answer 200)."""
    with CaptureQueriesContext(connection) as captured:
        answer = client.get(reverse(name, args=args), query or {})
    assert answer.status_code == 200, (name, answer.status_code)
    return len(captured)


def call_queries(call: Callable[..., Any], **kwargs: Any) -> int:
    """How many queries one call of a service makes."""
    with CaptureQueriesContext(connection) as captured:
        call(**kwargs)
    return len(captured)


def queries_before_and_after(
    measure: Callable[[], int], grow: Callable[[], Any]
) -> tuple[int, int]:
    """A page's queries with few rows, then after `grow` adds many: an N+1 makes them differ."""
    before = measure()
    grow()
    return before, measure()
