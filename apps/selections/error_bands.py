"""How wrong each prediction method tends to be: its error band per metric.

A band is the 10th to 90th percentile of the method's signed relative error,
(predicted - measured) / measured, on published rows no fit saw. The accuracy benchmark
(bench/bench_accuracy.py --write-bands) measures TTFT and TPOT on the held-out rows, the capacity
benchmark (bench/bench_capacity.py --write-bands) the capacity at maximum load; each writes its
metrics into data/error_bands.json with their date and source, leaving the other's. Estimates
show the band next to the figure, so "TTFT 420 ms (-30% .. +45%)" reads as "the measured value
was within that range of the prediction for 80% of held-out rows".
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from stackselect_domain.steptime import METHOD_TEAM_FITTED

from apps.selections.efficiency_fit import TeamFit

BANDS_FILE = Path(__file__).parent / "data" / "error_bands.json"
METRICS = ("ttft", "tpot")
CAPACITY = "capacity"  # output tokens/s per GPU at maximum load
LOW_PERCENTILE, HIGH_PERCENTILE = 10, 90


@dataclass(frozen=True)
class BandScope:
    """The engines and accelerator vendors of the rows a band was measured on: a band says
    nothing measured about a stack outside them."""

    engines: tuple[str, ...]
    vendors: tuple[str, ...]

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> BandScope:
        """The scope of measured (engine slug, vendor) pairs."""
        pairs = list(pairs)
        return cls(tuple(sorted({e for e, _ in pairs})), tuple(sorted({v for _, v in pairs})))

    def covers(self, engine: str | None, vendor: str | None) -> bool | None:
        """Whether a stack of this engine and vendor is among the measured; None when the
        stack does not say."""
        if not engine or not vendor:
            return None
        return engine in self.engines and vendor in self.vendors

    def as_dict(self) -> dict[str, list[str]]:
        return {"engines": list(self.engines), "vendors": list(self.vendors)}


@dataclass(frozen=True)
class ErrorBand:
    """Relative errors: low and high are fractions (-0.3 means 30% below the measurement)."""

    method: str
    metric: str
    low: float
    high: float
    rows: int
    measured_on: str
    source: str
    scope: BandScope | None = None


def band_of(errors: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentile of relative errors (inclusive method); needs two or more."""
    if len(errors) < 2:
        raise ValueError("errors: need at least two to form a band")
    cuts = statistics.quantiles(errors, n=100, method="inclusive")
    return cuts[LOW_PERCENTILE - 1], cuts[HIGH_PERCENTILE - 1]


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


@cache
def _stored(path: Path = BANDS_FILE) -> dict[str, Any]:
    return _read(path)


def error_band(method: str, metric: str) -> ErrorBand | None:
    """The stored band of a method ("roofline", "aiconfigurator", "calibrated") for a metric
    ("ttft", "tpot", "capacity"), or None when no benchmark has measured one."""
    entry = _stored().get("bands", {}).get(method, {}).get(metric)
    if not entry:
        return None
    return ErrorBand(
        method=method,
        metric=metric,
        low=entry["low"],
        high=entry["high"],
        rows=entry["rows"],
        measured_on=entry["measured_on"],
        source=entry["source"],
        scope=_scope(entry.get("measured_for")),
    )


def _scope(stored: dict[str, list[str]] | None) -> BandScope | None:
    if not stored:
        return None  # a band written before scopes were recorded
    return BandScope(tuple(stored["engines"]), tuple(stored["vendors"]))


def write_bands(
    errors: dict[str, dict[str, Sequence[float]]],
    *,
    measured_on: str,
    source: str,
    scopes: dict[str, BandScope] | None = None,
    path: Path = BANDS_FILE,
) -> dict[str, Any]:
    """Store the bands of {method: {metric: relative errors}} with their date, source and the
    scope of each method's answered rows ({method: BandScope}). The metrics named replace their
    old bands for every method; other metrics' bands stay."""
    written = {metric for metrics in errors.values() for metric in metrics}
    bands = {
        method: {metric: entry for metric, entry in metrics.items() if metric not in written}
        for method, metrics in _read(path).get("bands", {}).items()
    }
    for method, metrics in errors.items():
        for metric, values in metrics.items():
            if len(values) < 2:
                continue
            low, high = band_of(values)
            bands.setdefault(method, {})[metric] = {
                "low": round(low, 4),
                "high": round(high, 4),
                "rows": len(values),
                "measured_on": measured_on,
                "source": source,
            }
            if scopes and method in scopes:
                bands[method][metric]["measured_for"] = scopes[method].as_dict()
    data = {"bands": {method: metrics for method, metrics in bands.items() if metrics}}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _stored.cache_clear()
    return data


# ---------------------------------------------------------------- as estimates carry them

NO_BAND_REASON = "no held-out accuracy measured for this method and metric yet"
_TEAM_FITTED_UNBANDED = (
    "no held-out accuracy is measured for them, and the plain roofline's band does not "
    "describe them"
)
TEAM_FITTED_REASON = f"timed with factors fitted on the team's own runs; {_TEAM_FITTED_UNBANDED}"
ESTIMATE_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms", "goodput_per_gpu_rps", "replica_capacity_rps")
_STORED_AS = {**{f"{metric}_ms": metric for metric in METRICS}, "replica_capacity_rps": CAPACITY}


def team_fitted_reason(metric: str, fit: TeamFit | None) -> str:
    """Why a team-fitted figure has no band, with what its fit saw: the measured load points
    and, for a metric they measured, how far the refitted estimate read them."""
    if fit is None or not fit.measurements:
        return TEAM_FITTED_REASON
    points = f"{fit.measurements} measured load point{'s' if fit.measurements != 1 else ''}"
    goals = _goal_names(fit.goals)
    errors = sorted(fit.errors.get(metric) or ())
    seen = ""
    if errors:
        spread = f"{errors[0]:+.0%}" + (f" to {errors[-1]:+.0%}" if len(errors) > 1 else "")
        seen = (
            f"; those runs measured {metric.removesuffix('_ms').upper()} {spread} against the "
            "refitted analytic estimate at each run's own load (in-sample: the same runs "
            "fitted it)"
        )
    return f"timed with factors fitted on {points} of the team's own runs{goals}{seen}; " + (
        _TEAM_FITTED_UNBANDED
    )


def _goal_names(goals: Sequence[str], shown: int = 3) -> str:
    """The goals whose runs a team fit read, the first few by name."""
    if not goals:
        return ""
    names = ", ".join(goals[:shown])
    more = len(goals) - shown
    return f" (goal{'s' if len(goals) > 1 else ''} {names}" + (
        f" and {more} more)" if more > 0 else ")"
    )


def band_record(
    method: str,
    metric: str,
    *,
    engine: str | None = None,
    vendor: str | None = None,
    team_fit: TeamFit | None = None,
) -> dict[str, Any]:
    """An estimate's band for one of its figures: {"band": {"p10", "p90"}, "rows", "measured_on",
    "source", "measured_for": the engines and vendors measured, "covers_stack": whether this
    stack's `engine` and `vendor` are among them}, or {"band": None, "reason": why none}; a
    team-fitted figure's reason says what `team_fit` saw."""
    if method == METHOD_TEAM_FITTED:
        return {"band": None, "reason": team_fitted_reason(metric, team_fit)}
    stored = _STORED_AS.get(metric)
    band = error_band(method, stored) if stored else None
    if band is None:
        return {"band": None, "reason": NO_BAND_REASON}
    return {
        "band": {"p10": band.low, "p90": band.high},
        "reason": None,
        "rows": band.rows,
        "measured_on": band.measured_on,
        "source": band.source,
        "measured_for": band.scope.as_dict() if band.scope else None,
        "covers_stack": band.scope.covers(engine, vendor) if band.scope else None,
    }


def error_bands(
    method: str,
    metrics: Iterable[str] = ESTIMATE_METRICS,
    *,
    engine: str | None = None,
    vendor: str | None = None,
    team_fit: TeamFit | None = None,
) -> dict[str, Any]:
    """The bands of an estimate's figures, each saying whether it was measured on stacks of
    this engine and vendor."""
    return {
        metric: band_record(method, metric, engine=engine, vendor=vendor, team_fit=team_fit)
        for metric in metrics
    }
