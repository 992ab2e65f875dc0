"""The decisions app's reactions to catalog, runner and trace events (connected in apps.py).

The lower apps announce their changes with signals (apps/catalog/signals.py,
apps/runners/signals.py, apps/selections/signals.py) and import nothing of this app. Each
receiver sends an evaluation task by name once the change's transaction commits (so the task
sees the change) and never raises into the sender: a lost message is caught by the periodic
sweep.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from apps.catalog.signals import catalog_changed
from apps.runners.signals import runner_probed
from apps.selections.signals import trace_uploaded
from config.celery import app as celery_app

CATALOG_TASK = "decisions.evaluate_catalog_change"
RUNNER_TASK = "decisions.evaluate_runner_probe"
TRACE_TASK = "decisions.evaluate_trace_upload"
SWEEP_TASK = "decisions.sweep"


def _send_on_commit(name: str, **kwargs: Any) -> None:
    # robust: a broker outage is logged, not raised into the caller; the sweep catches up.
    transaction.on_commit(lambda: celery_app.send_task(name, kwargs=kwargs), robust=True)


def _on_catalog_change(
    sender: Any, *, capability_ids: list[int], release_ids: list[int], model_ids: list[int], **_
) -> None:
    _send_on_commit(
        CATALOG_TASK, capability_ids=capability_ids, release_ids=release_ids, model_ids=model_ids
    )


def _on_runner_probe(sender: Any, *, runner_id: int, **_: Any) -> None:
    _send_on_commit(RUNNER_TASK, runner_id=runner_id)


def _on_trace_upload(sender: Any, *, trace_id: int, **_: Any) -> None:
    _send_on_commit(TRACE_TASK, trace_id=trace_id)


def connect() -> None:
    catalog_changed.connect(_on_catalog_change, dispatch_uid="decisions.catalog")
    runner_probed.connect(_on_runner_probe, dispatch_uid="decisions.runner")
    trace_uploaded.connect(_on_trace_upload, dispatch_uid="decisions.trace")
