"""Benchmark pages: plan list, plan create (from a selection), plan and job detail, cancel."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.scoping import get_scoped_or_404
from apps.benchmarks import services
from apps.benchmarks.choices import JOB_TERMINAL
from apps.benchmarks.forms import PlanForm
from apps.benchmarks.plan_identity import PlanOptionError, default_load_points
from apps.benchmarks.search import search_view
from apps.benchmarks.selectors import (
    job_attempts,
    job_results,
    jobs_of,
    plan_checklist,
    plan_jobs,
    plan_progress,
    plans_of,
    progress_fraction,
)
from apps.selections.models import Selection

PAGE_SIZE = 25


def _team(request: HttpRequest):
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    return request.team


@login_required
def plan_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(plans_of(team=_team(request)), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "benchmarks/plan_list.html", {"page": page})


# Service errors named after a PlanOptions field that the form spells as several fields.
FORM_FIELDS = {"speculative": "speculative_method"}


def _add_errors(form: PlanForm, error: ValidationError) -> None:
    for field, problems in error.message_dict.items():
        field = FORM_FIELDS.get(field, field)
        form.add_error(field if field in form.fields else None, problems)


@login_required
def plan_create(request: HttpRequest, selection_id: int) -> HttpResponse:
    team = _team(request)
    selection = get_scoped_or_404(Selection.objects.all(), team, pk=selection_id)
    form = PlanForm(request.POST or None, initial={"max_attempts": settings.BENCHMARK_MAX_ATTEMPTS})
    if request.method == "POST" and form.is_valid():
        try:
            plan = services.plan_create(
                actor_user=request.user,
                team=team,
                selection_id=selection.pk,
                options=form.options(),
                title=form.cleaned_data["title"],
            )
        except (ValidationError, PlanOptionError) as error:
            if isinstance(error, PlanOptionError):
                error = ValidationError({error.field: str(error)})
            _add_errors(form, error)
        else:
            messages.success(request, f"Plan {plan.title} is dispatched.")
            return redirect("benchmarks:plan-detail", plan_id=plan.pk)
    try:
        defaults = default_load_points(selection.workload)
    except (ValueError, KeyError):
        defaults = []
    context = {
        "form": form,
        "selection": selection,
        "chosen": selection.candidates.filter(chosen=True).select_related("accelerator"),
        "default_points": defaults,
    }
    return render(request, "benchmarks/plan_create.html", context)


@login_required
def plan_detail(request: HttpRequest, plan_id: int) -> HttpResponse:
    plan = get_scoped_or_404(plans_of(team=_team(request)), request.team, pk=plan_id)
    jobs = [(job, progress_fraction(job)) for job in plan_jobs(plan).select_related("plan")]
    searches = [(job, search_view(job)) for job, _ in jobs] if plan.search else []
    context = {
        "plan": plan,
        "jobs": jobs,
        "searches": searches,
        "terminal_states": sorted(JOB_TERMINAL),
        "checklist": plan_checklist(plan),
    }
    return render(request, "benchmarks/plan_detail.html", context)


@login_required
@require_GET
def plan_progress_json(request: HttpRequest, plan_id: int) -> JsonResponse:
    plan = get_scoped_or_404(plans_of(team=_team(request)), request.team, pk=plan_id)
    return JsonResponse(plan_progress(plan))


@login_required
@require_POST
def plan_cancel(request: HttpRequest, plan_id: int) -> HttpResponse:
    plan = services.plan_cancel(actor_user=request.user, team=_team(request), plan_id=plan_id)
    messages.info(request, f"Cancel requested for every unfinished job of {plan.title}.")
    return redirect("benchmarks:plan-detail", plan_id=plan.pk)


@login_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_scoped_or_404(jobs_of(team=_team(request)), request.team, pk=job_id)
    context = {
        "job": job,
        "attempts": job_attempts(job),
        "uploads": job.uploads.order_by("load_point_index", "chunk_index").defer("body"),
        "results": job_results(job=job),
        "fraction": progress_fraction(job),
    }
    return render(request, "benchmarks/job_detail.html", context)


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = services.job_cancel(actor_user=request.user, team=_team(request), job_id=job_id)
    messages.info(request, f"Cancel requested for {job}.")
    return redirect("benchmarks:job-detail", job_id=job.pk)
