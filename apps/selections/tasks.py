"""Celery entry point: compute a selection's candidates in the background.

Loads by id and checks the state first, so a redelivered or duplicated message is harmless: a
finished, reset or archived selection is skipped, and a second run over a queued or running one
recomputes the same rows (the service replaces them under a row lock).
"""

from __future__ import annotations

from celery import shared_task
from django.core.exceptions import PermissionDenied, ValidationError

from apps.selections import services
from apps.selections.choices import ComputeState, SelectionState
from apps.selections.models import Selection

PENDING = (ComputeState.QUEUED, ComputeState.RUNNING)


def _fail(selection_id: int, message: str) -> None:
    """Record the failure unless the goal was changed (and the computation reset) meanwhile."""
    Selection.objects.filter(pk=selection_id, computation=ComputeState.RUNNING).update(
        computation=ComputeState.FAILED, computation_error=message[:2000]
    )


@shared_task(name=services.COMPUTE_TASK, ignore_result=True)
def compute_candidates(selection_id: int) -> str:
    """Returns what happened: missing, skipped, done or failed."""
    selection = (
        Selection.objects.select_related("team", "model", "computation_requested_by")
        .filter(pk=selection_id)
        .first()
    )
    if selection is None:
        return "missing"
    if selection.computation not in PENDING or selection.state == SelectionState.ARCHIVED:
        return "skipped"
    Selection.objects.filter(pk=selection_id, computation__in=PENDING).update(
        computation=ComputeState.RUNNING
    )
    try:
        services.candidates_compute(
            actor_user=selection.computation_requested_by, selection=selection
        )
    except (ValidationError, PermissionDenied) as error:
        messages = getattr(error, "messages", None) or [str(error)]
        _fail(selection_id, " ".join(messages))
        return "failed"
    except Exception:
        _fail(selection_id, "The computation stopped on an internal error; it is logged.")
        raise
    return "done"
