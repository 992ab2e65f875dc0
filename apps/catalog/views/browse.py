"""Read-only catalog pages: the matrix, detail pages, the comparison and a cell's evidence."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from apps.catalog import selectors
from apps.catalog.figures import ACCELERATOR_FIGURES, MODEL_FIGURES, figures_of
from apps.catalog.filters import AcceleratorFilter, CapabilityFilter, ModelSpecFilter
from apps.catalog.forms import CompareForm
from apps.catalog.matrix import MATURITY_LEGEND, build_matrix, matrix_cells, scope_label
from apps.catalog.models import Accelerator, Capability, Engine, EngineRelease, Feature, ModelSpec

PAGE_SIZE = 50
MATRIX_FILTERS = ("vendor", "contract", "maturity", "engine_kind", "needs_review")


@login_required
def matrix(request: HttpRequest) -> HttpResponse:
    filterset = CapabilityFilter(request.GET or None, queryset=Capability.objects.all())
    context = {
        "filter_fields": [filterset.form[name] for name in MATRIX_FILTERS],
        "matrix": build_matrix(matrix_cells(filterset.qs)),
        "legend": MATURITY_LEGEND,
        "query": request.GET.urlencode(),
    }
    return render(request, "catalog/matrix.html", context)


@login_required
def capability_detail(request: HttpRequest, pk: int) -> HttpResponse:
    cell = get_object_or_404(
        Capability.objects.select_related("release__engine", "feature", "backend"), pk=pk
    )
    context = {
        "cell": cell,
        "scope": scope_label(cell),
        "siblings": selectors.sibling_cells(cell),
        "history": selectors.entry_history(cell),
    }
    return render(request, "catalog/capability_detail.html", context)


@login_required
def engine_detail(request: HttpRequest, slug: str) -> HttpResponse:
    engine = get_object_or_404(Engine, slug=slug)
    releases = engine.releases.order_by("-pk")
    context = {"engine": engine, "releases": releases, "history": selectors.entry_history(engine)}
    return render(request, "catalog/engine_detail.html", context)


@login_required
def release_detail(request: HttpRequest, pk: int) -> HttpResponse:
    release = get_object_or_404(EngineRelease.objects.select_related("engine"), pk=pk)
    context = {
        "release": release,
        "backends": release.backends.select_related("backend"),
        "tuned": selectors.release_tuned_settings(release),
        "groups": selectors.cells_by_contract(selectors.release_matrix(release)),
        "history": selectors.entry_history(release),
    }
    return render(request, "catalog/release_detail.html", context)


def _paginated_list(request: HttpRequest, filterset, template: str) -> HttpResponse:
    page = Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {"filter": filterset, "page": page, "query": query.urlencode()}
    return render(request, template, context)


@login_required
def accelerator_list(request: HttpRequest) -> HttpResponse:
    filterset = AcceleratorFilter(request.GET or None, queryset=Accelerator.objects.all())
    return _paginated_list(request, filterset, "catalog/accelerator_list.html")


@login_required
def model_list(request: HttpRequest) -> HttpResponse:
    filterset = ModelSpecFilter(request.GET or None, queryset=ModelSpec.objects.all())
    return _paginated_list(request, filterset, "catalog/model_list.html")


def _figures_page(
    request: HttpRequest, instance: Accelerator | ModelSpec, figures: tuple[str, ...], cells
) -> HttpResponse:
    """An accelerator or a model: its sourced figures, the cells about it, its history."""
    name = "accelerator" if isinstance(instance, Accelerator) else "model"
    context = {
        "entry": instance,
        "figures": figures_of(instance, figures),
        "cells": cells,
        "history": selectors.entry_history(instance),
    }
    return render(request, f"catalog/{name}_detail.html", context)


@login_required
def accelerator_detail(request: HttpRequest, slug: str) -> HttpResponse:
    accelerator = get_object_or_404(Accelerator, slug=slug)
    cells = selectors.accelerator_support(accelerator)
    return _figures_page(request, accelerator, ACCELERATOR_FIGURES, cells)


@login_required
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    model_spec = get_object_or_404(ModelSpec, slug=slug)
    return _figures_page(request, model_spec, MODEL_FIGURES, selectors.model_support(model_spec))


@login_required
def feature_detail(request: HttpRequest, key: str) -> HttpResponse:
    feature = get_object_or_404(Feature, key=key)
    context = {
        "feature": feature,
        "cells": selectors.feature_support(feature),
        "history": selectors.entry_history(feature),
    }
    return render(request, "catalog/feature_detail.html", context)


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET or None)
    comparison = None
    if form.is_valid():
        comparison = selectors.engine_comparison(engines=form.cleaned_data["engines"])
    context = {"form": form, "comparison": comparison, "legend": MATURITY_LEGEND}
    return render(request, "catalog/compare.html", context)
