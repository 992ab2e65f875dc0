"""Reads of the catalog: detail pages, comparisons, history and statistics. Each returns in a
fixed number of queries, whatever the catalog size.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

import numpy as np
from django.db import models
from django.db.models import Q, QuerySet
from stackselect_domain.engine_batch import EngineBatch, engine_batch, loop_reproduces
from stackselect_domain.prompt_load import PromptLoad, TierPeaks, implied_prompt_load
from stackselect_domain.tuning import (
    HIGH_CONCURRENCY,
    LONG_PROMPT_TOKENS,
    WORKLOAD_CLASSES,
    tunable_part,
)
from stackselect_domain.words import grouped

from apps.audit.models import AuditEvent
from apps.audit.selectors import FieldChange, event_diff
from apps.catalog import aiconfigurator_wheel
from apps.catalog.choices import Contract, EngineKind, Maturity, PublishedScenario
from apps.catalog.editable import RELEASE_DEFAULT_FIELDS
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
    PublishedMeasurement,
)
from apps.catalog.published_overview import read_overview
from apps.catalog.published_sample import SOURCE_NAME as SAMPLE_SOURCE_NAME
from apps.catalog.published_sample import read_sample, run_identity

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


# (name, our threshold for the class) of each workload class, for the release page.
WORKLOAD_CLASS_LABELS = {
    "long_prompts": (
        "Long prompts",
        f"mean prompt of {grouped(LONG_PROMPT_TOKENS)} tokens or more",
    ),
    "short_chat": ("Short chat", "every other workload"),
    "high_concurrency": ("High concurrency", f"{HIGH_CONCURRENCY} or more requests in flight"),
}


@dataclass(frozen=True)
class TunedSetting:
    """One documented recommendation: the engine's knobs, what a plan applies, the source."""

    engine_flags: dict[str, object]
    applied: dict[str, int]
    note: str
    source: str
    as_of: str


@dataclass(frozen=True)
class WorkloadClassSettings:
    key: str
    label: str
    threshold: str
    settings: list[TunedSetting]


def release_tuned_settings(release: EngineRelease) -> list[WorkloadClassSettings]:
    """The release's documented settings grouped by workload class, every class listed (an
    empty class is one the catalog has no sourced recommendation for)."""
    by_class: dict[str, list[TunedSetting]] = defaultdict(list)
    for entry in release.tuned_settings or []:
        by_class[entry.get("workload_class", "")].append(
            TunedSetting(
                engine_flags=dict(entry.get("engine_flags") or {}),
                applied=tunable_part(entry.get("settings") or {}),
                note=str(entry.get("note") or ""),
                source=str(entry.get("source") or ""),
                as_of=str(entry.get("as_of") or ""),
            )
        )
    return [
        WorkloadClassSettings(key, *WORKLOAD_CLASS_LABELS[key], by_class.get(key, []))
        for key in WORKLOAD_CLASSES
    ]


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


# ---------------------------------------------------------------- published measurements

EVIDENCE_PUBLISHED = "published"
NEAREST_LIMIT = 3
# The distance that ranks published rows against a stack and goal (docs/predictions.md). A
# mismatch in a named condition costs its weight; parallel degrees, lengths and load cost the
# number of doublings between the row's value and the goal's. Each weight is half the one
# above it, so another accelerator costs more than another engine and precision together.
ACCELERATOR_WEIGHT = 16.0
ENGINE_WEIGHT = 8.0
PRECISION_WEIGHT = 4.0
DISAGGREGATED_WEIGHT = 2.0
MAX_LOAD_WEIGHT = 2.0  # a row measured at maximum load, for a goal that states its load
ENGINE_VERSION_WEIGHT = 1.0
CONCURRENCY_WEIGHT = 0.5  # per doubling; ISL, OSL and each parallel degree weigh 1 per doubling
# A row is near when it costs less than another precision: the stack's accelerator, engine and
# precision, and lengths, layout, load and pools that together cost under 4 (four doublings).
# A farther row is context for the stack, not a check of its prediction.
NEAR_DISTANCE = PRECISION_WEIGHT
HELD_OUT_NOTE = (
    "held out: no fitted factor used this row; the error bands are measured on rows like it"
)
UNFITTED_NOTE = "not used by any fit: the calibration fits on AIConfigurator's sample only"
FITTABLE_NOTE = "not held out: the calibrated method may have fitted its factors on this row"
LEFT_OUT_NOTE = (
    "not used by any fit: the calibration leaves out rows no method here reproduces (its caution, "
    "prompt_load or engine_batch in the API, says why)"
)


@dataclass(frozen=True, slots=True)
class PublishedRowFacts:
    """The columns of a published row that ranking and display read (the source's long
    provenance text and disaggregated pools are left in the table), with slugs for the model,
    accelerator and engine: read as plain tuples, so a model's thousands of rows load fast."""

    source_name: str
    source_key: str
    source_url: str
    licence: str
    as_of: date
    measured_on: date | None
    checkpoint: str
    engine_version: str
    precision: str
    mode: str
    tp: int | None
    pp: int | None
    ep: int | None
    dp: int | None
    isl: int
    osl: int
    concurrency: int | None
    batch_size: int | None
    scenario: str
    ttft_ms: float | None
    tpot_ms: float | None
    throughput_tokens_s: float | None
    output_tokens_s_per_gpu: float | None
    held_out: bool
    model: str
    accelerator: str
    engine: str
    active_params_b: float
    bf16_tflops: float | None
    fp8_tflops: float | None
    fp4_tflops: float | None

    @property
    def run(self) -> tuple:
        """What identifies the run the row measured (published_sample.run_identity)."""
        return run_identity(self.accelerator, self.engine, self)

    def prompt_load(self) -> PromptLoad | None:
        """The prompt compute the row's own figures imply (None where they cannot tell)."""
        peaks = TierPeaks.of(self)
        return implied_prompt_load(self, active_params_b=self.active_params_b, peaks=peaks)

    def engine_batch(self) -> EngineBatch | None:
        """The engine batch the row states beside its clients (None where it states none)."""
        return engine_batch(batch_size=self.batch_size, concurrency=self.concurrency, dp=self.dp)


_RELATED_COLUMNS = {
    "model": "model__slug",
    "accelerator": "accelerator__slug",
    "engine": "engine__slug",
    "active_params_b": "model__params_active_b",
    "bf16_tflops": "accelerator__bf16_tflops",
    "fp8_tflops": "accelerator__fp8_tflops",
    "fp4_tflops": "accelerator__fp4_tflops",
}
_FACT_COLUMNS = tuple(
    _RELATED_COLUMNS.get(name, name) for name in PublishedRowFacts.__dataclass_fields__
)


@dataclass(frozen=True)
class PublishedGoal:
    """A stack and workload to compare published rows with; None means "not stated".

    The model is required (another model's figures say little); everything else is preferred.
    A goal gives `concurrency` (closed loop) or `rate_rps` (open loop), or neither. An open-loop
    goal's `predicted_in_flight` is its requests in flight by the stack's own predicted time in
    the system (Little's law), weighed against a row's clients as a concurrency is; None when
    unpredicted. A goal whose prompts open with a shared prefix (`prefix_share` of them, each
    prefix `prefix_tokens` long) says so against every row: no published row states one,
    and an engine caching it computes less of each prompt than the row's did.
    """

    model_slug: str
    accelerator_slug: str
    isl: int
    osl: int
    concurrency: int | None = None
    rate_rps: float | None = None
    predicted_in_flight: int | None = None
    engine_slug: str | None = None
    engine_version: str | None = None
    precision: str | None = None
    tp: int | None = None
    ep: int | None = None
    pp: int | None = None
    dp: int | None = None
    prefix_share: float = 0.0
    prefix_tokens: int = 0


_DEGREES = ("tp", "ep", "pp", "dp")


def _degrees(row: PublishedRowFacts, goal: PublishedGoal) -> Iterable[tuple[str, int, int]]:
    """(label, row's degree, goal's degree) for each degree the goal states; unstated is 1."""
    for name in _DEGREES:
        wanted = getattr(goal, name)
        if wanted:
            yield name.upper(), getattr(row, name) or 1, wanted


class _RowTable:
    """One model's published rows as columns, so a goal's distance to every row is a handful
    of array operations (a page ranks a model's rows for fifty stacks at once)."""

    def __init__(self, rows: list[PublishedRowFacts]) -> None:
        self.rows = rows
        self.text = {
            name: np.array([getattr(row, name) for row in rows], dtype=str)
            for name in ("accelerator", "engine", "engine_version", "precision")
        }
        self.disaggregated = np.array([row.mode != "agg" for row in rows], dtype=bool)
        self.max_load = np.array(
            [row.scenario == PublishedScenario.MAX_THROUGHPUT for row in rows], dtype=bool
        )
        # log2 of each number; an unstated degree is 1, an unstated concurrency is NaN (no cost)
        self.log2 = {
            name: np.log2(np.array([getattr(row, name) or 1 for row in rows], dtype=float))
            for name in (*_DEGREES, "isl", "osl")
        }
        concurrency = [row.concurrency or np.nan for row in rows]
        self.log2["concurrency"] = np.log2(np.array(concurrency, dtype=float))

    def _doublings(self, name: str, wanted: float | None) -> np.ndarray | float:
        if not wanted:
            return 0.0
        return np.nan_to_num(np.abs(self.log2[name] - math.log2(wanted)), nan=0.0)

    def distances(self, goal: PublishedGoal) -> np.ndarray:
        """Each row's distance to the goal, by the weights above; smaller is closer."""
        text = self.text
        distance = ACCELERATOR_WEIGHT * (text["accelerator"] != goal.accelerator_slug)
        other_engine = np.zeros(len(self.rows), dtype=bool)
        if goal.engine_slug:
            other_engine = text["engine"] != goal.engine_slug
            distance = distance + ENGINE_WEIGHT * other_engine
        if goal.engine_version:
            other_version = ~other_engine & (text["engine_version"] != goal.engine_version)
            distance = distance + ENGINE_VERSION_WEIGHT * other_version
        if goal.precision:
            distance = distance + PRECISION_WEIGHT * (text["precision"] != goal.precision)
        distance = distance + DISAGGREGATED_WEIGHT * self.disaggregated
        if goal.concurrency is not None or goal.rate_rps is not None:
            distance = distance + MAX_LOAD_WEIGHT * self.max_load
        for name in (*_DEGREES, "isl", "osl"):
            distance = distance + self._doublings(name, getattr(goal, name))
        load = goal.concurrency if goal.concurrency is not None else goal.predicted_in_flight
        return distance + CONCURRENCY_WEIGHT * self._doublings("concurrency", load)


def _load_difference(row: PublishedRowFacts, goal: PublishedGoal) -> str | None:
    if row.scenario == PublishedScenario.MAX_THROUGHPUT:
        return _max_load_difference(goal)
    measured = "unstated" if row.concurrency is None else str(row.concurrency)
    if goal.concurrency is not None:
        if row.concurrency == goal.concurrency:
            return None
        return f"concurrency {measured} vs the goal's {goal.concurrency}"
    if goal.rate_rps is not None:
        predicted = (
            f", about {goal.predicted_in_flight} in flight by the stack's predicted time"
            if goal.predicted_in_flight
            else ""
        )
        return (
            f"concurrency {measured} (closed loop) vs the goal's rate of {goal.rate_rps:g} req/s "
            f"(open loop{predicted})"
        )
    return None


def _max_load_difference(goal: PublishedGoal) -> str | None:
    measured = "maximum load (every request queued at once)"
    if goal.concurrency is not None:
        return f"{measured} vs the goal's concurrency {goal.concurrency}"
    if goal.rate_rps is not None:
        return f"{measured} vs the goal's rate of {goal.rate_rps:g} req/s"
    return None


def published_differences(row: PublishedRowFacts, goal: PublishedGoal) -> list[str]:
    """How the row's conditions differ from the stack and goal, in the distance's order."""
    differences = []
    if row.accelerator != goal.accelerator_slug:
        differences.append(f"accelerator {row.accelerator} vs the stack's {goal.accelerator_slug}")
    version = row.engine_version or "version unstated"
    if goal.engine_slug and row.engine != goal.engine_slug:
        wanted = f"{goal.engine_slug} {goal.engine_version or ''}".strip()
        differences.append(f"engine {row.engine} {version} vs the stack's {wanted}")
    elif goal.engine_version and row.engine_version != goal.engine_version:
        stated = row.engine_version or "unstated"
        differences.append(f"engine version {stated} vs the stack's {goal.engine_version}")
    if goal.precision and row.precision != goal.precision:
        differences.append(f"precision {row.precision} vs the stack's {goal.precision}")
    if row.mode != "agg":
        differences.append("disaggregated prefill and decode pools vs the stack's one pool")
    for label, got, wanted in _degrees(row, goal):
        if got != wanted:
            differences.append(f"{label} {got} vs the stack's {wanted}")
    for label, got, wanted in (("ISL", row.isl, goal.isl), ("OSL", row.osl, goal.osl)):
        if got != wanted:
            differences.append(f"{label} {got} vs the goal's {wanted}")
    load = _load_difference(row, goal)
    return differences + ([load] if load else []) + _prefix_difference(goal)


def _prefix_difference(goal: PublishedGoal) -> list[str]:
    if goal.prefix_share <= 0:
        return []
    return [
        f"prompts with no shared prefix stated vs the goal's {goal.prefix_share:.0%} opening "
        f"with a shared {goal.prefix_tokens:,}-token prefix"
    ]


def _fit_use(row: PublishedRowFacts, load: PromptLoad | None, batch: EngineBatch | None) -> str:
    if row.held_out:
        return HELD_OUT_NOTE
    if row.source_name != SAMPLE_SOURCE_NAME:
        return UNFITTED_NOTE
    return FITTABLE_NOTE if loop_reproduces(load, batch) else LEFT_OUT_NOTE


def _prompt_load_entry(load: PromptLoad | None) -> dict | None:
    if load is None:
        return None
    return {
        "share_of_peak": round(load.share_of_peak, 4),
        "beyond_assumed": load.beyond_assumed,
        "note": load.note(),
    }


def _engine_batch_entry(batch: EngineBatch | None) -> dict | None:
    if batch is None:
        return None
    return {
        "batch_size": batch.batch_size,
        "clients_per_rank": batch.clients_per_rank,
        "holds_clients": batch.holds_clients,
        "note": batch.note(),
    }


def published_entry(row: PublishedRowFacts, differences: list[str], distance: float) -> dict:
    """A published row as the API and pages show it: evidence kind, figures, conditions,
    source, whether any fit saw it, and how its conditions differ from the goal."""
    load, batch = row.prompt_load(), row.engine_batch()
    return {
        "evidence": EVIDENCE_PUBLISHED,
        "ttft_ms": row.ttft_ms,
        "tpot_ms": row.tpot_ms,
        "throughput_tokens_s": row.throughput_tokens_s,
        "output_tokens_s_per_gpu": row.output_tokens_s_per_gpu,
        "scenario": row.scenario,
        "model": row.model,
        "checkpoint": row.checkpoint,
        "accelerator": row.accelerator,
        "engine": row.engine,
        "engine_version": row.engine_version,
        "precision": row.precision,
        "mode": row.mode,
        "tp": row.tp,
        "ep": row.ep,
        "pp": row.pp,
        "dp": row.dp,
        "isl": row.isl,
        "osl": row.osl,
        "concurrency": row.concurrency,
        "measured_on": row.measured_on,
        "source": {
            "name": row.source_name,
            "url": row.source_url,
            "licence": row.licence,
            "as_of": row.as_of,
            "row": row.source_key,
        },
        "held_out": row.held_out,
        "fit_use": _fit_use(row, load, batch),
        "prompt_load": _prompt_load_entry(load),
        "engine_batch": _engine_batch_entry(batch),
        "distance": round(distance, 3),
        "near": distance < NEAR_DISTANCE,
        "differences": differences,
    }


def _distinct_runs(rows: list[PublishedRowFacts], order: np.ndarray, limit: int) -> list[int]:
    """The first `limit` indices in `order` (closest first; ties: the source's row id) whose
    rows measured different runs: a run exported twice is one piece of evidence, shown once."""
    chosen: list[int] = []
    seen: set[tuple] = set()
    for index in order:
        run = rows[index].run
        if run not in seen:
            seen.add(run)
            chosen.append(int(index))
            if len(chosen) == limit:
                break
    return chosen


def nearest_published_many(
    goals: Iterable[PublishedGoal], *, limit: int = NEAREST_LIMIT
) -> list[list[dict]]:
    """For each goal, its model's published rows closest first (at most `limit`), each saying
    how it differs. One query for all the goals: every row of their models, through the
    (model, accelerator) index, without the provenance text."""
    goals = list(goals)
    by_model: dict[str, list[PublishedRowFacts]] = defaultdict(list)
    if goals:
        rows = (
            PublishedMeasurement.objects.filter(model__slug__in={goal.model_slug for goal in goals})
            .order_by("source_key", "pk")
            .values_list(*_FACT_COLUMNS)
        )
        for values in rows:
            row = PublishedRowFacts(*values)
            by_model[row.model].append(row)
    tables = {slug: _RowTable(rows) for slug, rows in by_model.items()}
    answers = []
    for goal in goals:
        table = tables.get(goal.model_slug)
        if table is None:
            answers.append([])
            continue
        distances = table.distances(goal)
        nearest = _distinct_runs(table.rows, np.argsort(distances, kind="stable"), limit)
        answers.append(
            [
                published_entry(
                    table.rows[i], published_differences(table.rows[i], goal), float(distances[i])
                )
                for i in nearest
            ]
        )
    return answers


@dataclass(frozen=True)
class PublishedStats:
    stored: int
    held_out: int
    aggregated: int
    sample: Share | None  # rows of the installed wheel's sample the catalog can represent
    sample_note: str
    overview: Share  # cells of the TensorRT-LLM overview the catalog can represent


def published_stats() -> PublishedStats:
    """How many published rows are stored, and how many of the shipped sample's rows name a
    model, system and engine the catalog holds."""
    rows = PublishedMeasurement.objects.all()
    stored = rows.count()
    held_out = rows.filter(held_out=True).count()
    aggregated = rows.filter(mode="agg").count()
    models = set(ModelSpec.objects.values_list("slug", flat=True))
    accelerators = set(Accelerator.objects.values_list("slug", flat=True))
    engines = set(Engine.objects.values_list("slug", flat=True))

    def representable(source_rows: list) -> Share:
        count = sum(
            row.model_slug in models
            and row.accelerator_slug in accelerators
            and row.engine_slug in engines
            for row in source_rows
        )
        return Share(count, len(source_rows))

    overview = representable(read_overview())
    if not aiconfigurator_wheel.AVAILABLE:
        return PublishedStats(
            stored, held_out, aggregated, None, aiconfigurator_wheel.UNAVAILABLE_REASON, overview
        )
    sample = representable(read_sample(aiconfigurator_wheel.sample_path()))
    return PublishedStats(stored, held_out, aggregated, sample, "", overview)
