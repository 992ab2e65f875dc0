"""Writes a person makes: create a plan from a selection's chosen candidates, cancel jobs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from stackselect_domain.speculative import Speculative, engine_refusal
from stackselect_domain.tuning import backend_knobs, engine_backend, engine_label
from stackselect_domain.workload import WorkloadError

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.benchmarks.choices import ATTEMPT_LEASED, JOB_TERMINAL, JobState, RunMode
from apps.benchmarks.dispatch import Fleet, attempt_dispatch, job_finish
from apps.benchmarks.engine_spec import arch_for, job_engine, model_identity, model_store_key
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan
from apps.benchmarks.plan_identity import (
    PlanOptionError,
    PlanOptions,
    build_identity,
    default_load_points,
    identity_fingerprint,
    normalise_load_points,
    plan_workload,
    request_schedule,
    search_section,
)
from apps.benchmarks.quality import quality_section
from apps.benchmarks.tuning import candidate_trials, plan_workload_class, tuned_engine
from apps.selections.choices import SelectionState
from apps.selections.models import Candidate, Selection
from apps.selections.replay import resolved_workload


def _one_precision(candidates: list[Candidate]) -> str:
    precisions = sorted({str(c.stack.get("precision")) for c in candidates})
    if len(precisions) != 1:
        raise ValidationError(
            {
                "candidates": f"The chosen candidates use {' and '.join(precisions)}; a plan "
                "measures one precision recipe, so its results compare: one plan per precision."
            }
        )
    return precisions[0]


def _job_engine(
    candidate: Candidate,
    documents: dict[str, Any],
    *,
    run_mode: str,
    model: dict[str, Any],
    kv_dtype: str,
    speculative: Speculative | None,
) -> dict[str, Any]:
    try:
        return job_engine(
            run_mode=run_mode,
            speculative=speculative,
            stack=candidate.stack,
            arch=documents["arch"],
            accelerator=candidate.accelerator,
            release=candidate.release,
            served_model_name=model["checkpoint"],
            model_key=model_store_key(model),
            kv_dtype=kv_dtype,
            mean_context=documents["mean_context"],
        )
    except ValueError as error:
        raise ValidationError({"candidates": f"{candidate}: {error}"}) from error


def _kv_dtype(selection: Selection) -> str:
    chosen = selection.workload.get("kv_dtype")
    if chosen:
        return str(chosen)
    native = selection.model.native_dtype if selection.model else ""
    return "fp16" if native == "fp16" else "bf16"


def _plan_documents(selection: Selection, options: PlanOptions) -> dict[str, Any]:
    """Workload, load points, search and schedule, with errors named after their field."""
    try:
        document = resolved_workload(selection.workload, team=selection.team)
        workload = plan_workload(document)
        points = normalise_load_points(list(options.load_points) or default_load_points(document))
        search = search_section(
            options.mode,
            selection.slo,
            points,
            max_probes=options.max_probes,
            requests_per_probe=options.request_count,
        )
        requests = request_schedule(workload, count=options.request_count, seed=options.seed)
    except (PlanOptionError, WorkloadError) as error:
        raise ValidationError({error.field: str(error)}) from error
    try:
        arch = arch_for(selection.model, selection.custom_model)
    except ValueError as error:  # the estimator's check of a custom model's architecture
        raise ValidationError({"model": str(error)}) from error
    mean_context = workload.input_length.mean() + workload.output_length.mean() / 2
    return {
        "workload_class": plan_workload_class(workload),
        "points": points,
        "search": search,
        "requests": requests,
        "arch": arch,
        "mean_context": mean_context,
    }


@transaction.atomic
def plan_create(
    *, actor_user: Any, team: Team, selection_id: int, options: PlanOptions, title: str = ""
) -> BenchmarkPlan:
    """One plan with one identity; one job per chosen candidate, each dispatched on commit."""
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    selection = get_scoped_or_404(Selection.objects.select_related("model"), team, pk=selection_id)
    candidates = list(
        selection.candidates.filter(chosen=True).select_related("release__engine", "accelerator")
    )
    if not candidates:
        raise ValidationError({"candidates": "Choose at least one candidate to benchmark."})
    precision = _one_precision(candidates)
    kv_dtype = _kv_dtype(selection)
    for candidate in candidates:
        _refuse_speculation_the_engine_lacks(candidate, options.speculative)
        _refuse_settings_without_a_knob(candidate, options, kv_dtype=kv_dtype)
    documents = _plan_documents(selection, options)
    model = model_identity(selection.model, selection.custom_model)
    engines = [
        _job_engine(
            candidate,
            documents,
            run_mode=options.run_mode,
            model=model,
            kv_dtype=kv_dtype,
            speculative=options.speculative,
        )
        for candidate in candidates
    ]
    identity = build_identity(
        model=model,
        precision=precision,
        kv_dtype=kv_dtype,
        workload=selection.workload,
        options=options,
        load_points=documents["points"],
        search=documents["search"],
        simulated=options.run_mode == RunMode.SIMULATED,
    )
    count = BenchmarkPlan.objects.filter(selection=selection).count()
    plan = BenchmarkPlan.objects.create(
        team=team,
        selection=selection,
        title=(title.strip() or f"{selection.title}: benchmark {count + 1}")[:200],
        created_by=actor_user,
        mode=options.mode,
        run_mode=options.run_mode,
        identity=identity,
        identity_fingerprint=identity_fingerprint(identity),
        load_points=documents["points"],
        search=documents["search"],
        requests=documents["requests"],
        max_attempts=options.max_attempts,
    )
    jobs = []
    for candidate, engine in zip(candidates, engines, strict=True):
        jobs += _candidate_jobs(plan, candidate, engine, options, documents, selection.workload)
    actor = Actor.for_user(actor_user)
    audit_record(
        actor=actor,
        action="plan.create",
        obj=plan,
        team=team,
        after={
            "selection_id": selection.pk,
            "identity_fingerprint": plan.identity_fingerprint,
            "mode": plan.mode,
            "run_mode": plan.run_mode,
            "speculative": plan.identity.get("speculative"),
            "jobs": [job.pk for job in jobs],
        },
    )
    _selection_mark_planned(selection, actor)
    fleet = Fleet.for_jobs(jobs)
    for job in jobs:
        attempt_dispatch(job, number=1, fleet=fleet)
    return plan


def _refuse_speculation_the_engine_lacks(
    candidate: Candidate, speculative: Speculative | None
) -> None:
    """A method the candidate's engine cannot speculate with would only fail on the runner;
    refuse it while planning, naming the candidate, its engine and the methods it has."""
    if speculative is None:
        return
    refusal = engine_refusal(str(candidate.stack.get("engine") or ""), speculative.method)
    if refusal:
        raise ValidationError(
            {"speculative": f"{candidate}: {refusal}; plan it without this candidate"}
        )


def _refuse_settings_without_a_knob(
    candidate: Candidate, options: PlanOptions, *, kv_dtype: str
) -> None:
    """A sweep over a setting the candidate's engine (on the backend it will run the stack on,
    for LMDeploy, which speculates on PyTorch only) has no knob for would only fail on the
    runner; refuse it while planning, naming the engine, its backend and the setting. The
    plan's speculative setting is what speculates: a catalog stack carries none."""
    stack = candidate.stack
    engine = stack.get("engine", "")
    backend = engine_backend(
        engine,
        precision=stack.get("precision"),
        kv_dtype=kv_dtype,
        speculative=options.speculative is not None,
    )
    knobs = backend_knobs(engine, backend)
    if not options.tuning_sweep or knobs is None:
        return
    missing = sorted(set(options.tuning_values) - set(knobs))
    if missing:
        raise ValidationError(
            {
                "candidates": f"{candidate}: {engine_label(engine, backend)} has no knob for "
                f"{', '.join(missing)}; sweep it in a plan without this candidate"
            }
        )


def _candidate_jobs(
    plan: BenchmarkPlan,
    candidate: Candidate,
    engine: dict[str, Any],
    options: PlanOptions,
    documents: dict[str, Any],
    workload: dict[str, Any],
) -> list[BenchmarkJob]:
    """One job per tuning trial of the candidate (one, unless the plan sweeps)."""
    klass = documents["workload_class"]
    trials = candidate_trials(
        candidate.release, klass, sweep=options.tuning_sweep, values=options.tuning_values
    )
    try:
        quality = (
            quality_section(
                workload=workload,
                stack=candidate.stack,
                evaluation=options.evaluation,
                endpoint=options.endpoint,
            )
            if options.quality_probe
            else None
        )
    except ValueError as error:
        raise ValidationError({"candidates": f"{candidate}: {error}"}) from error
    jobs = []
    for index, trial in enumerate(trials):
        tuned = tuned_engine(
            engine, trial, release=candidate.release, group=candidate.pk, index=index, klass=klass
        )
        jobs.append(
            BenchmarkJob.objects.create(
                plan=plan,
                team=plan.team,
                candidate=candidate,
                stack=candidate.stack,
                engine=tuned,
                tuning=tuned["tuning"],
                quality=quality,
                accelerator=candidate.accelerator.slug,
                gpu_count=int(candidate.stack.get("gpu_count") or 1),
            )
        )
    return jobs


def _selection_mark_planned(selection: Selection, actor: Actor) -> None:
    if Selection.objects.filter(pk=selection.pk, state=SelectionState.CANDIDATES_READY).update(
        state=SelectionState.PLANNED
    ):
        audit_record(
            actor=actor,
            action="selection.planned",
            obj=selection,
            team=selection.team,
            before={"state": SelectionState.CANDIDATES_READY},
            after={"state": SelectionState.PLANNED},
        )


def _cancel(job: BenchmarkJob, actor: Actor) -> None:
    """Cancel at once when no runner holds the job; else ask its runner at the next heartbeat."""
    if job.state in JOB_TERMINAL or job.cancel_requested:
        return
    BenchmarkJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    job.cancel_requested = True
    audit_record(actor=actor, action="job.cancel_request", obj=job, team=job.team)
    if job.attempts.filter(state__in=ATTEMPT_LEASED).exists():
        BenchmarkJob.objects.filter(pk=job.pk).update(
            state_reason="Cancel requested; the runner stops at its next heartbeat."
        )
    else:
        job_finish(
            job, state=JobState.CANCELLED, reason="Cancelled before a runner took it.", actor=actor
        )


@transaction.atomic
def job_cancel(*, actor_user: Any, team: Team, job_id: int) -> BenchmarkJob:
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    job = get_scoped_or_404(BenchmarkJob.objects.select_for_update(), team, pk=job_id)
    _cancel(job, Actor.for_user(actor_user))
    job.refresh_from_db()
    return job


@transaction.atomic
def plan_cancel(*, actor_user: Any, team: Team, plan_id: int) -> BenchmarkPlan:
    require_role(user=actor_user, team=team, minimum=Role.ENGINEER)
    plan = get_scoped_or_404(BenchmarkPlan.objects.all(), team, pk=plan_id)
    actor = Actor.for_user(actor_user)
    for job in plan.jobs.select_for_update().order_by("pk"):
        _cancel(job, actor)
    plan.refresh_from_db()
    return plan
