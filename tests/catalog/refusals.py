"""The catalog API's refusal of a bad value, asserted one way for every figure and JSON column:
a 400 naming only the field, the row as it was, and no audit event."""

from __future__ import annotations

from django.db.models import Model
from django.urls import reverse

from apps.audit.models import AuditEvent
from tests.conftest import logged_in


def patch_detail(curator, name: str, key, body: dict):
    url = reverse(f"catalog-{name}-detail", args=[key])
    return logged_in(curator).patch(url, body, content_type="application/json")


def assert_patch_refused(curator, row: Model, name: str, key, field: str, value) -> None:
    """PATCH `field` of `row` (detail route `name`, looked up by `key`) to `value` and expect the
    refusal; `row` is refreshed, so a caller may assert more about what stayed."""
    before = getattr(row, field)
    events = AuditEvent.objects.count()

    response = patch_detail(curator, name, key, {field: value})

    assert response.status_code == 400, response.json()
    assert list(response.json()) == [field]
    row.refresh_from_db()
    assert getattr(row, field) == before
    assert AuditEvent.objects.count() == events
