"""The selection wizard: goal -> candidates -> benchmark plan, plus the list and trace upload."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from stackselect_domain.words import grouped

from apps.selections import charts, published_nearest, row_cache, selectors, services
from apps.selections.api.serializers import SelectionInputSerializer
from apps.selections.choices import CandidateOutcome, ComputeState
from apps.selections.forms import (
    CandidateFilterForm,
    CompareForm,
    GoalForm,
    PlanFilterForm,
    TraceUploadForm,
    posted_ids,
)
from apps.selections.models import Selection
from apps.selections.slo_presets import preset_origin

PAGE_SIZE = 25
CANDIDATE_PAGE_SIZE = 50


def _team_or_403(request: HttpRequest):
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    return request.team


@login_required
def selection_list(request: HttpRequest) -> HttpResponse:
    """The team's live selections, or with ?archived=1 the archived ones."""
    archived = request.GET.get("archived") == "1"
    selections = selectors.listed_selections(team=request.team, archived=archived)
    page = Paginator(selections, PAGE_SIZE).get_page(request.GET.get("page"))
    stages = selectors.stage_labels(selections=page.object_list)
    context = {
        "page": page,
        "rows": [(selection, stages[selection.pk]) for selection in page.object_list],
        "archived": archived,
        "query": "archived=1" if archived else "",
    }
    return render(request, "selections/selection_list.html", context)


def _save_goal(request: HttpRequest, form: GoalForm, selection: Selection | None):
    """Validate the form's document with the API serializer and write it; None on errors."""
    document = SelectionInputSerializer(data=form.to_document(), context={"team": request.team})
    if not document.is_valid():
        form.add_document_errors(document.errors)
        return None
    try:
        if selection is None:
            return services.selection_create(
                actor_user=request.user, team=request.team, data=document.validated_data
            )
        return services.selection_update(
            actor_user=request.user, selection=selection, data=document.validated_data
        )
    except ValidationError as error:
        form.add_error(None, error.messages)
        return None


@login_required
def goal_edit(request: HttpRequest, selection_id: int | None = None) -> HttpResponse:
    """Step 1. A new selection, or a changed goal (which discards the old candidates)."""
    team = _team_or_403(request)
    selection = None
    initial = {}
    if selection_id is not None:
        selection = selectors.selection_get(team=team, selection_id=selection_id)
        initial = GoalForm.initial_from(
            selection.title, selection.workload, selection.slo, selection.constraints
        )
    existing = selection.workload if selection else None
    form = GoalForm(request.POST or None, initial=initial, existing_workload=existing, team=team)
    if request.method == "POST" and form.is_valid():
        saved = _save_goal(request, form, selection)
        if saved is not None:
            messages.success(request, f"Goal of {saved.title} saved.")
            return redirect("selections:detail", selection_id=saved.pk)
    context = {"form": form, "selection": selection, "step": "goal"}
    return render(request, "selections/goal_form.html", context)


@login_required
def selection_detail(request: HttpRequest, selection_id: int) -> HttpResponse:
    """The goal as stored, its traces with histograms, and the way to the candidates."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    traces = list(selectors.traces_of(selection=selection)[:1])
    latest = selectors.trace_with_rows(trace_id=traces[0].pk) if traces else None
    figures = {}
    if latest is not None:
        rows = latest.rows
        figures = {
            "lengths": charts.length_histograms(
                inputs=[r["input_tokens"] for r in rows], outputs=[r["output_tokens"] for r in rows]
            ),
            "arrivals": charts.arrival_histogram(timestamps=[r["timestamp"] for r in rows]),
        }
    context = {
        "selection": selection,
        "stage": selectors.stage_labels(selections=[selection])[selection.pk],
        "slo_origin": preset_origin(selection.slo),
        "goal_words": selectors.goal_words(selection=selection),
        "trace": latest,
        "figures": figures,
        "upload_form": TraceUploadForm(),
        "step": "goal",
    }
    return render(request, "selections/selection_detail.html", context)


@login_required
@require_POST
def trace_upload(request: HttpRequest, selection_id: int) -> HttpResponse:
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    form = TraceUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a CSV or JSONL file to upload.")
        return redirect("selections:detail", selection_id=selection.pk)
    upload = form.cleaned_data["file"]
    try:
        trace = services.trace_upload(
            actor_user=request.user,
            selection=selection,
            name=upload.name,
            content=upload.read(),
            apply=form.cleaned_data["apply"],
            replay=form.cleaned_data["replay"],
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Trace {trace.name}: {grouped(trace.row_count)} requests read.")
    return redirect("selections:detail", selection_id=selection.pk)


@login_required
@require_POST
def candidates_compute(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Queue the computation; the candidate page shows its progress until it is done."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    try:
        services.candidates_request(actor_user=request.user, selection=selection)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("selections:detail", selection_id=selection.pk)
    return redirect("selections:candidates", selection_id=selection.pk)


@login_required
@require_GET
def computation_status(request: HttpRequest, selection_id: int) -> JsonResponse:
    """The small JSON the candidate page polls while the computation is queued or running."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    url = reverse("selections:status", kwargs={"selection_id": selection.pk})
    return JsonResponse(selectors.computation_status(selection=selection, status_url=url))


@login_required
def selection_archive(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Archiving asks first (GET shows what happens), then hides the selection (POST)."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    if request.method == "POST":
        services.selection_archive(actor_user=request.user, selection=selection)
        messages.success(request, f"{selection.title} archived.")
        return redirect("selections:list")
    context = {"selection": selection, "candidate_count": selection.candidates.count()}
    return render(request, "selections/selection_archive.html", context)


def _save_choice(request: HttpRequest, selection: Selection) -> HttpResponse:
    """Apply one page's ticks to the stored choice and come back to the same page.

    The page posts the ids it showed (`shown`), the ones ticked among them (`chosen`) and any
    the tray unchose (`unchoose`); picks made on other pages of the list stay chosen.
    """
    shown = set(posted_ids(request.POST.getlist("shown")))
    ticked = set(posted_ids(request.POST.getlist("chosen")))
    unchosen = set(posted_ids(request.POST.getlist("unchoose")))
    kept = selectors.chosen_ids(selection=selection) - shown
    try:
        count = services.candidates_choose(
            actor_user=request.user,
            selection=selection,
            candidate_ids=sorted((kept | ticked) - unchosen),
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        word = "candidate" if count == 1 else "candidates"
        messages.success(request, f"{count} {word} chosen for the benchmark plan.")
    return redirect(request.get_full_path())


def _accepted_filters(form: CandidateFilterForm) -> dict[str, Any]:
    """The list filters the form accepted, as candidates_filtered takes them. A refused value
    (a NUL, which no column can hold; a GPU count that is no whole number) shows its error on
    the form and filters nothing."""
    if not form.is_bound:
        return {}
    form.is_valid()
    return {name: value for name, value in form.cleaned_data.items() if value not in (None, "")}


def _query_without_pages(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("dpage", None)
    return query.urlencode()


@login_required
def candidate_list(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Step 2. Ranked kept stacks with estimates and hints, the goodput chart, and the dropped
    stacks grouped by reason; ticking a kept stack chooses it for benchmarking (POST)."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    if request.method == "POST":
        return _save_choice(request, selection)
    filters = CandidateFilterForm(request.GET or None)
    params = _accepted_filters(filters)
    kept = selectors.candidates_filtered(
        selection=selection, outcome=CandidateOutcome.KEPT, params=params
    )
    dropped = selectors.candidates_filtered(
        selection=selection, outcome=CandidateOutcome.DROPPED, params=params
    )
    page = Paginator(kept, CANDIDATE_PAGE_SIZE).get_page(request.GET.get("page"))
    dropped_page = Paginator(dropped, CANDIDATE_PAGE_SIZE).get_page(request.GET.get("dpage"))
    curves = selectors.leading_curves(kept=kept)
    measured = selectors.measured_for(candidates=page.object_list)
    published = published_nearest.published_for(selection=selection, candidates=page.object_list)
    any_published = any(published.values())
    published_empty = published_nearest.none_note(selection.model and selection.model.slug)
    context = {
        "selection": selection,
        "filters": filters,
        "page": page,
        "dropped_page": dropped_page,
        "groups": selectors.dropped_groups(selection=selection),
        "chart": charts.goodput_chart(curves) if curves else None,
        "computing": selection.computation in (ComputeState.QUEUED, ComputeState.RUNNING),
        "kept_rows": row_cache.kept_rows_html(
            [
                {
                    "candidate": candidate,
                    "measured_rows": measured.get(candidate.pk, []),
                    "published_rows": published[candidate.pk],
                    "any_published": any_published,
                    "published_empty": published_empty,
                }
                for candidate in page.object_list
            ]
        ),
        "published_empty": published_empty,
        "any_published": any_published,
        "chosen": selectors.chosen_candidates(selection=selection),
        "chosen_lost": selectors.chosen_no_longer_kept(selection=selection),
        "simulated": selectors.simulated_comparison(selection=selection),
        "query": _query_without_pages(request),
        "step": "candidates",
    }
    return render(request, "selections/candidate_list.html", context)


PLAN_PAGE_SIZE = 50


@login_required
def plan(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Step 3. Filter, search and page the whole kept list to choose candidates for
    benchmarking (the chosen ones stay listed above), then go on to create the plan."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    if request.method == "POST":
        return _save_choice(request, selection)
    values = selectors.kept_stack_values(selection=selection)
    filters = PlanFilterForm(request.GET or None, values=values)
    # The plan form offers only the values its candidates have; a value none has lists none.
    params = _accepted_filters(CandidateFilterForm(request.GET or None))
    kept = selectors.candidates_filtered(
        selection=selection, outcome=CandidateOutcome.KEPT, params=params
    )
    chosen = list(selectors.chosen_candidates(selection=selection))
    context = {
        "selection": selection,
        "filters": filters,
        "page": Paginator(kept, PLAN_PAGE_SIZE).get_page(request.GET.get("page")),
        "any_kept": selection.candidates.filter(outcome=CandidateOutcome.KEPT).exists(),
        "chosen": chosen,
        "chosen_count": len(chosen),
        "chosen_lost": selectors.chosen_no_longer_kept(selection=selection),
        "query": _query_without_pages(request),
        "step": "plan",
    }
    return render(request, "selections/plan.html", context)


@login_required
@require_GET
def compare(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Two to four chosen candidates side by side: stack layers, estimate, hints, evidence."""
    selection = selectors.selection_get(team=request.team, selection_id=selection_id)
    form = CompareForm(request.GET, selection=selection)
    if not form.is_valid():
        context = {"selection": selection, "form": form, "step": "plan"}
        return render(request, "selections/compare.html", context, status=400)
    candidates = list(form.cleaned_data["ids"])
    measured = selectors.measured_for(candidates=candidates)
    published = published_nearest.published_for(selection=selection, candidates=candidates)
    context = {
        "selection": selection,
        "form": form,
        "columns": [
            (candidate, measured.get(candidate.pk, []), published[candidate.pk])
            for candidate in candidates
        ],
        "published_empty": published_nearest.none_note(selection.model and selection.model.slug),
        "step": "plan",
    }
    return render(request, "selections/compare.html", context)
