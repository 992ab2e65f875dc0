"""A rate search's probes scored on the server, from the samples the evidence stores.

The server does not trust the runner's verdicts: each uploaded chunk of a probe gets its SLO
verdict from the same samples the evidence page analyses, by the domain's one rule
(`stackselect_domain.slo.judge`), and the plan page pools the chunks' verdicts.
"""

from __future__ import annotations

import math
from typing import Any

from stackselect_domain.slo import SLO

from apps.benchmarks.models import BenchmarkPlan
from apps.evidence.analysis import slo_verdict
from apps.evidence.schema import FieldError, LoadPointSamples, UploadError


def probe_figures(plan: BenchmarkPlan, samples: LoadPointSamples) -> dict[str, Any]:
    """For a search plan, the chunk's probe rate and SLO verdict; nothing for a fixed plan."""
    if not plan.search:
        return {}
    rate = samples.load_point.rate_rps
    if rate is None or not rate > 0 or not math.isfinite(rate):
        raise UploadError(
            [FieldError("load_point.rate_rps", "a probe of a rate search needs its rate")]
        )
    verdict = slo_verdict(samples, SLO.from_dict(plan.search["slo"]))
    return {"probe_rate_rps": float(rate), "slo_verdict": verdict.as_dict()}
