"""What the catalog announces to the apps above it: `catalog_changed`, inside the change's
transaction, with the ids of the changed capabilities, releases and models.

A bulk change (load, import) wraps its rows in `batched_catalog_changes()` and is announced once
when the block ends, so a receiver evaluates its records once rather than once per row.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import models
from django.dispatch import Signal

from apps.catalog.models import Capability, EngineRelease, ModelSpec, ReleaseBackend

catalog_changed = Signal()
ID_KINDS = ("capability_ids", "release_ids", "model_ids")

_batch: contextvars.ContextVar[dict[str, set[int]] | None] = contextvars.ContextVar(
    "catalog_batch", default=None
)


def _announce(**changed: list[int]) -> None:
    catalog_changed.send(sender=Capability, **{kind: changed.get(kind, []) for kind in ID_KINDS})


@contextmanager
def batched_catalog_changes() -> Iterator[None]:
    """Collect the changes made inside the block; announce them once at its end."""
    batch: dict[str, set[int]] = {kind: set() for kind in ID_KINDS}
    token = _batch.set(batch)
    try:
        yield
    finally:
        _batch.reset(token)
    if any(batch.values()):
        _announce(**{kind: sorted(ids) for kind, ids in batch.items()})


def _changed(**ids: Iterable[int]) -> None:
    batch = _batch.get()
    if batch is None:
        _announce(**{kind: list(values) for kind, values in ids.items()})
        return
    for kind, values in ids.items():
        batch[kind].update(values)


# Catalog rows whose change a decision can depend on, and how each names its ids.
_IDS_OF: dict[type[models.Model], Callable[[Any, int], dict[str, list[int]]]] = {
    Capability: lambda row, pk: {"capability_ids": [pk]},
    EngineRelease: lambda row, pk: {"release_ids": [pk]},
    ReleaseBackend: lambda row, pk: {"release_ids": [row.release_id]},
    ModelSpec: lambda row, pk: {"model_ids": [pk]},
}


def entry_changed(*, instance: models.Model, pk: int | None = None) -> None:
    """For the catalog's entry_create/update/delete: any row; `pk` when it is deleted."""
    ids = _IDS_OF.get(type(instance))
    if ids is not None:
        _changed(**ids(instance, instance.pk if pk is None else pk))
