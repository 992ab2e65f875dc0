"""Query budgets of pages and services: one that starts reading per row (an N+1) fails its test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse


def page_queries(client, name: str, *args: int) -> int:
    """How many queries one GET of the named page reads (it must answer 200)."""
    with CaptureQueriesContext(connection) as captured:
        answer = client.get(reverse(name, args=args))
    assert answer.status_code == 200, (name, answer.status_code)
    return len(captured)


def call_queries(call: Callable[..., Any], **kwargs: Any) -> int:
    """How many queries one call of a service makes."""
    with CaptureQueriesContext(connection) as captured:
        call(**kwargs)
    return len(captured)
