"""Workload drift: a two-sample Kolmogorov-Smirnov test on lengths and a relative rate change.

Pure numpy, no Django. The KS statistic is the largest gap between the two empirical CDFs; the
critical value at significance alpha is c(alpha) * sqrt((n + m) / (n * m)) with
c(alpha) = sqrt(-ln(alpha / 2) / 2), the large-sample approximation of the two-sample test
(Smirnov 1948; as given e.g. in the "Two-sample Kolmogorov-Smirnov test" section of
https://en.wikipedia.org/wiki/Kolmogorov%E2%80%93Smirnov_test). A floor on the statistic keeps
huge traces from firing on shifts too small to change a benchmark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

KS_ALPHA = 0.01
KS_MIN_STATISTIC = 0.1
RATE_CHANGE_LIMIT = 0.25


def ks_statistic(first: np.ndarray, second: np.ndarray) -> float:
    """sup |F1(x) - F2(x)| over every observed x."""
    a = np.sort(np.asarray(first, dtype=float))
    b = np.sort(np.asarray(second, dtype=float))
    if a.size == 0 or b.size == 0:
        raise ValueError("lengths: both samples need at least one value")
    points = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, points, side="right") / a.size
    cdf_b = np.searchsorted(b, points, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


def ks_critical_value(n: int, m: int, alpha: float = KS_ALPHA) -> float:
    if n < 1 or m < 1:
        raise ValueError("lengths: both samples need at least one value")
    if not 0 < alpha < 1:
        raise ValueError("alpha: must be between 0 and 1")
    return math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((n + m) / (n * m))


@dataclass(frozen=True)
class WorkloadSample:
    """Lengths drawn from (or observed in) a workload, and its mean arrival rate if open-loop."""

    input_lengths: np.ndarray
    output_lengths: np.ndarray
    rate_rps: float | None


@dataclass(frozen=True)
class DriftVerdict:
    drifted: bool
    reasons: list[str] = field(default_factory=list)
    figures: dict[str, float | None] = field(default_factory=dict)


def _length_drift(name: str, reference: np.ndarray, observed: np.ndarray) -> tuple[float, str]:
    statistic = ks_statistic(reference, observed)
    limit = max(ks_critical_value(reference.size, observed.size), KS_MIN_STATISTIC)
    if statistic <= limit:
        return statistic, ""
    return statistic, f"{name} lengths differ (KS statistic {statistic:.3f} > {limit:.3f})"


def workload_drift(reference: WorkloadSample, observed: WorkloadSample) -> DriftVerdict:
    """Drifted when either length distribution fails the KS test or the rate moves > 25%."""
    reasons = []
    figures: dict[str, float | None] = {}
    for name, ref, obs in (
        ("input", reference.input_lengths, observed.input_lengths),
        ("output", reference.output_lengths, observed.output_lengths),
    ):
        figures[f"ks_{name}"], reason = _length_drift(name, ref, obs)
        if reason:
            reasons.append(reason)
    change = None
    if reference.rate_rps and observed.rate_rps is not None:
        change = observed.rate_rps / reference.rate_rps - 1
        if abs(change) > RATE_CHANGE_LIMIT:
            reasons.append(
                f"rate {reference.rate_rps:g} -> {observed.rate_rps:g} req/s "
                f"({change:+.0%}, limit ±{RATE_CHANGE_LIMIT:.0%})"
            )
    figures["rate_change"] = change
    return DriftVerdict(bool(reasons), reasons, figures)
