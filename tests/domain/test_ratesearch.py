"""Rate search on its own: the probe sequence, its stop rules, the spec checks, the sweep rule."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from stackselect_domain.ratesearch import MaxRate, RateSearch, SearchSpec, max_rate_between
from stackselect_domain.slo import SLO, SLOVerdict

TARGET = 0.9
SLO_ = SLO(ttft_ms=200, tpot_ms=50, attainment=TARGET)


def verdict(attainment: float) -> SLOVerdict:
    """A verdict whose attainment decides it (the percentile is met by every request)."""
    return SLOVerdict(
        requests=100,
        met=round(attainment * 100),
        attainment=attainment,
        within={"ttft_ms": 1.0},
        margin=attainment - TARGET,
    )


def spec(**changes: Any) -> SearchSpec:
    values: dict[str, Any] = {
        "slo": SLO_,
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
        search.record(rate, verdict(attainment_at(rate)))
    return rates


def step_at(true_max: float) -> Callable[[float], float]:
    return lambda rate: 1.0 if rate <= true_max else 0.5


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
        search.record(rate, verdict(measured))
    assert search.bracket() == (24.0, 36.0)
    assert search.next_rate() == 30.0


def test_an_unknowable_verdict_is_refused_as_a_probe() -> None:
    unknowable = SLOVerdict(requests=3, met=0, attainment=None, within={}, margin=None)
    with pytest.raises(ValueError, match="unknowable"):
        RateSearch(spec()).record(24.0, unknowable)


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
    base = {"start_rate_rps": 1, "max_rate_rps": 2, "requests_per_probe": 3}
    with pytest.raises(ValueError, match=r"search\.slo: set at least one of"):
        SearchSpec.from_dict({**base, "slo": {"attainment": 0.9}})
    with pytest.raises(ValueError, match=r"search\.slo\.ttft_ms must be > 0"):
        SearchSpec.from_dict({**base, "slo": {"ttft_ms": -1}})
    with pytest.raises(ValueError, match="search: missing field 'requests_per_probe'"):
        SearchSpec.from_dict({"slo": {"ttft_ms": 100}, "start_rate_rps": 1, "max_rate_rps": 2})


def test_the_sweep_rule_interpolates_the_margin_between_the_last_pass_and_the_first_fail() -> None:
    # margins 0.09 at 2 req/s and -0.03 at 3 req/s: zero is crossed three quarters of the way.
    points = [(1.0, 0.09), (2.0, 0.09), (3.0, -0.03), (4.0, 0.05)]
    assert max_rate_between(points) == MaxRate(pytest.approx(2.75), "interpolated")


def test_the_sweep_rule_says_when_the_sweep_does_not_bracket_the_answer() -> None:
    assert max_rate_between([(1.0, 0.09), (2.0, 0.05)]) == MaxRate(2.0, "at_least")
    assert max_rate_between([(1.0, -0.4), (2.0, -0.7)]) == MaxRate(None, "below_range")
    with pytest.raises(ValueError, match="at least one"):
        max_rate_between([])
