"""Writes for selections, traces and candidates; each one transaction with its audit event.

Callers pass validated documents (api/serializers.py); services check the role, write, and
record the change. Candidate generation runs before its transaction opens, so the database is
locked only while the rows are replaced.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot
from apps.catalog.models import ModelSpec
from apps.selections.candidates import Verdict, evaluate
from apps.selections.candidates.goal import goal_from_documents
from apps.selections.candidates.ranking import Efficiencies
from apps.selections.catalog_adapter import CatalogSnapshot
from apps.selections.choices import CandidateOutcome, SelectionState
from apps.selections.models import Candidate, Selection, WorkloadTrace
from apps.selections.traces import parse_trace, summary_document, workload_fragment
from apps.selections.workload import trace_summary

_INSERT_BATCH = 1000


def _documents(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": data["title"],
        "model": ModelSpec.objects.get(slug=data["workload"]["model"]),
        "workload": data["workload"],
        "slo": data["slo"],
        "constraints": data["constraints"],
    }


@transaction.atomic
def selection_create(*, actor_user: Any, team: Team, data: dict[str, Any]) -> Selection:
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    selection = Selection.objects.create(team=team, created_by=actor_user, **_documents(data))
    audit_record(
        actor=Actor.for_user(actor_user),
        action="selection.create",
        obj=selection,
        team=team,
        after=snapshot(selection),
    )
    return selection


@transaction.atomic
def selection_update(*, actor_user: Any, selection: Selection, data: dict[str, Any]) -> Selection:
    """Replace the goal. Its candidates no longer answer it, so they go and the state resets."""
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    selection = Selection.objects.select_for_update().get(pk=selection.pk)
    before = snapshot(selection)
    for name, value in _documents(data).items():
        setattr(selection, name, value)
    selection.state = SelectionState.DRAFT
    selection.save()
    selection.candidates.all().delete()
    audit_record(
        actor=Actor.for_user(actor_user),
        action="selection.update",
        obj=selection,
        team=selection.team,
        before=before,
        after=snapshot(selection),
    )
    return selection


def _candidate_row(selection: Selection, verdict: Verdict) -> Candidate:
    stack = verdict.stack
    return Candidate(
        selection=selection,
        outcome=CandidateOutcome.KEPT if verdict.kept else CandidateOutcome.DROPPED,
        rank=verdict.rank,
        release=stack.release,
        backend=stack.backend,
        accelerator=stack.accelerator,
        stack=stack.as_dict(),
        score=verdict.score,
        estimate=verdict.estimate if verdict.kept else None,
        hints=[hint.as_dict() for hint in verdict.hints],
        reasons=[reason.as_dict() for reason in verdict.reasons],
        capability_ids=sorted(set(verdict.capability_ids)),
    )


def candidates_compute(
    *, actor_user: Any, selection: Selection, efficiencies: Efficiencies | None = None
) -> Selection:
    """Enumerate, filter and rank stacks for the selection's goal and store them all.

    `efficiencies` takes fitted factors per (accelerator, engine) from calibration.
    """
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    constraints = selection.constraints or {}
    snapshot_ = CatalogSnapshot.load(accelerator_slugs=constraints.get("accelerators") or None)
    goal = goal_from_documents(
        model=selection.model,
        workload=selection.workload,
        slo=selection.slo,
        constraints=constraints,
    )
    evaluation = evaluate(snapshot_, goal, efficiencies=efficiencies)
    verdicts = evaluation.kept + evaluation.dropped
    with transaction.atomic():
        locked = Selection.objects.select_for_update().get(pk=selection.pk)
        locked.candidates.all().delete()
        Candidate.objects.bulk_create(
            (_candidate_row(locked, verdict) for verdict in verdicts), batch_size=_INSERT_BATCH
        )
        locked.state = SelectionState.CANDIDATES_READY
        locked.save(update_fields=["state", "updated_at"])
        codes = Counter(reason.code for v in evaluation.dropped for reason in v.reasons)
        audit_record(
            actor=Actor.for_user(actor_user),
            action="selection.candidates_compute",
            obj=locked,
            team=locked.team,
            after={
                "kept": len(evaluation.kept),
                "dropped": len(evaluation.dropped),
                "reasons": dict(sorted(codes.items())),
                "leader": evaluation.kept[0].stack.as_dict() if evaluation.kept else None,
            },
            message=f"{len(evaluation.kept)} kept, {len(evaluation.dropped)} dropped",
        )
    return locked


@transaction.atomic
def candidates_choose(*, actor_user: Any, selection: Selection, candidate_ids: list[int]) -> int:
    """Mark exactly these kept candidates as chosen for the benchmark plan; returns the count."""
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    kept = selection.candidates.filter(outcome=CandidateOutcome.KEPT)
    found = set(kept.filter(pk__in=candidate_ids).values_list("pk", flat=True))
    unknown = sorted(set(candidate_ids) - found)
    if unknown:
        raise ValidationError({"chosen": f"Not kept candidates of this selection: {unknown}."})
    before = sorted(kept.filter(chosen=True).values_list("pk", flat=True))
    kept.exclude(pk__in=found).filter(chosen=True).update(chosen=False)
    kept.filter(pk__in=found).update(chosen=True)
    audit_record(
        actor=Actor.for_user(actor_user),
        action="selection.candidates_choose",
        obj=selection,
        team=selection.team,
        before={"chosen": before},
        after={"chosen": sorted(found)},
    )
    return len(found)


@transaction.atomic
def trace_upload(
    *,
    actor_user: Any,
    selection: Selection,
    name: str,
    content: bytes,
    apply: bool = True,
) -> WorkloadTrace:
    """Store a trace for the selection; with `apply`, its lengths and arrival replace the
    workload's (and the candidates, which answered the old workload, are deleted)."""
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    try:
        rows = parse_trace(content, filename=name)
        summary = trace_summary(rows)
    except ValueError as error:
        field, _, message = str(error).partition(": ")
        raise ValidationError({"file": f"{field}: {message}" if message else field}) from error
    trace = WorkloadTrace.objects.create(
        team=selection.team,
        selection=selection,
        name=name[:200] or "trace",
        uploaded_by=actor_user,
        sha256=hashlib.sha256(content).hexdigest(),
        row_count=summary.requests,
        rows=[_stored_row(row) for row in rows],
        summary=summary_document(summary),
    )
    actor = Actor.for_user(actor_user)
    audit_record(
        actor=actor,
        action="workload_trace.create",
        obj=trace,
        team=selection.team,
        after=snapshot(trace, exclude=["rows"]),
    )
    if apply:
        selection = Selection.objects.select_for_update().get(pk=selection.pk)
        before = snapshot(selection)
        arrival = dict(workload_fragment(summary)["arrival"])
        peak = (selection.workload.get("arrival") or {}).get("peak_factor")
        if peak:
            arrival["peak_factor"] = peak
        selection.workload = {**selection.workload, **workload_fragment(summary)}
        selection.workload["arrival"] = arrival
        selection.state = SelectionState.DRAFT
        selection.save()
        selection.candidates.all().delete()
        audit_record(
            actor=actor,
            action="selection.update",
            obj=selection,
            team=selection.team,
            before=before,
            after=snapshot(selection),
            message=f"workload taken from trace {trace.name}",
        )
    return trace


def _stored_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        key: row.get(key) for key in ("timestamp", "input_tokens", "output_tokens", "prefix_id")
    }
