"""Candidates x metrics at each load point, under one identity, with honest verdicts.

No Django: the selector hands in stored runs. Runs with the same identity fingerprint are
repeats of one candidate; every other candidate is judged against a reference candidate.
A candidate compares only when every identity field outside the stack under test matches;
a metric nobody measured stays None ("missing"); one side is "better" only when the
bootstrap intervals of repeated runs do not overlap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stackselect_domain.identity import comparability
from stackselect_domain.quality import DEFAULT_QUALITY_TOLERANCE
from stackselect_domain.ratesearch import MaxRate, max_rate_between

from apps.evidence.analysis import (
    Interval,
    LoadPointSummary,
    bootstrap_interval,
    compare,
    metric_value,
)
from apps.evidence.quality import QualityJudgement, judge_quality
from apps.evidence.tuned import Trial, keep_best_trials

MS = 1000.0
VERDICT_WORDS = {"a_better": "better", "b_better": "worse"}


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    path: str
    scale: float
    higher_is_better: bool
    label: str


METRICS: tuple[Metric, ...] = (
    Metric("ttft_p50_ms", "ttft_s.p50", MS, False, "TTFT P50 (ms)"),
    Metric("ttft_p95_ms", "ttft_s.p95", MS, False, "TTFT P95 (ms)"),
    Metric("ttft_p99_ms", "ttft_s.p99", MS, False, "TTFT P99 (ms)"),
    Metric("ttft_mean_ms", "ttft_s.mean", MS, False, "TTFT mean (ms)"),
    Metric("tpot_p50_ms", "tpot_s.p50", MS, False, "TPOT P50 (ms)"),
    Metric("tpot_p95_ms", "tpot_s.p95", MS, False, "TPOT P95 (ms)"),
    Metric("tpot_p99_ms", "tpot_s.p99", MS, False, "TPOT P99 (ms)"),
    Metric("tpot_mean_ms", "tpot_s.mean", MS, False, "TPOT mean (ms)"),
    Metric("itl_p50_ms", "itl_s.p50", MS, False, "ITL P50 (ms)"),
    Metric("itl_p99_ms", "itl_s.p99", MS, False, "ITL P99 (ms)"),
    Metric("e2e_p95_ms", "e2e_s.p95", MS, False, "E2E P95 (ms)"),
    Metric("e2e_p99_ms", "e2e_s.p99", MS, False, "E2E P99 (ms)"),
    Metric("request_throughput_rps", "request_throughput_rps", 1, True, "requests/s"),
    Metric("slo_attainment", "slo_attainment", 1, True, "SLO attainment"),
    Metric("goodput_rps", "goodput_rps", 1, True, "goodput (req/s)"),
    Metric(
        "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_gpu", 1, True, "output tok/s/GPU"
    ),
    Metric(
        "output_tokens_per_s_per_user", "output_tokens_per_s_per_user", 1, True, "tok/s per user"
    ),
    Metric("errors", "errors", 1, False, "errors"),
    Metric("timeouts", "timeouts", 1, False, "timeouts"),
)
METRIC_NAMES = tuple(metric.name for metric in METRICS)


@dataclass(frozen=True)
class StoredResult:
    load_point: Mapping[str, Any]
    summary: LoadPointSummary
    quantiles: Mapping[str, list[float] | None] | None = None


@dataclass(frozen=True)
class StoredRun:
    """One run as the selector read it; `label` names its candidate for people."""

    run_id: int
    label: str
    candidate_id: int | None
    source: str
    tool: str
    identity: Mapping[str, Any]
    fingerprint: str
    gpu_count: int | None
    results: Sequence[StoredResult]
    # The job's tuning trial ({group, trial, settings, origin, source}) and its quality probe
    # ({score, outputs, evaluation}); None for imported runs and runs without a probe.
    tuning: Mapping[str, Any] | None = None
    quality: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Cell:
    """A metric at a load point: the mean over runs, its interval (two or more runs), and
    the verdict against the reference candidate (None for the reference itself)."""

    value: float | None
    interval: Interval | None = None
    verdict: str | None = None


@dataclass
class PointEvidence:
    key: str
    load_point: dict[str, Any]
    offered_rate_rps: float
    in_flight: float | None
    runs: int
    cells: dict[str, Cell]
    isl_off_target: bool | None
    osl_off_target: bool | None
    quantiles: Mapping[str, list[float] | None] | None
    slo_margin: float | None = None
    # failed requests over all sent (mean over runs), and the plan's max_error_rate (None for
    # runs made without a failure policy, such as imported ones)
    error_share: float | None = None
    error_budget: float | None = None

    @property
    def over_error_budget(self) -> bool | None:
        """More failed than the plan allows: the latency figures describe only the requests that
        completed. None where either figure is unknown, so such a point is not judged."""
        if self.error_share is None or self.error_budget is None:
            return None
        return self.error_share > self.error_budget

    @property
    def missing(self) -> list[str]:
        return [name for name, cell in self.cells.items() if cell.value is None]

    def value(self, name: str) -> float | None:
        return self.cells[name].value


@dataclass
class CandidateEvidence:
    key: str
    label: str
    candidate_id: int | None
    sources: list[str]
    tools: list[str]
    run_ids: list[int]
    identity: Mapping[str, Any]
    gpu_count: int | None
    points: list[PointEvidence]
    max_rate: MaxRate | None
    status: str = "reference"
    differing: tuple[str, ...] = field(default_factory=tuple)
    tuning: Mapping[str, Any] | None = None
    trials: list[Trial] = field(default_factory=list)
    quality: list[Mapping[str, Any]] = field(default_factory=list)
    judgement: QualityJudgement | None = None

    @property
    def quality_flag(self) -> str | None:
        return self.judgement.flag if self.judgement else None

    @property
    def comparable(self) -> bool:
        return self.status != "not_comparable"

    @property
    def simulated(self) -> bool:
        """A dry run on the simulated engine (all runs of one identity share the flag)."""
        return bool(self.identity.get("simulated"))

    @property
    def mode(self) -> str:
        return "simulated" if self.simulated else "measured"

    @property
    def best_goodput(self) -> float | None:
        return _max([point.value("goodput_rps") for point in self.points])


def load_point_key(load_point: Mapping[str, Any]) -> str:
    """Load points of different runs line up by what was offered, not by their position."""
    if load_point.get("rate_rps") is not None:
        return f"rate {float(load_point['rate_rps']):g} req/s"
    return f"concurrency {load_point.get('concurrency')}"


def _sort_key(point: PointEvidence) -> tuple[int, float]:
    concurrency = point.load_point.get("concurrency")
    return (1, float(concurrency)) if concurrency is not None else (0, point.offered_rate_rps)


def _max(values: Sequence[float | None]) -> float | None:
    measured = [value for value in values if value is not None]
    return max(measured) if measured else None


def _mean(values: Sequence[float | None]) -> float | None:
    measured = [value for value in values if value is not None]
    return float(np.mean(measured)) if measured else None


def _any_flag(values: Sequence[bool | None]) -> bool | None:
    known = [value for value in values if value is not None]
    return any(known) if known else None


def _in_flight(summary: LoadPointSummary) -> float | None:
    """Requests in flight: the concurrency, or throughput x mean E2E (Little's law)."""
    if summary.load_point.concurrency is not None:
        return float(summary.load_point.concurrency)
    if summary.e2e_s is None:
        return None
    return summary.request_throughput_rps * summary.e2e_s.mean


def _point(key: str, results: Sequence[StoredResult], error_budget: float | None) -> PointEvidence:
    summaries = [result.summary for result in results]
    cells = {}
    for metric in METRICS:
        raw = [metric_value(summary, metric.path) for summary in summaries]
        values = [None if value is None else value * metric.scale for value in raw]
        cells[metric.name] = Cell(_mean(values), bootstrap_interval(values))
    return PointEvidence(
        key=key,
        load_point=dict(results[0].load_point),
        offered_rate_rps=float(np.mean([summary.offered_rate_rps for summary in summaries])),
        in_flight=_mean([_in_flight(summary) for summary in summaries]),
        runs=len(results),
        cells=cells,
        isl_off_target=_any_flag([summary.isl_off_target for summary in summaries]),
        osl_off_target=_any_flag([summary.osl_off_target for summary in summaries]),
        quantiles=results[-1].quantiles,
        slo_margin=_mean([summary.slo_margin for summary in summaries]),
        error_share=_mean([_error_share(summary) for summary in summaries]),
        error_budget=error_budget,
    )


def _error_share(summary: LoadPointSummary) -> float | None:
    return summary.errors / summary.requests if summary.requests else None


def _max_rate(points: Sequence[PointEvidence]) -> MaxRate | None:
    pairs = [
        (point.offered_rate_rps, point.slo_margin)
        for point in points
        if point.slo_margin is not None
    ]
    return max_rate_between(pairs) if pairs else None


def _candidate(runs: Sequence[StoredRun]) -> CandidateEvidence:
    by_point: dict[str, list[StoredResult]] = defaultdict(list)
    for run in runs:
        for result in run.results:
            by_point[load_point_key(result.load_point)].append(result)
    first = runs[0]
    budget = (first.identity.get("failure_policy") or {}).get("max_error_rate")
    points = sorted(
        (_point(key, results, budget) for key, results in by_point.items()), key=_sort_key
    )
    return CandidateEvidence(
        key=first.fingerprint,
        label=first.label,
        candidate_id=first.candidate_id,
        sources=sorted({run.source for run in runs}),
        tools=sorted({run.tool for run in runs}),
        run_ids=[run.run_id for run in runs],
        identity=first.identity,
        gpu_count=first.gpu_count,
        points=points,
        max_rate=_max_rate(points),
        tuning=first.tuning,
        quality=[run.quality for run in runs if run.quality],
    )


def _verdicts(candidate: CandidateEvidence, reference: CandidateEvidence) -> None:
    reference_points = {point.key: point for point in reference.points}
    higher = {metric.name: metric.higher_is_better for metric in METRICS}
    for point in candidate.points:
        other = reference_points.get(point.key)
        for name, cell in point.cells.items():
            theirs = other.cells[name].interval if other is not None else None
            verdict = compare(cell.interval, theirs, higher_is_better=higher[name])
            point.cells[name] = Cell(cell.value, cell.interval, VERDICT_WORDS.get(verdict, verdict))


def build_evidence(
    runs: Sequence[StoredRun],
    *,
    reference_key: str | None = None,
    quality_tolerance: float = DEFAULT_QUALITY_TOLERANCE,
) -> list[CandidateEvidence]:
    """One entry per identity, the reference first (the one asked for, else the most runs).

    The tuning trials of one candidate collapse into its best setting under the SLO
    (apps/evidence/tuned.py); each candidate's probe is judged against the reference's.
    """
    groups: dict[str, list[StoredRun]] = defaultdict(list)
    for run in sorted(runs, key=lambda run: run.run_id):
        groups[run.fingerprint].append(run)
    candidates = keep_best_trials([_candidate(group) for group in groups.values()])
    if not candidates:
        return []
    reference = next((c for c in candidates if c.key == reference_key), None)
    reference = reference or max(candidates, key=lambda c: len(c.run_ids))
    for candidate in candidates:
        if candidate is reference:
            continue
        verdict = comparability(candidate.identity, reference.identity)
        candidate.status, candidate.differing = verdict.status, verdict.differing
        if verdict.comparable:
            _verdicts(candidate, reference)
    judge_quality(candidates, reference, tolerance=quality_tolerance)
    candidates.remove(reference)
    return [reference, *candidates]
