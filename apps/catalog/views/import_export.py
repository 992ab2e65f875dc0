"""The matrix as a CSV or JSON download, and the staff import page (dry run, then apply).

The dry run keeps the uploaded text in the session, so "Apply" applies exactly the file that
was previewed; applying re-validates it against the catalog as it is at that moment.
"""

from __future__ import annotations

import hashlib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.audit.services import Actor
from apps.catalog import services
from apps.catalog.forms import ImportForm
from apps.catalog.interchange import FILE_FORMATS, ImportPlan, export_matrix
from apps.catalog.views.curate import staff_required

SESSION_KEY = "catalog_import_pending"
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


@login_required
def matrix_export(request: HttpRequest, file_format: str) -> HttpResponse:
    if file_format not in FILE_FORMATS:
        raise Http404("Export as csv or json.")
    response = HttpResponse(export_matrix(file_format), content_type=CONTENT_TYPES[file_format])
    response["Content-Disposition"] = f'attachment; filename="capability-matrix.{file_format}"'
    return response


def _run(request: HttpRequest, text: str, file_format: str, *, apply: bool) -> ImportPlan:
    return services.matrix_import(
        actor=Actor.for_user(request.user),
        content=text.encode(),
        file_format=file_format,
        apply=apply,
    )


def _preview(request: HttpRequest, form: ImportForm) -> ImportPlan | None:
    upload = form.cleaned_data["file"]
    file_format = form.cleaned_data["file_format"]
    try:
        text = upload.read().decode("utf-8-sig")
        plan = _run(request, text, file_format, apply=False)
    except (UnicodeDecodeError, ValueError) as error:
        form.add_error("file", str(error))
        return None
    digest = hashlib.sha256(text.encode()).hexdigest()
    request.session[SESSION_KEY] = {"text": text, "file_format": file_format, "digest": digest}
    return plan


def _apply(request: HttpRequest) -> HttpResponse:
    pending = request.session.get(SESSION_KEY)
    if not pending or pending["digest"] != request.POST.get("digest"):
        messages.error(request, "That preview is gone; upload the file again.")
        return redirect("catalog:import")
    plan = _run(request, pending["text"], pending["file_format"], apply=True)
    if not plan.applied:
        messages.error(request, "The catalog changed since the preview; check the new diff.")
        return render(request, "catalog/import.html", {"form": ImportForm(), "plan": plan})
    del request.session[SESSION_KEY]
    messages.success(
        request,
        f"Imported: {len(plan.added)} added, {len(plan.changed)} changed, "
        f"{len(plan.removed)} removed.",
    )
    return redirect("catalog:matrix")


@staff_required
def matrix_import(request: HttpRequest) -> HttpResponse:
    if request.method == "POST" and request.POST.get("action") == "apply":
        return _apply(request)
    form = ImportForm(request.POST or None, request.FILES or None)
    plan = None
    if request.method == "POST" and form.is_valid():
        plan = _preview(request, form)
    digest = request.session.get(SESSION_KEY, {}).get("digest", "") if plan else ""
    return render(request, "catalog/import.html", {"form": form, "plan": plan, "digest": digest})
