"""Per-load-point figures from validated samples, load sweeps, and repeated-run statistics.

Definitions (the same on the evidence page and in the README):
- TTFT: send to first streamed token. E2E: send to the end of the response.
- TPOT = (E2E - TTFT) / (output tokens - 1); undefined (missing) for outputs of one token.
- ITL: every gap between consecutive streamed tokens, pooled over the requests.
- Percentiles interpolate linearly between closest ranks (numpy's default, "type 7").
- Latency figures use completed requests. The SLO verdict (attainment, percentile, margin) is
  `stackselect_domain.slo.judge`, the rule prediction and the runner's search use too.
  A metric that was not measured is None, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from stackselect_domain.ratesearch import MaxRate, max_rate_between
from stackselect_domain.slo import SLO, SLOVerdict, judge

from apps.evidence.schema import TIMEOUT_ERROR, LoadPoint, LoadPointSamples

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
LENGTH_TOLERANCE = 0.05


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
    slo_margin: float | None
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


def slo_verdict(samples: LoadPointSamples, slo: SLO) -> SLOVerdict:
    """The domain's SLO verdict over every record of the load point."""
    records = samples.records
    return judge(
        slo,
        ok=records["error"].isna().to_numpy(),
        ttft_ms=records["ttft_s"].to_numpy(dtype=float) * 1000,
        tpot_ms=tpot_seconds(records).to_numpy() * 1000,
        e2e_ms=records["e2e_s"].to_numpy(dtype=float) * 1000,
    )


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
    verdict = None if slo is None else slo_verdict(samples, slo)
    attainment = None if verdict is None else verdict.attainment
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
        goodput_rps=None if attainment is None else verdict.met / duration,
        slo_margin=None if verdict is None else verdict.margin,
        achieved_isl=achieved_isl,
        achieved_osl=achieved_osl,
        isl_off_target=_off_target(achieved_isl, requested_isl),
        osl_off_target=_off_target(achieved_osl, requested_osl),
    )


# ------------------------------------------------------------------ load sweeps


def max_rate_from_summaries(summaries: Sequence[LoadPointSummary]) -> MaxRate:
    """The domain's max-rate rule over summarised load points; points without a verdict are
    skipped."""
    points = [
        (summary.offered_rate_rps, summary.slo_margin)
        for summary in summaries
        if summary.slo_margin is not None
    ]
    return max_rate_between(points)


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
