"""Per-load-point figures from validated samples, load sweeps, and repeated-run statistics.

Definitions (the same on the evidence page and in the README):
- TTFT: send to first streamed token. E2E: send to the end of the response.
- TPOT = (E2E - TTFT) / (output tokens - 1); undefined (missing) for outputs of one token.
- ITL: every gap between consecutive streamed tokens, pooled over the requests.
- Percentiles interpolate linearly between closest ranks (numpy's default, "type 7").
- Latency figures use completed requests; SLO attainment is over every request, and a
  failed request never meets it. A metric that was not measured is None, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from apps.evidence.schema import TIMEOUT_ERROR, LoadPoint, LoadPointSamples
from apps.selections.simulator import SLO

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
LENGTH_TOLERANCE = 0.05
SLO_METRIC_COLUMNS: dict[str, str] = {"ttft_ms": "ttft_s", "tpot_ms": "tpot_s", "e2e_ms": "e2e_s"}


@dataclass(frozen=True, slots=True)
class Distribution:
    """Percentiles and mean of one latency, in seconds."""

    p50: float
    p90: float
    p95: float
    p99: float
    mean: float

    @classmethod
    def of(cls, values: np.ndarray) -> Distribution | None:
        """None when nothing was measured: an empty sample has no percentile."""
        if values.size == 0:
            return None
        p50, p90, p95, p99 = np.percentile(values, PERCENTILES)
        return cls(float(p50), float(p90), float(p95), float(p99), float(values.mean()))


@dataclass(frozen=True)
class LoadPointSummary:
    """What one load point measured; every None means "not measured" and shows as missing."""

    load_point: LoadPoint
    duration_s: float
    requests: int
    completed: int
    errors: int
    timeouts: int
    request_throughput_rps: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    output_tokens_per_s_per_gpu: float | None
    total_tokens_per_s_per_gpu: float | None
    output_tokens_per_s_per_user: float | None
    ttft_s: Distribution | None
    tpot_s: Distribution | None
    itl_s: Distribution | None
    e2e_s: Distribution | None
    slo_attainment: float | None
    goodput_rps: float | None
    achieved_isl: float | None
    achieved_osl: float | None
    isl_off_target: bool | None
    osl_off_target: bool | None

    @property
    def offered_rate_rps(self) -> float:
        """The x of a load sweep: the offered rate, or the achieved one for a concurrency."""
        if self.load_point.rate_rps is not None:
            return self.load_point.rate_rps
        return self.request_throughput_rps

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def tpot_seconds(records: pd.DataFrame) -> pd.Series:
    """TPOT per request; NaN for failed requests and outputs of fewer than two tokens."""
    decode_tokens = records["output_tokens"].to_numpy(dtype=float) - 1
    decode_s = records["e2e_s"].to_numpy() - records["ttft_s"].to_numpy()
    defined = records["error"].isna().to_numpy() & (decode_tokens >= 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(defined, decode_s / decode_tokens, np.nan)
    return pd.Series(tpot, index=records.index, name="tpot_s")


def itl_gaps(samples: LoadPointSamples, selected: np.ndarray) -> np.ndarray:
    """The recorded gaps of the `selected` records (a boolean mask over the frame)."""
    counts = np.clip(samples.records["itl_count"].to_numpy(), 0, None)
    return samples.itl_gaps[np.repeat(selected, counts)]


def _measured(values: np.ndarray) -> np.ndarray:
    return values[~np.isnan(values)]


def _attainment(
    ok: np.ndarray, latencies: dict[str, np.ndarray], slo: SLO
) -> tuple[float | None, int]:
    """Share of all requests meeting every target, and how many met them.

    A completed request whose metric is undefined (TPOT of a one-token output) cannot miss
    that target; a metric no completed request measured makes attainment unknowable (None).
    """
    meets = ok.copy()
    for name, target_ms in slo.targets().items():
        values = latencies[SLO_METRIC_COLUMNS[name]]
        if ok.any() and np.isnan(values[ok]).all():
            return None, 0
        with np.errstate(invalid="ignore"):
            meets &= np.isnan(values) | (values <= target_ms / 1000)
    met = int(meets.sum())
    return met / len(ok), met


def _off_target(achieved: float | None, requested: float | None) -> bool | None:
    if achieved is None or requested is None:
        return None
    return abs(achieved - requested) > LENGTH_TOLERANCE * requested


def _mean_or_none(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def summarize(
    samples: LoadPointSamples,
    *,
    gpu_count: int | None = None,
    slo: SLO | None = None,
    requested_isl: float | None = None,
    requested_osl: float | None = None,
) -> LoadPointSummary:
    """All figures of one load point, computed on whole columns."""
    records, duration = samples.records, samples.duration_s
    errors = records["error"]
    ok = errors.isna().to_numpy()
    latencies = {
        "ttft_s": records["ttft_s"].to_numpy(),
        "tpot_s": tpot_seconds(records).to_numpy(),
        "e2e_s": records["e2e_s"].to_numpy(),
    }
    input_tokens = records["input_tokens"].to_numpy()[ok]
    output_tokens = records["output_tokens"].to_numpy()[ok]
    output_rate = float(output_tokens.sum()) / duration
    total_rate = float(output_tokens.sum() + input_tokens.sum()) / duration
    tpot_ok = _measured(latencies["tpot_s"][ok])
    attainment, met = _attainment(ok, latencies, slo) if slo is not None else (None, 0)
    achieved_isl, achieved_osl = _mean_or_none(input_tokens), _mean_or_none(output_tokens)
    return LoadPointSummary(
        load_point=samples.load_point,
        duration_s=duration,
        requests=len(records),
        completed=int(ok.sum()),
        errors=int((~ok).sum()),
        timeouts=int((errors == TIMEOUT_ERROR).sum()),
        request_throughput_rps=float(ok.sum()) / duration,
        output_tokens_per_s=output_rate,
        total_tokens_per_s=total_rate,
        output_tokens_per_s_per_gpu=output_rate / gpu_count if gpu_count else None,
        total_tokens_per_s_per_gpu=total_rate / gpu_count if gpu_count else None,
        output_tokens_per_s_per_user=_mean_or_none(1 / tpot_ok[tpot_ok > 0]),
        ttft_s=Distribution.of(_measured(latencies["ttft_s"][ok])),
        tpot_s=Distribution.of(tpot_ok),
        itl_s=Distribution.of(itl_gaps(samples, ok)),
        e2e_s=Distribution.of(_measured(latencies["e2e_s"][ok])),
        slo_attainment=attainment,
        goodput_rps=None if attainment is None else met / duration,
        achieved_isl=achieved_isl,
        achieved_osl=achieved_osl,
        isl_off_target=_off_target(achieved_isl, requested_isl),
        osl_off_target=_off_target(achieved_osl, requested_osl),
    )


# ------------------------------------------------------------------ load sweeps


@dataclass(frozen=True, slots=True)
class MaxRate:
    """The highest request rate that meets the attainment target, and how it was found.

    Rule: load points are sorted by rate; the answer lies between the last passing point
    and the FIRST failing one, interpolated linearly in attainment. Points above the first
    failure are ignored (a pass there is noise, not capacity). `bound` says when the sweep
    does not bracket the answer: "below_range" (even the lowest rate fails, rate None) or
    "at_least" (every rate passes; the highest one is a lower bound).
    """

    rate_rps: float | None
    bound: Literal["interpolated", "below_range", "at_least"]


def max_rate_meeting(points: Sequence[tuple[float, float]], target: float) -> MaxRate:
    """`points` are (request rate, attainment) pairs; `target` the required attainment."""
    if not points:
        raise ValueError("points: at least one (rate, attainment) pair is needed")
    ordered = sorted(points)
    failing = next((i for i, (_, share) in enumerate(ordered) if share < target), None)
    if failing is None:
        return MaxRate(ordered[-1][0], "at_least")
    if failing == 0:
        return MaxRate(None, "below_range")
    (rate_pass, share_pass), (rate_fail, share_fail) = ordered[failing - 1], ordered[failing]
    fraction = (share_pass - target) / (share_pass - share_fail)
    return MaxRate(rate_pass + fraction * (rate_fail - rate_pass), "interpolated")


def max_rate_from_summaries(summaries: Sequence[LoadPointSummary], target: float) -> MaxRate:
    """The same rule over summarised load points; points without attainment are skipped."""
    points = [
        (summary.offered_rate_rps, summary.slo_attainment)
        for summary in summaries
        if summary.slo_attainment is not None
    ]
    return max_rate_meeting(points, target)


# --------------------------------------------------------------- repeated runs


@dataclass(frozen=True, slots=True)
class Interval:
    """A bootstrap confidence interval around the mean of repeated runs."""

    estimate: float
    low: float
    high: float
    runs: int


def bootstrap_interval(
    values: Sequence[float | None],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Interval | None:
    """Percentile bootstrap of the mean over runs; None below two measured runs.

    Missing runs (None/NaN) are dropped, never counted as 0. The seed is fixed so the same
    runs always give the same interval.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence: must be in (0, 1)")
    measured = np.array([v for v in values if v is not None], dtype=float)
    measured = measured[~np.isnan(measured)]
    if measured.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = rng.choice(measured, size=(resamples, measured.size), replace=True).mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(measured.mean()), float(low), float(high), int(measured.size))


Verdict = Literal["a_better", "b_better", "indistinguishable", "missing"]


def compare(a: Interval | None, b: Interval | None, *, higher_is_better: bool) -> Verdict:
    """One side is better only when the intervals do not overlap."""
    if a is None or b is None:
        return "missing"
    if a.low > b.high:
        return "a_better" if higher_is_better else "b_better"
    if b.low > a.high:
        return "b_better" if higher_is_better else "a_better"
    return "indistinguishable"


def metric_value(summary: LoadPointSummary, path: str) -> float | None:
    """A figure by dotted name (`"ttft_s.p99"`, `"goodput_rps"`); None when missing."""
    value: Any = summary
    for part in path.split("."):
        if not hasattr(value, part):
            raise ValueError(f"metric: unknown name {path!r}")
        value = getattr(value, part)
        if value is None:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"metric: {path!r} is not a number")
    return float(value)
