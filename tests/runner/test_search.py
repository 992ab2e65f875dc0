"""The runner's side of a rate search: records judged by the domain's SLO rule, and the job
plan's search section (the search itself is tested in tests/domain/test_ratesearch.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from stackselect_domain.slo import SLO
from stackselect_runner.config import RunnerSettings
from stackselect_runner.harness import RequestRecord, records_verdict
from stackselect_runner.jobrun import JobPlan


def record(
    ttft_s: float | None, e2e_s: float | None, output_tokens: int, error: str | None = None
) -> RequestRecord:
    return RequestRecord(
        index=0,
        send_s=0.0,
        input_tokens=8,
        output_tokens=output_tokens,
        ttft_s=ttft_s,
        e2e_s=e2e_s,
        error=error,
    )


def test_records_are_judged_in_milliseconds_with_failures_missing_and_one_token_meeting() -> None:
    records = [
        record(0.100, 0.100 + 0.040 * 9, 10),  # TTFT 100 ms, TPOT 40 ms: meets both
        record(0.250, 0.250 + 0.010 * 9, 10),  # TTFT 250 ms: misses
        record(0.100, 0.100 + 0.060 * 9, 10),  # TPOT 60 ms: misses
        record(0.150, 0.150, 1),  # one token: no TPOT, TTFT meets
        record(None, None, 0, error="HTTP 503: overloaded"),
    ]
    verdict = records_verdict(records, SLO(ttft_ms=200, tpot_ms=50, attainment=0.9))
    assert verdict.attainment == pytest.approx(2 / 5)
    assert verdict.passed is False


def test_a_search_job_probes_the_first_requests_in_arrival_order_and_ignores_load_points(
    tmp_path: Path,
) -> None:
    arrivals = [3.0, 0.0, 2.0, 1.0]
    job_spec = {
        "engine": {"adapter": "simulated", "model": "m"},
        "requests": [
            {"index": index, "arrival_s": arrival, "input_tokens": 4, "output_tokens": 2}
            for index, arrival in enumerate(arrivals)
        ],
        "search": {
            "slo": {"ttft_ms": 100},
            "start_rate_rps": 2,
            "max_rate_rps": 8,
            "requests_per_probe": 3,
        },
    }
    plan = JobPlan.from_spec(job_spec, RunnerSettings(work_dir=tmp_path), attempt_id=1)
    assert [request.index for request in plan.harness.requests] == [1, 3, 2]
    assert plan.load_points == ()
    assert plan.search is not None and plan.search.min_rate_rps == 2
