"""Predicted against measured per candidate, and efficiency factors refitted from the evidence.

No queries: the selector passes the selection (its model row loaded), the candidates (their
accelerator and release rows loaded) and the built evidence. Only evidence comparable with the
reference is used, so a different workload never bends the factors, and only measured or
imported runs: a simulated run's timings come from the estimator's own step cost, so fitting the
estimator to them would be circular. Uses the estimator's own fitting
(apps/selections/efficiency_fit.py); this module only gathers the measurements.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from apps.benchmarks.plan_identity import plan_workload
from apps.evidence.comparison import CandidateEvidence, PointEvidence
from apps.selections.catalog_adapter import accelerator_spec, engine_config, model_arch
from apps.selections.efficiency_fit import Measurement, fit_efficiency, predicted_vs_measured
from apps.selections.estimator import Efficiency, Parallelism, estimate_latency
from apps.selections.models import Candidate, Selection
from apps.selections.steady_state import expected_hit_tokens


@dataclass(frozen=True)
class Fit:
    """Refitted factors of one (accelerator, engine), beside the ones the estimator used."""

    accelerator: str
    engine: str
    measurements: int
    compute: float
    bandwidth: float
    base_compute: float
    base_bandwidth: float


@dataclass(frozen=True)
class PredictionError:
    """A candidate's predicted and measured figures; `error` is measured / predicted - 1. The
    accelerator and engine name the fit that re-estimated it."""

    candidate_id: int
    label: str
    rows: list[dict[str, Any]]
    fit_key: tuple[str, str]


def nearest_point(points: Sequence[PointEvidence], in_flight: float) -> PointEvidence | None:
    """The measured load point whose requests in flight are closest to the estimate's."""
    known = [point for point in points if point.in_flight is not None]
    return min(known, key=lambda point: abs(point.in_flight - in_flight), default=None)


def measured_figures(evidence: CandidateEvidence, concurrency: float) -> dict[str, float]:
    """TTFT/TPOT means near `concurrency` in flight, and max goodput per GPU, when measured."""
    figures: dict[str, float] = {}
    point = nearest_point(evidence.points, concurrency)
    if point is not None:
        for metric, name in (("ttft_ms", "ttft_mean_ms"), ("tpot_ms", "tpot_mean_ms")):
            if point.value(name) is not None:
                figures[metric] = point.value(name)
    rate = evidence.max_rate.rate_rps if evidence.max_rate is not None else None
    if rate is not None and evidence.gpu_count:
        figures["goodput_per_gpu_rps"] = rate / evidence.gpu_count
    return figures


def predicted_figures(candidate: Candidate) -> tuple[dict[str, float], float]:
    """The estimate's TTFT/TPOT and goodput per GPU, and the requests in flight in one replica
    they hold at."""
    estimate = candidate.estimate or {}
    latency = estimate.get("latency") or {}
    predicted = {
        "ttft_ms": latency.get("ttft_ms"),
        "tpot_ms": latency.get("tpot_ms"),
        "goodput_per_gpu_rps": estimate.get("goodput_per_gpu_rps"),
    }
    return predicted, float(latency.get("concurrency") or 1)


def _micro_batch(layout: Parallelism, in_flight: float) -> int:
    """One micro-batch's share of `in_flight` requests of the whole deployment: a run's load
    spreads over its dp replicas, each of pp micro-batches, and the estimator's latency is
    one micro-batch's (as the candidate list's and /estimate's are)."""
    return max(1, round(in_flight / layout.schedulers))


def _cached_tokens(selection: Selection, candidate: Candidate, isl: int) -> float:
    """A typical prompt's tokens the candidate's engine serves from its prefix cache, as its
    estimate counted them: a run of a prefix-heavy goal had them too, and fitting it as if
    every prompt token were computed would read the cache's saving as a faster GPU."""
    kv_tokens = ((candidate.estimate or {}).get("memory") or {}).get("kv_capacity_tokens")
    if not kv_tokens:
        return 0.0
    config = engine_config(candidate.release, candidate.accelerator, kv_capacity_tokens=kv_tokens)
    return expected_hit_tokens(plan_workload(selection.workload), config, isl)


def _measurements(
    selection: Selection, entry: CandidateEvidence, candidate: Candidate
) -> list[Measurement]:
    model, accel = model_arch(selection.model), accelerator_spec(candidate.accelerator)
    isl, osl = _lengths(selection)
    layout = Parallelism.of_stack(candidate.stack)
    cached = _cached_tokens(selection, candidate, isl)
    measurements = []
    for point in entry.points:
        ttft, tpot = point.value("ttft_mean_ms"), point.value("tpot_mean_ms")
        if point.in_flight is None or (ttft is None and tpot is None):
            continue
        measurements.append(
            Measurement(
                model=model,
                accel=accel,
                precision=str(candidate.stack.get("precision")),
                parallelism=layout,
                isl=isl,
                osl=osl,
                concurrency=_micro_batch(layout, point.in_flight),
                ttft_ms=ttft,
                tpot_ms=tpot,
                kv_dtype=selection.workload.get("kv_dtype"),
                cached_tokens=cached,
            )
        )
    return measurements


def _lengths(selection: Selection) -> tuple[int, int]:
    """The goal's mean input and output lengths, as the estimate used them."""
    workload = plan_workload(selection.workload)
    return round(workload.input_length.mean()), round(workload.output_length.mean())


def _measured(
    evidence: Iterable[CandidateEvidence], candidates: Mapping[int, Candidate]
) -> Iterator[tuple[CandidateEvidence, Candidate]]:
    """Comparable, not simulated evidence of a known candidate, with that candidate."""
    for entry in evidence:
        candidate = candidates.get(entry.candidate_id or -1)
        if candidate is not None and entry.comparable and not entry.simulated:
            yield entry, candidate


def measurements_by_fit(
    selection: Selection,
    evidence: Iterable[CandidateEvidence],
    candidates: Mapping[int, Candidate],
) -> dict[tuple[str, str], list[Measurement]]:
    """The comparable measured load points of a selection, per (accelerator, engine): what a
    fit of that engine on that GPU reads, whichever goal measured them."""
    grouped: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    if selection.model is None:
        return grouped
    for entry, candidate in _measured(evidence, candidates):
        try:
            found = _measurements(selection, entry, candidate)
        except ValueError:  # the catalog lacks a figure the estimator needs
            continue
        key = (candidate.accelerator.slug, str(candidate.stack.get("engine")))
        grouped[key].extend(found)
    return grouped


def fitted(grouped: Mapping[tuple[str, str], Sequence[Measurement]]) -> list[Fit]:
    """Factors per (accelerator, engine) fitted on its measured load points."""
    base = Efficiency()
    result = []
    for (accelerator, engine), measurements in sorted(grouped.items()):
        if not measurements:
            continue
        fit = fit_efficiency(measurements, base=base)
        result.append(
            Fit(
                accelerator,
                engine,
                len(measurements),
                fit.compute,
                fit.bandwidth,
                base.compute,
                base.bandwidth,
            )
        )
    return result


def _calibrated(
    selection: Selection, candidate: Candidate, fit: Fit, in_flight: float
) -> dict[str, float]:
    """The candidate's TTFT/TPOT re-estimated with the refitted factors, at `in_flight`
    requests of the whole deployment."""
    isl, osl = _lengths(selection)
    layout = Parallelism.of_stack(candidate.stack)
    estimate = estimate_latency(
        model=model_arch(selection.model),
        accel=accelerator_spec(candidate.accelerator),
        precision=str(candidate.stack.get("precision")),
        kv_dtype=selection.workload.get("kv_dtype"),
        parallelism=layout,
        isl=isl,
        osl=osl,
        concurrency=_micro_batch(layout, in_flight),
        efficiency=replace(Efficiency(), compute=fit.compute, bandwidth=fit.bandwidth),
        cached_tokens=_cached_tokens(selection, candidate, isl),
    )
    return {"ttft_ms": estimate.ttft_ms, "tpot_ms": estimate.tpot_ms}


def _error_rows(
    selection: Selection, entry: CandidateEvidence, candidate: Candidate, fit: Fit | None
) -> list[dict[str, Any]]:
    predicted, concurrency = predicted_figures(candidate)
    # the prediction holds at one replica's requests in flight; a run measures the deployment's
    deployment = concurrency * Parallelism.of_stack(candidate.stack).dp
    rows = predicted_vs_measured(predicted, measured_figures(entry, deployment))
    calibrated = _calibrated(selection, candidate, fit, deployment) if fit else {}
    for row in rows:
        row["error"] = row["ratio"] - 1
        after = calibrated.get(str(row["metric"]))
        row["calibrated"] = after
        row["calibrated_error"] = row["measured"] / after - 1 if after else None
    return rows


@dataclass(frozen=True)
class CalibrationReport:
    fits: list[Fit]
    errors: list[PredictionError]


def calibration_report(
    selection: Selection,
    evidence: Sequence[CandidateEvidence],
    candidates: Mapping[int, Candidate],
    *,
    found: Sequence[Fit] | None = None,
) -> CalibrationReport:
    """Refitted factors, and each measured candidate's prediction error before and after:
    after the selection's own fits, or after `found` (fits of more runs than its own)."""
    if found is None:
        found = fitted(measurements_by_fit(selection, evidence, candidates))
    by_key = {(fit.accelerator, fit.engine): fit for fit in found}
    errors = []
    for entry, candidate in _measured(evidence, candidates):
        key = (candidate.accelerator.slug, str(candidate.stack.get("engine")))
        rows = _error_rows(selection, entry, candidate, by_key.get(key))
        if rows:
            errors.append(PredictionError(candidate.pk, entry.label, rows, key))
    return CalibrationReport(list(found), errors)
