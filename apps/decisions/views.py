"""Decision pages: list with notifications, new record, edit a draft, the record with its
provenance and actions, the Markdown download and the printable page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.choices import Role
from apps.core.errors import ConflictError
from apps.decisions import retests, selectors, services
from apps.decisions.choices import EDITABLE_STATUSES, DecisionStatus, TriggerKind
from apps.decisions.evidence_kind import EvidenceKind
from apps.decisions.export import EVIDENCE_WARNINGS, record_markdown
from apps.decisions.forms import NewRecordForm, ReasonForm, RecordTextForm
from apps.decisions.provenance import record_provenance
from apps.decisions.services import DecisionText

PAGE_SIZE = 25
NOTIFICATIONS_SHOWN = 20


def _team(request: HttpRequest) -> Any:
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    return request.team


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error)


@login_required
def record_list(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    page = Paginator(selectors.records_of(team=team), PAGE_SIZE).get_page(request.GET.get("page"))
    notifications = selectors.notifications_of(team=team)
    context = {
        "page": page,
        "notifications": notifications[:NOTIFICATIONS_SHOWN],
        "notification_count": notifications.count(),
        "new_form": NewRecordForm(team=team),
    }
    return render(request, "decisions/record_list.html", context)


@login_required
@require_POST
def record_create(request: HttpRequest) -> HttpResponse:
    team = _team(request)
    form = NewRecordForm(request.POST, team=team)
    if not form.is_valid():
        messages.error(request, "Choose a selection and give the record a title.")
        return redirect("decisions:list")
    try:
        record = services.record_create(
            actor_user=request.user,
            team=team,
            selection_id=form.cleaned_data["selection"].pk,
            text=DecisionText(title=form.cleaned_data["title"]),
        )
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, _problem(error))
        return redirect("decisions:list")
    messages.success(request, f"{record.reference} drafted; now write the decision.")
    return redirect("decisions:edit", record_id=record.pk)


@login_required
def record_edit(request: HttpRequest, record_id: int) -> HttpResponse:
    team = _team(request)
    record = selectors.record_get(team=team, record_id=record_id)
    if record.status not in EDITABLE_STATUSES:
        messages.error(request, f"{record.reference} is {record.status}: its text is frozen.")
        return redirect("decisions:detail", record_id=record.pk)
    form = RecordTextForm(request.POST or None, record=record)
    if request.method == "POST" and form.is_valid():
        try:
            services.record_update(
                actor_user=request.user,
                team=team,
                record_id=record.pk,
                text=form.text(),
                refresh=form.cleaned_data["refresh"],
            )
        except (ValidationError, ConflictError, PermissionDenied) as error:
            form.add_error(None, _problem(error))
        else:
            messages.success(request, f"{record.reference} saved.")
            return redirect("decisions:detail", record_id=record.pk)
    return render(request, "decisions/record_edit.html", {"record": record, "form": form})


def _detail_context(request: HttpRequest, record_id: int) -> dict[str, Any]:
    record = selectors.record_get(team=_team(request), record_id=record_id)
    return {
        "record": record,
        "chosen": record.candidate(record.chosen_key),
        "others": [
            (entry, record.dropped.get(entry["key"], ""))
            for entry in record.candidates
            if entry["key"] != record.chosen_key
        ],
        "watched": [TriggerKind(kind).label for kind in record.retest_kinds],
        "provenance": record_provenance(record),
        "triggers": list(record.triggers.select_related("plan")),
        "successors": list(record.successors.order_by("number")),
        "editable": record.status in EDITABLE_STATUSES,
        "is_approver": request.membership.has_role(Role.APPROVER),
        "is_author": record.created_by_id == request.user.pk,
        "statuses": DecisionStatus,
        "reason_form": ReasonForm(),
        "evidence_warning": EVIDENCE_WARNINGS.get(record.evidence_kind, ""),
        "can_mark_simulation": record.evidence_kind in (EvidenceKind.SIMULATED, EvidenceKind.MIXED),
    }


@login_required
def record_detail(request: HttpRequest, record_id: int) -> HttpResponse:
    return render(request, "decisions/record_detail.html", _detail_context(request, record_id))


@login_required
def record_print(request: HttpRequest, record_id: int) -> HttpResponse:
    return render(request, "decisions/record_print.html", _detail_context(request, record_id))


@login_required
def record_markdown_download(request: HttpRequest, record_id: int) -> HttpResponse:
    record = selectors.record_get(team=_team(request), record_id=record_id)
    response = HttpResponse(record_markdown(record), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{record.reference}.md"'
    return response


def _act(
    request: HttpRequest, back_to: int, act: Callable[..., Any], done: str, **kwargs: Any
) -> HttpResponse:
    """Run a lifecycle service and come back to the record (or the new one) with its outcome;
    on a refusal, back to record `back_to` with the reason."""
    try:
        result = act(actor_user=request.user, team=_team(request), **kwargs)
    except (ValidationError, ConflictError, PermissionDenied) as error:
        messages.error(request, _problem(error))
        return redirect("decisions:detail", record_id=back_to)
    target = getattr(result, "record", result)
    messages.success(request, done.format(record=target))
    return redirect("decisions:detail", record_id=target.pk)


def _reason(request: HttpRequest) -> str:
    return request.POST.get("reason", "")


@login_required
@require_POST
def record_propose(request: HttpRequest, record_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        services.record_propose,
        "{record.reference} proposed.",
        record_id=record_id,
        simulation_only=request.POST.get("simulation_only") == "on",
    )


@login_required
@require_POST
def record_accept(request: HttpRequest, record_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        services.record_accept,
        "{record.reference} accepted.",
        record_id=record_id,
    )


@login_required
@require_POST
def record_reject(request: HttpRequest, record_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        services.record_reject,
        "{record.reference} rejected.",
        record_id=record_id,
        reason=_reason(request),
    )


@login_required
@require_POST
def record_deprecate(request: HttpRequest, record_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        services.record_deprecate,
        "{record.reference} deprecated.",
        record_id=record_id,
        reason=_reason(request),
    )


@login_required
@require_POST
def record_supersede(request: HttpRequest, record_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        services.record_supersede,
        "{record.reference} drafted to supersede it; accept it to take effect.",
        record_id=record_id,
    )


@login_required
@require_POST
def trigger_plan(request: HttpRequest, record_id: int, trigger_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        retests.retest_plan_create,
        "Retest plan made for {record.reference}.",
        trigger_id=trigger_id,
    )


@login_required
@require_POST
def trigger_acknowledge(request: HttpRequest, record_id: int, trigger_id: int) -> HttpResponse:
    return _act(
        request,
        record_id,
        retests.trigger_acknowledge,
        "Notification of {record.reference} cleared.",
        trigger_id=trigger_id,
    )
