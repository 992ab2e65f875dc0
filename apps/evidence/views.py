"""Evidence pages: a selection's evidence with charts, its CSV downloads, and the import form."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render

from apps.evidence import charts, selectors, services
from apps.evidence.api.serializers import FILE_ROLES
from apps.evidence.comparison import METRICS
from apps.evidence.definitions import DEFINITIONS
from apps.evidence.forms import ImportForm
from apps.evidence.tool_files import ImportOptions
from apps.selections.choices import CandidateOutcome
from apps.selections.selectors import candidates_filtered, selection_get

TABLE_METRICS = [
    metric
    for metric in METRICS
    if metric.name
    in (
        "ttft_p50_ms",
        "ttft_p99_ms",
        "tpot_p50_ms",
        "tpot_p99_ms",
        "itl_p99_ms",
        "e2e_p99_ms",
        "slo_attainment",
        "goodput_rps",
        "output_tokens_per_s_per_gpu",
        "output_tokens_per_s_per_user",
        "errors",
    )
]


def _table(evidence: selectors.SelectionEvidence) -> list[dict[str, Any]]:
    """Rows of candidate x load point with the table's cells in column order."""
    return [
        {
            "candidate": entry,
            "point": point,
            "cells": [(metric, point.cells[metric.name]) for metric in TABLE_METRICS],
        }
        for entry in evidence.candidates
        for point in entry.points
    ]


@login_required
def selection_evidence(request: HttpRequest, selection_id: int) -> HttpResponse:
    evidence = selectors.selection_evidence(
        team=request.team, selection_id=selection_id, reference=request.GET.get("reference")
    )
    figures = (
        charts.evidence_figures(evidence.candidates, evidence.slo, evidence.calibration.errors)
        if evidence.candidates
        else {}
    )
    context = {
        "selection": evidence.selection,
        "evidence": evidence,
        "metrics": TABLE_METRICS,
        "table": _table(evidence),
        "figures": figures,
        "definitions": DEFINITIONS,
        "simulated_count": sum(entry.simulated for entry in evidence.candidates),
        "tuned_count": sum(bool(entry.trials) for entry in evidence.candidates),
    }
    return render(request, "evidence/selection_evidence.html", context)


class _Echo:
    """A file-like object whose write returns the line, so csv.writer can stream."""

    def write(self, value: str) -> str:
        return value


def _csv_response(name: str, header: list[str], rows: Iterable[list[Any]]) -> HttpResponse:
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow(["" if value is None else value for value in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def samples_csv(request: HttpRequest, selection_id: int) -> HttpResponse:
    """Every request sample; empty cells are values that were not measured."""
    selection = selection_get(team=request.team, selection_id=selection_id)
    rows = selectors.sample_rows(team=request.team, selection=selection)
    header = list(selectors.SAMPLE_CSV_COLUMNS)
    return _csv_response(f"selection-{selection.pk}-samples.csv", header, rows)


@login_required
def summaries_csv(request: HttpRequest, selection_id: int) -> HttpResponse:
    evidence = selectors.selection_evidence(team=request.team, selection_id=selection_id)
    names = [metric.name for metric in METRICS]
    header = ["candidate", "identity", "comparability", "differing", "load_point", "runs", *names]
    rows = selectors.summary_rows(evidence, names)
    return _csv_response(f"selection-{selection_id}-summaries.csv", header, rows)


@login_required
def evidence_import(request: HttpRequest, selection_id: int) -> HttpResponse:
    selection = selection_get(team=request.team, selection_id=selection_id)
    kept = candidates_filtered(selection=selection, outcome=CandidateOutcome.KEPT)
    choices = [(candidate.pk, f"#{candidate.rank} {candidate}") for candidate in kept[:200]]
    form = ImportForm(request.POST or None, request.FILES or None, candidates=choices)
    if request.method == "POST" and form.is_valid():
        values = form.cleaned_data
        files = {
            role: services.RawFile(values[role].name, values[role].read())
            for role in FILE_ROLES
            if values.get(role) is not None
        }
        try:
            run = services.import_tool_results(
                actor_user=request.user,
                team=request.team,
                selection_id=selection.pk,
                tool=values["tool"],
                files=files,
                identity=values["identity"],
                candidate_id=values["candidate"],
                options=ImportOptions(
                    tool_version=values["tool_version"] or None,
                    rate_rps=values["rate_rps"],
                    concurrency=values["concurrency"],
                ),
            )
        except ValidationError as error:
            for field, problems in error.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        except PermissionDenied as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Imported {run.tool} run {run.pk}.")
            return redirect("evidence:selection", selection_id=selection.pk)
    context = {"selection": selection, "form": form}
    return render(request, "evidence/import.html", context)
