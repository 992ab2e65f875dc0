"""Max-rate search plans on the server: probe uploads, their SLO attainment and the answer.

The runner picks each probe's rate and uploads it as load point `index` (runner/PROTOCOL.md).
The server does not trust the runner's verdicts: it scores every chunk itself with the evidence
analysis (apps/evidence/analysis.py, the same rule the runner mirrors), so the plan page and
the evidence pages agree. A probe's attainment is the request-weighted mean of its chunks'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, ResultUpload
from apps.benchmarks.results import ParsedUpload, UploadError
from apps.evidence.analysis import max_rate_meeting, summarize
from apps.evidence.schema import LoadPoint, samples_from_records
from apps.evidence.schema import UploadError as SamplesError
from apps.selections.simulator import SLO


def load_point_limit(plan: BenchmarkPlan) -> int:
    """How many load point indexes a job of the plan may upload (a search: one per probe)."""
    return int(plan.search["max_probes"]) if plan.search else len(plan.load_points)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def probe_figures(plan: BenchmarkPlan, parsed: ParsedUpload) -> dict[str, Any]:
    """For a search plan, the chunk's probe rate and SLO attainment; nothing for a fixed plan."""
    if not plan.search:
        return {}
    point = parsed.meta.get("load_point")
    rate = point.get("rate_rps") if isinstance(point, Mapping) else None
    if not _positive(rate) or not math.isfinite(rate):
        raise UploadError("load_point.rate_rps: a probe of a rate search needs its rate")
    if not parsed.duration_s:
        raise UploadError("duration_s: a probe of a rate search needs its duration")
    try:
        samples = samples_from_records(
            parsed.records,
            LoadPoint(rate_rps=float(rate), index=parsed.load_point_index),
            parsed.duration_s,
            # Real engines may stream several tokens per chunk; attainment needs only timings.
            multi_token_chunks=True,
        )
    except SamplesError as error:
        raise UploadError(f"records: {error}") from error
    summary = summarize(samples, slo=SLO(**plan.search["slo"]))
    return {"probe_rate_rps": float(rate), "slo_attainment": summary.slo_attainment}


@dataclass(frozen=True)
class ProbeRow:
    index: int
    rate_rps: float
    requests: int
    attainment: float | None
    complete: bool
    passed: bool | None


def _probe(index: int, chunks: list[ResultUpload], target: float) -> ProbeRow:
    requests = sum(chunk.record_count for chunk in chunks)
    shares = [chunk.summary.get("slo_attainment") for chunk in chunks]
    share = None
    if requests and all(value is not None for value in shares):
        share = sum(v * c.record_count for v, c in zip(shares, chunks, strict=True)) / requests
    complete = {chunk.chunk_index for chunk in chunks} >= set(range(chunks[0].chunk_count))
    return ProbeRow(
        index=index,
        rate_rps=float(chunks[0].summary.get("probe_rate_rps") or 0.0),
        requests=requests,
        attainment=share,
        complete=complete,
        passed=None if share is None or not complete else share >= target,
    )


def job_probes(job: BenchmarkJob) -> list[ProbeRow]:
    """The probes of the job's latest attempt that uploaded any, by probe index."""
    uploads = list(
        ResultUpload.objects.filter(job=job)
        .defer("body")
        .order_by("-attempt__number", "load_point_index", "chunk_index")
    )
    if not uploads or not job.plan.search:
        return []
    latest = uploads[0].attempt_id
    by_index: dict[int, list[ResultUpload]] = {}
    for upload in uploads:
        if upload.attempt_id == latest:
            by_index.setdefault(upload.load_point_index, []).append(upload)
    target = float(job.plan.search["slo"]["attainment"])
    return [_probe(index, chunks, target) for index, chunks in sorted(by_index.items())]


def search_answer(probes: list[ProbeRow], target: float) -> dict[str, Any] | None:
    """The bracket of the highest rate meeting the SLO, by the evidence sweep rule.

    `low_rps` is the highest passing rate below the first failing one (`high_rps`); a pass
    above a failure is noise. `rate_rps` interpolates between them (apps/evidence/analysis).
    """
    judged = [probe for probe in probes if probe.passed is not None]
    if not judged:
        return None
    found = max_rate_meeting([(p.rate_rps, p.attainment or 0.0) for p in judged], target)
    failing = [probe.rate_rps for probe in judged if not probe.passed]
    high = min(failing) if failing else None
    passing = [p.rate_rps for p in judged if p.passed and (high is None or p.rate_rps < high)]
    low = max(passing) if passing else None
    return {
        "bound": found.bound,
        "rate_rps": found.rate_rps,
        "low_rps": low,
        "high_rps": high,
        "text": _answer_text(found.bound, low, high, found.rate_rps),
    }


def _answer_text(bound: str, low: float | None, high: float | None, rate: float | None) -> str:
    if bound == "below_range":
        return f"Even the lowest rate probed, {high:.4g} req/s, misses the SLO."
    if bound == "at_least":
        return f"The SLO held at every rate probed, up to {low:.4g} req/s."
    return (
        f"Meets the SLO at {low:.4g} req/s, misses it at {high:.4g} req/s "
        f"(bracket {(high - low) / high:.1%} wide; interpolated {rate:.4g} req/s)."
    )


def search_view(job: BenchmarkJob) -> dict[str, Any] | None:
    """What the plan page shows of a job's search: each probe as it lands, and the answer."""
    search = job.plan.search
    if not search:
        return None
    probes = job_probes(job)
    target = float(search["slo"]["attainment"])
    return {
        "target": target,
        "tolerance": search["tolerance"],
        "probes": [asdict(probe) for probe in probes],
        "answer": search_answer(probes, target),
    }
