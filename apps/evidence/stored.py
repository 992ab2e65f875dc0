"""Summaries as stored JSON and back, and the compact percentile sketch kept for CDF charts.

No Django. The stored summary is `LoadPointSummary.as_dict()`; reading it back gives the same
dataclass, so the analysis functions (metric_value, max_rate_from_summaries) apply unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from apps.evidence.analysis import Distribution, LoadPointSummary, tpot_seconds
from apps.evidence.schema import LoadPoint, LoadPointSamples

DISTRIBUTION_FIELDS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")
SKETCH_PERCENTILES = np.arange(0, 101)


def summary_from_json(data: Mapping[str, Any]) -> LoadPointSummary:
    values = dict(data)
    values["load_point"] = LoadPoint(**values["load_point"])
    for name in DISTRIBUTION_FIELDS:
        if values[name] is not None:
            values[name] = Distribution(**values[name])
    return LoadPointSummary(**values)


def _sketch(values: np.ndarray) -> list[float] | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    return [float(v) for v in np.percentile(values, SKETCH_PERCENTILES)]


def percentile_sketch(samples: LoadPointSamples) -> dict[str, list[float] | None]:
    """TTFT and TPOT of completed requests at every whole percentile (0..100)."""
    records = samples.records
    ok = records["error"].isna().to_numpy()
    return {
        "ttft_s": _sketch(records["ttft_s"].to_numpy(dtype=float)[ok]),
        "tpot_s": _sketch(tpot_seconds(records).to_numpy()[ok]),
    }
