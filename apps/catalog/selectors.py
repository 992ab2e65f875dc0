"""Reads of the catalog: detail pages, comparisons, history and statistics. Each returns in a
fixed number of queries, whatever the catalog size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import models
from django.db.models import Q, QuerySet

from apps.audit.models import AuditEvent
from apps.audit.selectors import FieldChange, event_diff
from apps.catalog.choices import Contract, EngineKind, Maturity
from apps.catalog.figures import ACCELERATOR_FIGURES, MODEL_FIGURES, figures_of, has_value
from apps.catalog.matrix import Matrix, build_matrix, matrix_cells
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
)
from apps.catalog.services import RELEASE_DEFAULT_FIELDS

_DEFAULT_VALUE_FIELDS = tuple(
    name for name in RELEASE_DEFAULT_FIELDS if name not in ("defaults_source", "defaults_as_of")
)


def latest_releases(engines: Iterable[Engine]) -> dict[int, EngineRelease]:
    """{engine_id: newest release}: latest release date first, the newest row among undated."""
    engine_ids = [engine.pk for engine in engines]
    latest: dict[int, EngineRelease] = {}
    releases = (
        EngineRelease.objects.filter(engine_id__in=engine_ids)
        .select_related("engine")
        .order_by(models.F("release_date").desc(nulls_last=True), "-pk")
    )
    for release in releases:
        latest.setdefault(release.engine_id, release)
    return latest


@dataclass
class Comparison:
    releases: list[EngineRelease]
    matrix: Matrix


def engine_comparison(*, engines: Iterable[Engine]) -> Comparison:
    """The newest release of each engine, side by side over every feature any of them has."""
    by_engine = latest_releases(engines)
    releases = [by_engine[engine.pk] for engine in engines if engine.pk in by_engine]
    cells = matrix_cells(Capability.objects.filter(release__in=releases))
    return Comparison(releases=releases, matrix=build_matrix(cells, releases=releases))


def release_matrix(release: EngineRelease) -> Matrix:
    cells = matrix_cells(release.capabilities.all())
    return build_matrix(cells, releases=[release])


def feature_support(feature: Feature) -> list[Capability]:
    """Who supports a feature, at what maturity, with which evidence."""
    return list(
        feature.capabilities.select_related("release__engine", "backend").order_by(
            "release__engine__kind", "release__engine__name", "-release_id", "vendor", "backend_id"
        )
    )


def hardware_feature_prefix(vendor: str) -> str:
    """Hardware reach features are named hw_<vendor>[_<platform>] (hw_intel_gaudi, hw_cpu)."""
    return f"hw_{vendor}"


def accelerator_support(accelerator: Accelerator) -> list[Capability]:
    """Cells saying which releases reach this vendor's hardware, and cells narrowed to it."""
    reach = Q(feature__key__startswith=hardware_feature_prefix(accelerator.vendor))
    narrowed = Q(vendor=accelerator.vendor) & Q(family__in=["", accelerator.family])
    return list(
        Capability.objects.filter(reach | narrowed)
        .select_related("release__engine", "feature", "backend")
        .order_by("feature__contract", "feature__key", "release__engine__name")
    )


def model_support(model_spec: ModelSpec) -> list[Capability]:
    """Cells of the model's architecture feature: which engines load it, at what maturity."""
    return list(
        Capability.objects.filter(feature__key=model_spec.architecture)
        .select_related("release__engine", "feature", "backend")
        .order_by("release__engine__kind", "release__engine__name", "-release_id")
    )


@dataclass(frozen=True)
class HistoryEntry:
    event: AuditEvent
    changes: list[FieldChange]


def entry_history(instance: models.Model) -> list[HistoryEntry]:
    """The audit events of one catalog row, newest first, each with its field diff."""
    events = AuditEvent.objects.filter(
        object_type=instance._meta.label_lower, object_id=str(instance.pk)
    ).order_by("-id")
    return [HistoryEntry(event, event_diff(event)) for event in events]


def sibling_cells(capability: Capability) -> list[Capability]:
    """The other cells of the same (release, feature): the same claim narrowed differently."""
    return list(
        Capability.objects.filter(
            release_id=capability.release_id, feature_id=capability.feature_id
        )
        .exclude(pk=capability.pk)
        .select_related("backend")
    )


@dataclass(frozen=True)
class Share:
    sourced: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 if self.total == 0 else 100.0 * self.sourced / self.total


@dataclass(frozen=True)
class CatalogStats:
    counts: dict[str, int]
    engines_by_kind: dict[str, int]
    features_by_contract: dict[str, int]
    cells_by_maturity: dict[str, int]
    cells: Share
    hardware_figures: Share
    model_figures: Share
    release_defaults: Share
    coverage: dict[str, Share]


def _figure_share(rows: QuerySet, names: tuple[str, ...]) -> Share:
    figures = [figure for row in rows for figure in figures_of(row, names)]
    return Share(sum(figure.is_sourced for figure in figures), len(figures))


def _defaults_share(releases: QuerySet[EngineRelease]) -> Share:
    sourced = total = 0
    for release in releases:
        count = sum(has_value(getattr(release, name)) for name in _DEFAULT_VALUE_FIELDS)
        total += count
        if release.defaults_source and release.defaults_as_of:
            sourced += count
    return Share(sourced, total)


def catalog_stats() -> CatalogStats:
    """Counts by kind and the share of cells and figures that carry a source and an as_of."""
    cells = Capability.objects.all()
    sourced_cells = cells.exclude(evidence_url="").exclude(as_of__isnull=True).count()
    return CatalogStats(
        counts={
            "engines": Engine.objects.count(),
            "releases": EngineRelease.objects.count(),
            "kernel backends": KernelBackend.objects.count(),
            "accelerators": Accelerator.objects.count(),
            "models": ModelSpec.objects.count(),
            "features": Feature.objects.count(),
            "capability cells": cells.count(),
        },
        engines_by_kind=_count_by(Engine.objects.values_list("kind", flat=True)),
        features_by_contract=_count_by(Feature.objects.values_list("contract", flat=True)),
        cells_by_maturity=_count_by(cells.values_list("maturity", flat=True)),
        cells=Share(sourced_cells, cells.count()),
        hardware_figures=_figure_share(Accelerator.objects.all(), ACCELERATOR_FIGURES),
        model_figures=_figure_share(ModelSpec.objects.all(), MODEL_FIGURES),
        release_defaults=_defaults_share(EngineRelease.objects.all()),
        coverage=_coverage(cells),
    )


def _coverage(cells: QuerySet[Capability]) -> dict[str, Share]:
    """Per serving engine release: of all features, how many have a cell (any scope), and of
    those how many carry a maturity other than unknown. A pair without a cell is "not recorded"
    to the ranking."""
    features = Feature.objects.count()
    releases = EngineRelease.objects.filter(engine__kind=EngineKind.ENGINE).select_related("engine")
    decided: dict[int, set[str]] = defaultdict(set)
    labelled: dict[int, set[str]] = defaultdict(set)
    for release_id, key, maturity in cells.values_list("release_id", "feature__key", "maturity"):
        decided[release_id].add(key)
        if maturity != Maturity.UNKNOWN:
            labelled[release_id].add(key)
    coverage = {}
    for release in releases.order_by("engine__name", "version"):
        name = f"{release.engine.name} {release.version}"
        coverage[f"{name}: features with a cell"] = Share(len(decided[release.pk]), features)
        coverage[f"{name}: cells with a maturity label"] = Share(
            len(labelled[release.pk]), len(decided[release.pk])
        )
    return coverage


def _count_by(values: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def cells_by_contract(matrix: Matrix) -> list[tuple[str, list]]:
    """A one-release matrix as (contract label, [(feature, cell)]) groups for a detail page."""
    labels = dict(Contract.choices)
    groups: dict[str, list] = defaultdict(list)
    for feature, cells in matrix.by_feature():
        groups[labels[feature.contract]].extend((feature, cell) for cell in cells if cell)
    return list(groups.items())
