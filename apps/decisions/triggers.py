"""Event hooks for the other apps' services: one line after their change, e.g.

    on_catalog_entry_change(instance=edited)        # apps/catalog/services.py
    on_runner_probe(runner_id=runner.pk)            # apps/runners/services.py
    on_trace_upload(trace_id=trace.pk)              # apps/selections/services.py

Each sends an evaluation task by name once the caller's transaction commits (so the task sees
the change), imports none of the decisions code and never raises into the caller: a lost
message is caught by the periodic sweep.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import models, transaction

from apps.catalog.models import Capability, EngineRelease, ModelSpec, ReleaseBackend
from config.celery import app as celery_app

CATALOG_TASK = "decisions.evaluate_catalog_change"
RUNNER_TASK = "decisions.evaluate_runner_probe"
TRACE_TASK = "decisions.evaluate_trace_upload"
SWEEP_TASK = "decisions.sweep"


def _send_on_commit(name: str, **kwargs: Any) -> None:
    # robust: a broker outage is logged, not raised into the caller; the sweep catches up.
    transaction.on_commit(lambda: celery_app.send_task(name, kwargs=kwargs), robust=True)


# Ids changed inside a `batched_catalog_changes()` block, sent as one task when it ends.
_catalog_batch: contextvars.ContextVar[dict[str, set[int]] | None] = contextvars.ContextVar(
    "catalog_batch", default=None
)


@contextmanager
def batched_catalog_changes() -> Iterator[None]:
    """A bulk catalog change (load, import) evaluates its records once, not once per row."""
    batch: dict[str, set[int]] = {"capability_ids": set(), "release_ids": set(), "model_ids": set()}
    token = _catalog_batch.set(batch)
    try:
        yield
    finally:
        _catalog_batch.reset(token)
    if any(batch.values()):
        _send_on_commit(CATALOG_TASK, **{key: sorted(ids) for key, ids in batch.items()})


def on_catalog_change(
    *,
    capability_ids: Iterable[int] = (),
    release_ids: Iterable[int] = (),
    model_ids: Iterable[int] = (),
) -> None:
    changed = {
        "capability_ids": list(capability_ids),
        "release_ids": list(release_ids),
        "model_ids": list(model_ids),
    }
    batch = _catalog_batch.get()
    if batch is None:
        _send_on_commit(CATALOG_TASK, **changed)
        return
    for key, ids in changed.items():
        batch[key].update(ids)


# Catalog rows whose change a decision can depend on, and how each names its ids.
_CATALOG_IDS: dict[type[models.Model], Callable[[Any, int], dict[str, list[int]]]] = {
    Capability: lambda row, pk: {"capability_ids": [pk]},
    EngineRelease: lambda row, pk: {"release_ids": [pk]},
    ReleaseBackend: lambda row, pk: {"release_ids": [row.release_id]},
    ModelSpec: lambda row, pk: {"model_ids": [pk]},
}


def on_catalog_entry_change(*, instance: models.Model, pk: int | None = None) -> None:
    """For the catalog's entry_create/update/delete: any row; `pk` when it is deleted."""
    ids = _CATALOG_IDS.get(type(instance))
    if ids is not None:
        on_catalog_change(**ids(instance, instance.pk if pk is None else pk))


def on_runner_probe(*, runner_id: int) -> None:
    _send_on_commit(RUNNER_TASK, runner_id=runner_id)


def on_trace_upload(*, trace_id: int) -> None:
    _send_on_commit(TRACE_TASK, trace_id=trace_id)
