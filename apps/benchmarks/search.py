"""Max-rate search plans on the server: probe uploads, their SLO verdicts and the answer.

The runner picks each probe's rate and uploads it as load point `index` (docs/runner-protocol.md).
The server does not trust the runner's verdicts: the evidence app scores every chunk from its
stored samples (apps/evidence/probes.py) by the domain's one SLO rule, and a probe's verdict
pools its chunks' (`stackselect_domain.slo.pooled`), so the plan page and the evidence pages
agree with each other and with the runner.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from stackselect_domain.ratesearch import max_rate_between
from stackselect_domain.slo import SLO, SLOVerdict, pooled

from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, ResultUpload


def load_point_limit(plan: BenchmarkPlan) -> int:
    """How many load point indexes a job of the plan may upload (a search: one per probe)."""
    return int(plan.search["max_probes"]) if plan.search else len(plan.load_points)


@dataclass(frozen=True)
class ProbeRow:
    index: int
    rate_rps: float
    requests: int
    attainment: float | None
    margin: float | None
    complete: bool
    passed: bool | None


def _probe(index: int, chunks: list[ResultUpload], slo: SLO) -> ProbeRow:
    stored = [chunk.summary.get("slo_verdict") for chunk in chunks]
    verdict = None
    if all(item is not None for item in stored):
        verdict = pooled(slo, [SLOVerdict.from_dict(item) for item in stored])
    complete = {chunk.chunk_index for chunk in chunks} >= set(range(chunks[0].chunk_count))
    known = verdict is not None and verdict.passed is not None
    return ProbeRow(
        index=index,
        rate_rps=float(chunks[0].summary.get("probe_rate_rps") or 0.0),
        requests=sum(chunk.record_count for chunk in chunks),
        attainment=None if verdict is None else verdict.attainment,
        margin=None if verdict is None else verdict.margin,
        complete=complete,
        passed=verdict.passed if known and complete else None,
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
    slo = SLO.from_dict(job.plan.search["slo"])
    return [_probe(index, chunks, slo) for index, chunks in sorted(by_index.items())]


def search_answer(probes: list[ProbeRow]) -> dict[str, Any] | None:
    """The bracket of the highest rate meeting the SLO, by the domain's sweep rule.

    `low_rps` is the highest passing rate below the first failing one (`high_rps`); a pass
    above a failure is noise. `rate_rps` interpolates between them in the SLO margin.
    """
    judged = [probe for probe in probes if probe.passed is not None and probe.margin is not None]
    if not judged:
        return None
    found = max_rate_between([(p.rate_rps, p.margin) for p in judged])
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
    return {
        "target": float(search["slo"]["attainment"]),
        "slo": SLO.from_dict(search["slo"]).describe(),
        "tolerance": search["tolerance"],
        "probes": [asdict(probe) for probe in probes],
        "answer": search_answer(probes),
    }
