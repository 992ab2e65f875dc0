"""Before/after snapshots of model instances for audit events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models


def snapshot(instance: models.Model, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """Concrete field values by attribute name (foreign keys as ids); exclude secrets."""
    skipped = set(exclude)
    data: dict[str, Any] = {}
    for field in instance._meta.concrete_fields:
        if field.name in skipped or field.attname in skipped:
            continue
        value = getattr(instance, field.attname)
        data[field.attname] = (
            value
            if isinstance(value, (str, int, float, bool, type(None), dict, list))
            else str(value)
        )
    return data
