"""Celery entry points: evaluate the records an event concerns, and the periodic sweep.

Thin by design: each loads ids and calls retests.records_evaluate, which fires each change
once, so a task delivered twice or a sweep run twice fires nothing new.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from celery import shared_task

from apps.decisions import selectors
from apps.decisions.retests import records_evaluate
from apps.decisions.triggers import CATALOG_TASK, RUNNER_TASK, SWEEP_TASK, TRACE_TASK


@shared_task(name=CATALOG_TASK, ignore_result=True)
def evaluate_catalog_change(
    capability_ids: list[int], release_ids: list[int], model_ids: list[int]
) -> dict[str, int]:
    ids = selectors.ids_for_catalog_change(
        capability_ids=capability_ids, release_ids=release_ids, model_ids=model_ids
    )
    return asdict(records_evaluate(record_ids=ids))


@shared_task(name=RUNNER_TASK, ignore_result=True)
def evaluate_runner_probe(runner_id: int) -> dict[str, int]:
    return asdict(records_evaluate(record_ids=selectors.ids_for_runner(runner_id=runner_id)))


@shared_task(name=TRACE_TASK, ignore_result=True)
def evaluate_trace_upload(trace_id: int) -> dict[str, int]:
    return asdict(records_evaluate(record_ids=selectors.ids_for_trace(trace_id=trace_id)))


def sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Every in-force record against the database as it is now (the age trigger uses `now`)."""
    return asdict(records_evaluate(record_ids=selectors.in_force_ids(), now=now))


@shared_task(name=SWEEP_TASK, ignore_result=True)
def sweep_task() -> dict[str, int]:
    """Beat task: catches every change whose event hook is missing or whose task was lost."""
    return sweep()
