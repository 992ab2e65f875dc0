"""The rate search on its own: attainment of records, the probe sequence, the spec checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stackselect_runner.config import RunnerSettings
from stackselect_runner.harness import RequestRecord
from stackselect_runner.jobrun import JobPlan
from stackselect_runner.search import RateSearch, SearchSLO, SearchSpec, attainment

SLO = SearchSLO(ttft_ms=200, tpot_ms=50, attainment=0.9)


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


def spec(**changes: Any) -> SearchSpec:
    values: dict[str, Any] = {
        "slo": SLO,
        "start_rate_rps": 24.0,
        "min_rate_rps": 4.0,
        "max_rate_rps": 160.0,
        "requests_per_probe": 10,
        "max_probes": 12,
    }
    return SearchSpec(**{**values, **changes})


def run(search: RateSearch, attainment_at: Callable[[float], float]) -> list[float]:
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        search.record(rate, attainment_at(rate))
    return rates


def step_at(true_max: float) -> Callable[[float], float]:
    return lambda rate: 1.0 if rate <= true_max else 0.5


def test_attainment_counts_failed_requests_as_missing_and_an_undefined_tpot_as_meeting() -> None:
    records = [
        record(0.100, 0.100 + 0.040 * 9, 10),  # TTFT 100 ms, TPOT 40 ms: meets both
        record(0.250, 0.250 + 0.010 * 9, 10),  # TTFT 250 ms: misses
        record(0.100, 0.100 + 0.060 * 9, 10),  # TPOT 60 ms: misses
        record(0.150, 0.150, 1),  # one token: no TPOT, TTFT meets
        record(None, None, 0, error="HTTP 503: overloaded"),
    ]
    assert attainment(records, SLO) == pytest.approx(2 / 5)


def test_attainment_is_zero_when_every_request_failed_and_unknown_without_records() -> None:
    failed = [record(None, None, 0, error="timeout") for _ in range(3)]
    assert attainment(failed, SLO) == 0.0
    assert attainment([], SLO) is None


def test_attainment_is_unknown_when_no_completed_request_measured_a_targeted_metric() -> None:
    single_tokens = [record(0.1, 0.1, 1), record(0.1, 0.1, 1)]
    assert attainment(single_tokens, SLO) is None
    assert attainment(single_tokens, SearchSLO(ttft_ms=200)) == 1.0


def test_it_brackets_by_doubling_then_bisects_until_the_bracket_is_within_five_percent() -> None:
    # 24 passes, 48 fails; bisect [24, 48]: 36 passes, 42 and 39 fail, then 37.5 fails and
    # [36, 37.5] is 1.5 wide, within 5% of 37.5 (1.875): six probes, answer 36.
    search = RateSearch(spec())
    assert run(search, step_at(37.0)) == [24.0, 48.0, 36.0, 42.0, 39.0, 37.5]
    result = search.result()
    assert (result.bound, result.rate_rps, result.high_rps) == ("bracketed", 36.0, 37.5)
    assert result.describe().startswith(
        "highest rate meeting the SLO: 36 req/s, bracket [36, 37.5]"
    )


def test_it_halves_from_the_start_when_the_start_rate_already_fails() -> None:
    # 24 and 12 fail, 6 passes; bisect [6, 12]: 9 passes, 10.5 fails, 9.75 passes,
    # 10.125 passes: [10.125, 10.5] is within 5% of 10.5.
    search = RateSearch(spec())
    assert run(search, step_at(10.2)) == [24.0, 12.0, 6.0, 9.0, 10.5, 9.75, 10.125]
    assert search.result().rate_rps == 10.125


def test_it_stops_at_the_highest_rate_when_even_that_rate_passes() -> None:
    search = RateSearch(spec())
    assert run(search, lambda rate: 1.0) == [24.0, 48.0, 96.0, 160.0]
    result = search.result()
    assert (result.bound, result.rate_rps, result.high_rps) == ("at_least", 160.0, None)


def test_it_stops_at_the_lowest_rate_when_even_that_rate_fails() -> None:
    search = RateSearch(spec())
    assert run(search, lambda rate: 0.0) == [24.0, 12.0, 6.0, 4.0]
    result = search.result()
    assert (result.bound, result.rate_rps, result.high_rps) == ("below_range", None, 4.0)
    assert "no rate meets the SLO" in result.describe()


def test_it_stops_after_max_probes_with_the_open_bracket() -> None:
    search = RateSearch(spec(max_probes=3))
    assert run(search, step_at(37.0)) == [24.0, 48.0, 36.0]
    result = search.result()
    assert (result.bound, result.rate_rps, result.high_rps) == ("probe_limit", 36.0, 48.0)


def test_a_pass_above_a_failing_rate_is_noise_and_does_not_raise_the_answer() -> None:
    search = RateSearch(spec())
    for rate, measured in ((24.0, 1.0), (48.0, 0.5), (36.0, 0.5), (42.0, 1.0)):
        search.record(rate, measured)
    assert search.bracket() == (24.0, 36.0)
    assert search.next_rate() == 30.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"start_rate_rps": 2.0}, "min_rate_rps <= start_rate_rps <= max_rate_rps"),
        ({"max_rate_rps": float("inf")}, "search.max_rate_rps must be finite"),
        ({"requests_per_probe": 0}, "search.requests_per_probe must be >= 1"),
        ({"tolerance": 1.5}, "search.tolerance must be in (0, 1)"),
    ],
)
def test_a_bad_search_section_names_its_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        spec(**changes)


def test_a_search_section_needs_a_latency_target_and_its_required_fields() -> None:
    with pytest.raises(ValueError, match=r"search\.slo: set at least one of"):
        SearchSLO.from_dict({"attainment": 0.9})
    with pytest.raises(ValueError, match=r"search\.slo\.ttft_ms must be > 0"):
        SearchSLO.from_dict({"ttft_ms": -1})
    with pytest.raises(ValueError, match="search: missing field 'requests_per_probe'"):
        SearchSpec.from_dict({"slo": {"ttft_ms": 100}, "start_rate_rps": 1, "max_rate_rps": 2})


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
