"""How wrong a prediction method is likely to be, per metric: the band every estimate carries.

A band is the 10th-90th percentile of a method's relative errors on measurements it was never
fitted on. Until such held-out errors are measured for a method, its band is null and says why:
a made-up band would claim a certainty nobody measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NO_BAND_REASON = "no held-out accuracy measured for this method yet"
METRICS = ("ttft_ms", "tpot_ms", "e2e_ms", "goodput_per_gpu_rps")


def error_band(method: str, metric: str) -> dict[str, Any]:
    """{"band": {"p10": ..., "p90": ...} or None, "reason": why there is none}."""
    return {"band": None, "reason": NO_BAND_REASON}


def error_bands(method: str, metrics: Iterable[str] = METRICS) -> dict[str, dict[str, Any]]:
    return {metric: error_band(method, metric) for metric in metrics}
