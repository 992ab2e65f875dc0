"""How wrong each prediction method tends to be: its error band per metric.

A band is the 10th to 90th percentile of the method's signed relative error,
(predicted - measured) / measured, on the held-out published rows. The accuracy benchmark
(bench/bench_accuracy.py --write-bands) measures them and writes data/error_bands.json with its
date; estimates show the band next to the figure, so "TTFT 420 ms (-30% .. +45%)" reads as
"the measured value was within that range of the prediction for 80% of held-out rows".
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

BANDS_FILE = Path(__file__).parent / "data" / "error_bands.json"
METRICS = ("ttft", "tpot")
LOW_PERCENTILE, HIGH_PERCENTILE = 10, 90


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


def band_of(errors: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentile of relative errors (inclusive method); needs two or more."""
    if len(errors) < 2:
        raise ValueError("errors: need at least two to form a band")
    cuts = statistics.quantiles(errors, n=100, method="inclusive")
    return cuts[LOW_PERCENTILE - 1], cuts[HIGH_PERCENTILE - 1]


@cache
def _stored(path: Path = BANDS_FILE) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def error_band(method: str, metric: str) -> ErrorBand | None:
    """The stored band of a method ("roofline", "aiconfigurator", "calibrated") for a metric
    ("ttft", "tpot"), or None when the benchmark has not measured one."""
    data = _stored()
    entry = data.get("bands", {}).get(method, {}).get(metric)
    if not entry:
        return None
    return ErrorBand(
        method=method,
        metric=metric,
        low=entry["low"],
        high=entry["high"],
        rows=entry["rows"],
        measured_on=data.get("measured_on", ""),
        source=data.get("source", ""),
    )


def write_bands(
    errors: dict[str, dict[str, Sequence[float]]], *, measured_on: str, source: str
) -> dict[str, Any]:
    """Write the bands of {method: {metric: relative errors}} to BANDS_FILE; returns the data."""
    bands: dict[str, dict[str, dict[str, float | int]]] = {}
    for method, metrics in errors.items():
        for metric, values in metrics.items():
            if len(values) < 2:
                continue
            low, high = band_of(values)
            bands.setdefault(method, {})[metric] = {
                "low": round(low, 4),
                "high": round(high, 4),
                "rows": len(values),
            }
    data = {"measured_on": measured_on, "source": source, "bands": bands}
    BANDS_FILE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _stored.cache_clear()
    return data


# ---------------------------------------------------------------- as estimates carry them

NO_BAND_REASON = "no held-out accuracy measured for this method and metric yet"
ESTIMATE_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms", "goodput_per_gpu_rps")
_STORED_AS = {f"{metric}_ms": metric for metric in METRICS}


def band_record(method: str, metric: str) -> dict[str, Any]:
    """An estimate's band for one of its figures: {"band": {"p10", "p90"}, "rows", "measured_on",
    "source"}, or {"band": None, "reason": why there is none}."""
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
    }


def error_bands(method: str, metrics: Iterable[str] = ESTIMATE_METRICS) -> dict[str, Any]:
    return {metric: band_record(method, metric) for metric in metrics}
