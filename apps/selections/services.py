"""Writes for selections, traces and candidates; each one transaction with its audit event.

Callers pass validated documents (api/serializers.py); services check the role, write, and
record the change. Candidate generation runs before its transaction opens, so the database is
locked only while the rows are replaced.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import asdict
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.template.defaultfilters import pluralize
from stackselect_domain.workload import trace_summary

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot
from apps.catalog.models import ModelSpec
from apps.core.parsers import check_values
from apps.selections.candidates import Verdict, evaluate
from apps.selections.candidates.goal import goal_from_documents
from apps.selections.candidates.ranking import TeamFits
from apps.selections.catalog_adapter import CatalogSnapshot
from apps.selections.choices import CandidateOutcome, ComputeState, SelectionState
from apps.selections.efficiency_fit import TeamFit
from apps.selections.models import Candidate, Selection, WorkloadTrace
from apps.selections.replay import resolved_workload
from apps.selections.selectors import group_dropped
from apps.selections.signals import team_factors_wanted, trace_uploaded
from apps.selections.traces import parse_trace, summary_document, workload_fragment
from config.celery import app as celery_app

_INSERT_BATCH = 1000
COMPUTE_TASK = "selections.compute_candidates"
# The fields that make up a goal: candidates computed for other values answer another goal.
_GOAL_FIELDS = ("model_id", "custom_model", "workload", "slo", "constraints")


def _documents(data: dict[str, Any]) -> dict[str, Any]:
    workload = data["workload"]
    slug = workload.get("model")
    return {
        "title": data["title"],
        "model": ModelSpec.objects.get(slug=slug) if slug else None,
        "custom_model": None if slug else workload["custom_model"],
        "workload": workload,
        "slo": data["slo"],
        "constraints": data["constraints"],
    }


def _goal_of(selection: Selection) -> tuple[Any, ...]:
    return tuple(getattr(selection, name) for name in _GOAL_FIELDS)


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
    _reset_goal(selection)
    _record_change(Actor.for_user(actor_user), selection, "selection.update", before)
    return selection


def _reset_goal(selection: Selection) -> None:
    """Save a changed goal: the candidates answered the old one, so they and their state go."""
    selection.state = SelectionState.DRAFT
    selection.computation = ComputeState.IDLE
    selection.dropped_groups = None
    selection.save()
    _delete_candidates(selection)


# Rows that referred to a deleted candidate, by its stack: (model, field, row ids) each.
Unlinked = dict[str, list[tuple[type[models.Model], str, list[int]]]]


def _stack_key(stack: dict[str, Any]) -> str:
    return json.dumps(stack, sort_keys=True)


def _delete_candidates(selection: Selection) -> Unlinked:
    """Delete the selection's candidates in a few statements. Django's delete() loads every
    row first (thousands, with their JSON columns, then one query each), which made a PUT of
    the goal take seconds; the references to candidates (jobs, runs) are all SET NULL, so
    they are cleared with one UPDATE each and the rows go with one DELETE. Returns the rows
    unlinked, by their candidate's stack, for a recompute of the same goal to link again."""
    doomed = Candidate.objects.filter(selection=selection)
    references = [
        relation
        for relation in Candidate._meta.get_fields(include_hidden=True)
        if relation.auto_created and relation.one_to_many
    ]
    if any(relation.on_delete is not models.SET_NULL for relation in references):
        doomed.delete()  # a reference that cascades or protects needs Django's collector
        return {}
    unlinked: Unlinked = defaultdict(list)
    for relation in references:
        name, model = relation.field.name, relation.related_model
        rows = model._base_manager.filter(**{f"{name}__in": doomed})
        by_stack: dict[str, list[int]] = defaultdict(list)
        for pk, stack in rows.values_list("pk", f"{name}__stack"):
            by_stack[_stack_key(stack)].append(pk)
        for key, pks in by_stack.items():
            unlinked[key].append((model, name, pks))
        rows.update(**{name: None})
    doomed._raw_delete(doomed.db)  # no signal receivers on candidates; references cleared
    return unlinked


def _link_again(unlinked: Unlinked, created: list[Candidate]) -> int:
    """Point the unlinked jobs and runs at the new candidate of the same stack: a recompute
    of the same goal answers with the same stacks, and their evidence stays theirs. Returns
    how many rows were linked."""
    linked = 0
    for candidate in created:
        for model, name, pks in unlinked.get(_stack_key(candidate.stack), ()):
            linked += model._base_manager.filter(pk__in=pks).update(**{name: candidate})
    return linked


def _team_factors(selection: Selection) -> TeamFits:
    """Efficiency factors fitted on the team's measured runs (of this goal and its others), per
    (accelerator, engine), from whichever app answers `team_factors_wanted` (the evidence
    app's calibration); none without an answer."""
    factors: dict[tuple[str, str], TeamFit] = {}
    for _, answer in team_factors_wanted.send(sender=Selection, selection=selection):
        factors.update(answer or {})
    return factors


def _record_change(
    actor: Actor, selection: Selection, action: str, before: dict[str, Any], message: str = ""
) -> None:
    audit_record(
        actor=actor,
        action=action,
        obj=selection,
        team=selection.team,
        before=before,
        after=snapshot(selection),
        message=message,
    )


def _chosen_stacks(selection: Selection) -> set[str]:
    """The stacks of the selection's chosen candidates, for a recompute to choose again."""
    chosen = selection.candidates.filter(chosen=True).values_list("stack", flat=True)
    return {_stack_key(stack) for stack in chosen}


def _candidate_row(selection: Selection, verdict: Verdict, chosen: set[str]) -> Candidate:
    stack = verdict.stack
    described = stack.as_dict()
    return Candidate(
        selection=selection,
        outcome=CandidateOutcome.KEPT if verdict.kept else CandidateOutcome.DROPPED,
        chosen=verdict.kept and _stack_key(described) in chosen,
        rank=verdict.rank,
        release=stack.release,
        backend=stack.backend,
        accelerator=stack.accelerator,
        stack=described,
        score=verdict.score,
        estimate=verdict.estimate if verdict.kept else None,
        hints=[hint.as_dict() for hint in verdict.hints],
        reasons=[reason.as_dict() for reason in verdict.reasons],
        capability_ids=sorted(set(verdict.capability_ids)),
    )


@transaction.atomic
def candidates_request(*, actor_user: Any, selection: Selection) -> Selection:
    """Queue the computation of the selection's candidates; the task is sent on commit.

    Computing takes seconds, so the page and the API return at once and poll the state.
    """
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    locked = Selection.objects.select_for_update().get(pk=selection.pk)
    if locked.state == SelectionState.ARCHIVED:
        raise ValidationError({"state": "This selection is archived: its goal is not computed."})
    before = {"computation": locked.computation}
    locked.computation = ComputeState.QUEUED
    locked.computation_error = ""
    locked.computation_requested_by = actor_user
    locked.save(update_fields=["computation", "computation_error", "computation_requested_by"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="selection.candidates_request",
        obj=locked,
        team=locked.team,
        before=before,
        after={"computation": locked.computation},
    )
    send = partial(celery_app.send_task, COMPUTE_TASK, kwargs={"selection_id": locked.pk})
    transaction.on_commit(send, robust=True)
    return locked


def candidates_compute(
    *, actor_user: Any, selection: Selection, team_fits: TeamFits | None = None
) -> Selection:
    """Enumerate, filter and rank stacks for the selection's goal and store them all.

    Runs in the background task (tasks.py), or directly where a caller needs the result at
    once. If the goal changed while this ran, nothing is stored. `team_fits` takes fitted
    factors per (accelerator, engine); by default they are the ones calibration fitted on the
    team's measured runs of this selection. Jobs and runs of the old candidates are linked to
    the new candidate of the same stack, and a chosen stack kept again is chosen again.
    """
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    constraints = selection.constraints or {}
    snapshot_ = CatalogSnapshot.load(accelerator_slugs=constraints.get("accelerators") or None)
    try:
        goal = goal_from_documents(
            model=selection.model,
            workload=resolved_workload(selection.workload, team=selection.team),
            slo=selection.slo,
            constraints=constraints,
        )
    except ValueError as error:
        field, _, message = str(error).partition(": ")
        raise ValidationError({"workload": f"{field}: {message}" if message else field}) from error
    if team_fits is None:
        team_fits = _team_factors(selection)
    evaluation = evaluate(snapshot_, goal, team_fits=team_fits)
    verdicts = evaluation.kept + evaluation.dropped
    with transaction.atomic():
        locked = Selection.objects.select_for_update().get(pk=selection.pk)
        if locked.state == SelectionState.ARCHIVED or _goal_of(locked) != _goal_of(selection):
            return locked
        chosen = _chosen_stacks(locked)
        unlinked = _delete_candidates(locked)
        created = Candidate.objects.bulk_create(
            (_candidate_row(locked, verdict, chosen) for verdict in verdicts),
            batch_size=_INSERT_BATCH,
        )
        chosen_again = {_stack_key(c.stack) for c in created if c.chosen}
        no_longer_kept = [json.loads(key) for key in sorted(chosen - chosen_again)]
        linked = _link_again(unlinked, created)
        groups = group_dropped(
            (verdict.stack.as_dict(), [reason.as_dict() for reason in verdict.reasons])
            for verdict in evaluation.dropped
        )
        locked.state = SelectionState.CANDIDATES_READY
        locked.computation = ComputeState.DONE
        locked.computation_error = ""
        locked.dropped_groups = [asdict(group) for group in groups]
        locked.save(
            update_fields=[
                "state",
                "computation",
                "computation_error",
                "dropped_groups",
                "updated_at",
            ]
        )
        audit_record(
            actor=Actor.for_user(actor_user),
            action="selection.candidates_compute",
            obj=locked,
            team=locked.team,
            after={
                "kept": len(evaluation.kept),
                "dropped": len(evaluation.dropped),
                "reasons": dict(sorted((group.code, group.count) for group in groups)),
                "leader": evaluation.kept[0].stack.as_dict() if evaluation.kept else None,
                "team_factors": {
                    f"{accelerator}/{engine}": {
                        "compute": fit.efficiency.compute,
                        "bandwidth": fit.efficiency.bandwidth,
                        "measurements": fit.measurements,
                        "goals": list(fit.goals),
                    }
                    for (accelerator, engine), fit in sorted(team_fits.items())
                },
                "jobs_and_runs_linked_again": linked,
                "chosen_again": len(chosen_again),
                "chosen_no_longer_kept": no_longer_kept,
            },
            message=f"{len(evaluation.kept)} kept, {len(evaluation.dropped)} dropped"
            + _chosen_words(len(chosen_again), len(no_longer_kept)),
        )
    return locked


def _chosen_words(again: int, lost: int) -> str:
    if not again and not lost:
        return ""
    words = f"; {again} chosen stack{pluralize(again)} chosen again"
    return words + (f", {lost} no longer kept" if lost else "")


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
    replay: bool = False,
) -> WorkloadTrace:
    """Store a trace for the selection; with `apply`, its lengths and arrival replace the
    workload's (and the candidates, which answered the old workload, are deleted).

    The arrival is a gamma process fitted to the trace unless `replay` asks for the trace's
    own timestamps, request by request."""
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    try:
        rows = parse_trace(content, filename=name)
        summary = trace_summary(rows)
        stored = [_stored_row(row) for row in rows]
        check_values({"rows": stored})  # a prefix id holding NUL: no JSON column takes it
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
        rows=stored,
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
    trace_uploaded.send(sender=WorkloadTrace, trace_id=trace.pk)
    if apply:
        selection = Selection.objects.select_for_update().get(pk=selection.pk)
        before = snapshot(selection)
        arrival = dict(workload_fragment(summary)["arrival"])
        if replay:
            arrival = {"process": "trace", "trace": trace.pk, "speedup": 1.0}
        peak = (selection.workload.get("arrival") or {}).get("peak_factor")
        if peak:
            arrival["peak_factor"] = peak
        selection.workload = {**selection.workload, **workload_fragment(summary)}
        selection.workload["arrival"] = arrival
        _reset_goal(selection)
        message = f"workload taken from trace {trace.name}"
        _record_change(actor, selection, "selection.update", before, message)
    return trace


@transaction.atomic
def selection_archive(*, actor_user: Any, selection: Selection) -> Selection:
    """Hide a selection from the list and stop its computation; its rows and plans remain."""
    require_role(user=actor_user, team=selection.team, minimum=Role.ENGINEER)
    selection = Selection.objects.select_for_update().get(pk=selection.pk)
    before = snapshot(selection)
    selection.state = SelectionState.ARCHIVED
    selection.computation = ComputeState.IDLE
    selection.save(update_fields=["state", "computation", "updated_at"])
    _record_change(Actor.for_user(actor_user), selection, "selection.archive", before)
    return selection


def _stored_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        key: row.get(key) for key in ("timestamp", "input_tokens", "output_tokens", "prefix_id")
    }
