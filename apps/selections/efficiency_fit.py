"""Fitting the estimator's efficiency factors to measured results (pure Python, no Django).

Per (accelerator, engine), measured TPOT and TTFT are compared with the estimator's prediction
under the current factors. Both are a fixed per-step overhead plus a busy time inversely
proportional to an efficiency (bandwidth for decode, compute for prefill), so the least-squares
slope s of measured against predicted busy time (overhead removed) rescales the factor:
new = old / s. Communication time is folded into the busy time, which is exact for tp = 1 and
first-order otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from apps.selections.estimator import (
    AcceleratorSpec,
    Efficiency,
    ModelArch,
    Parallelism,
    build_step_cost,
    estimate_latency,
)

MIN_FACTOR = 0.01


@dataclass(frozen=True)
class TeamFit:
    """Factors fitted on a team's measured runs of one engine on one GPU, with what the fit
    saw: how many measured load points, of which goals (their titles), and how far the
    refitted estimate still reads each metric of those same runs (measured / predicted - 1;
    in-sample, not held out)."""

    efficiency: Efficiency
    measurements: int = 0
    errors: Mapping[str, Sequence[float]] = field(default_factory=dict)
    goals: Sequence[str] = ()


@dataclass(frozen=True)
class Measurement:
    """One measured load level of a stack: its identity and the mean TTFT / TPOT observed."""

    model: ModelArch
    accel: AcceleratorSpec
    precision: str
    parallelism: Parallelism
    isl: int
    osl: int
    concurrency: int
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    kv_dtype: str | None = None
    cached_tokens: float = 0.0  # a prompt's tokens the engine's prefix cache served, on average


def _overhead_ms(measurement: Measurement, efficiency: Efficiency) -> float:
    cost = build_step_cost(
        model=measurement.model,
        accel=measurement.accel,
        precision=measurement.precision,
        kv_dtype=measurement.kv_dtype,
        parallelism=measurement.parallelism,
        efficiency=efficiency,
        context=measurement.isl + measurement.osl / 2,
    )
    return cost.step_overhead_s * 1e3


def _slope(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope through the origin of measured (y) on predicted (x)."""
    denominator = sum(x * x for x, _ in pairs)
    if denominator <= 0:
        return None
    return sum(x * y for x, y in pairs) / denominator


def _rescaled(factor: float, slope: float | None) -> float:
    if slope is None or slope <= 0:
        return factor
    return min(1.0, max(MIN_FACTOR, factor / slope))


def fit_efficiency(
    measurements: Sequence[Measurement], *, base: Efficiency | None = None
) -> Efficiency:
    """Efficiency factors that make the estimator match the measurements best.

    TPOT fits the bandwidth factor, TTFT the compute factor; a metric with no measurement
    keeps its base factor. Raises ValueError when nothing was measured.
    """
    base = base or Efficiency()
    if not any(m.ttft_ms is not None or m.tpot_ms is not None for m in measurements):
        raise ValueError("measurements: need at least one measured ttft_ms or tpot_ms")
    tpot_pairs: list[tuple[float, float]] = []
    ttft_pairs: list[tuple[float, float]] = []
    for measurement in measurements:
        predicted = estimate_latency(
            model=measurement.model,
            accel=measurement.accel,
            precision=measurement.precision,
            kv_dtype=measurement.kv_dtype,
            parallelism=measurement.parallelism,
            isl=measurement.isl,
            osl=measurement.osl,
            concurrency=measurement.concurrency,
            efficiency=base,
            cached_tokens=measurement.cached_tokens,
        )
        overhead = _overhead_ms(measurement, base)
        if measurement.tpot_ms is not None:
            tpot_pairs.append((predicted.tpot_ms - overhead, measurement.tpot_ms - overhead))
        if measurement.ttft_ms is not None:
            ttft_pairs.append((predicted.ttft_ms - overhead, measurement.ttft_ms - overhead))
    return replace(
        base,
        bandwidth=_rescaled(base.bandwidth, _slope(tpot_pairs)),
        compute=_rescaled(base.compute, _slope(ttft_pairs)),
    )


def predicted_vs_measured(
    predicted: dict[str, float], measured: dict[str, float]
) -> list[dict[str, float | str]]:
    """Rows of metric, predicted, measured and their ratio, for metrics both sides have."""
    rows: list[dict[str, float | str]] = []
    for metric in ("ttft_ms", "tpot_ms", "goodput_per_gpu_rps"):
        if predicted.get(metric) is None or measured.get(metric) is None:
            continue
        ratio = measured[metric] / predicted[metric] if predicted[metric] else float("nan")
        rows.append(
            {
                "metric": metric,
                "predicted": predicted[metric],
                "measured": measured[metric],
                "ratio": ratio,
            }
        )
    return rows
