"""Summarising a complete load point into its stored result, with the selection's SLO."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackselect_domain.slo import SLO

from apps.evidence.analysis import summarize
from apps.evidence.models import LoadPointResult
from apps.evidence.schema import LoadPointSamples
from apps.evidence.stored import percentile_sketch


def slo_of(goal: Mapping[str, Any] | None) -> SLO | None:
    """The selection's SLO document as the analysis's SLO; None when it sets no target."""
    if not goal:
        return None
    slo = SLO.from_dict(goal)
    return slo if slo.targets() else None


def summarise_result(
    *,
    result: LoadPointResult,
    samples: LoadPointSamples,
    gpu_count: int | None,
    slo: SLO | None,
) -> None:
    """Fill `summary` and `quantiles` of `result` (the caller saves it)."""
    summary = summarize(
        samples,
        gpu_count=gpu_count,
        slo=slo,
        requested_isl=result.requested_isl,
        requested_osl=result.requested_osl,
    )
    result.summary = summary.as_dict()
    result.quantiles = percentile_sketch(samples)
