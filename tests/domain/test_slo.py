"""The one SLO verdict: attainment over every request, each target's percentile, the margin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stackselect_domain.slo import SLO, SLOVerdict, judge, pooled, request_ms, requests_in_flight

SLO_TTFT_TPOT = SLO(ttft_ms=200, tpot_ms=50, attainment=0.9, percentile=50)


def test_attainment_counts_failed_requests_as_missing_and_an_undefined_tpot_as_meeting() -> None:
    verdict = judge(
        SLO_TTFT_TPOT,
        ok=[True, True, True, True, False],
        ttft_ms=[100, 250, 100, 150, None],  # the second misses TTFT
        tpot_ms=[40, 10, 60, None, None],  # the third misses TPOT; the fourth has none
        e2e_ms=[460, 340, 640, 150, None],
    )
    assert verdict.attainment == pytest.approx(2 / 5)
    assert verdict.met == 2
    assert verdict.within == {"ttft_ms": pytest.approx(3 / 5), "tpot_ms": pytest.approx(3 / 5)}
    assert verdict.margin == pytest.approx(2 / 5 - 0.9)
    assert verdict.passed is False


def test_every_failed_request_gives_zero_and_no_request_gives_no_verdict() -> None:
    failed = judge(SLO_TTFT_TPOT, ok=[False] * 3, ttft_ms=[None] * 3)
    assert (failed.attainment, failed.passed) == (0.0, False)
    empty = judge(SLO_TTFT_TPOT, ok=[])
    assert (empty.attainment, empty.margin, empty.passed) == (None, None, None)


def test_a_targeted_metric_no_completed_request_measured_makes_the_verdict_unknowable() -> None:
    one_token = {"ok": [True, True], "ttft_ms": [100, 100], "tpot_ms": [None, None]}
    assert judge(SLO_TTFT_TPOT, **one_token).passed is None
    assert judge(SLO(ttft_ms=200, attainment=0.9), **one_token).passed is True


def test_the_percentile_fails_the_slo_even_when_attainment_is_reached() -> None:
    """60% of requests meet every target: enough for attainment 0.5, not for a p90."""
    ok = [True] * 10
    ttft = [100.0] * 6 + [900.0] * 4
    loose = judge(SLO(ttft_ms=200, attainment=0.5, percentile=50), ok=ok, ttft_ms=ttft)
    strict = judge(SLO(ttft_ms=200, attainment=0.5, percentile=90), ok=ok, ttft_ms=ttft)
    assert loose.attainment == strict.attainment == pytest.approx(0.6)
    assert loose.passed is True and loose.margin == pytest.approx(0.1)
    assert strict.passed is False and strict.margin == pytest.approx(0.6 - 0.9)


def test_numpy_columns_with_nan_read_like_lists_with_none() -> None:
    as_lists = judge(SLO_TTFT_TPOT, ok=[True, True], ttft_ms=[100, 300], tpot_ms=[None, 10])
    as_arrays = judge(
        SLO_TTFT_TPOT,
        ok=np.array([True, True]),
        ttft_ms=np.array([100.0, 300.0]),
        tpot_ms=np.array([math.nan, 10.0]),
    )
    assert as_lists == as_arrays


def test_pooled_chunks_give_the_verdict_of_all_their_requests_together() -> None:
    ok = [True] * 8
    ttft = [100, 100, 300, 100, 100, 100, 300, 300]
    whole = judge(SLO_TTFT_TPOT, ok=ok, ttft_ms=ttft, tpot_ms=[10] * 8)
    parts = [
        judge(SLO_TTFT_TPOT, ok=ok[:3], ttft_ms=ttft[:3], tpot_ms=[10] * 3),
        judge(SLO_TTFT_TPOT, ok=ok[3:], ttft_ms=ttft[3:], tpot_ms=[10] * 5),
    ]
    together = pooled(SLO_TTFT_TPOT, [SLOVerdict.from_dict(part.as_dict()) for part in parts])
    assert together.attainment == pytest.approx(whole.attainment)
    assert together.margin == pytest.approx(whole.margin)
    assert together.within == pytest.approx(whole.within)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ttft_ms": -1}, r"slo\.ttft_ms must be > 0"),
        ({"ttft_ms": 100, "percentile": 101}, r"slo\.percentile must be in \(0, 100\]"),
        ({"ttft_ms": 100, "attainment": 0}, r"slo\.attainment must be > 0"),
        ({"tpot_ms": "fast"}, r"slo\.tpot_ms must be a number"),
        ({"attainment": 0.9}, "set at least one of the TTFT, TPOT and E2E targets"),
    ],
)
def test_a_bad_slo_names_its_field(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SLO.from_dict(data, need_target=True)


def test_the_dict_form_round_trips_and_fills_the_defaults() -> None:
    slo = SLO.from_dict({"ttft_ms": 300, "percentile": None, "name": "chat"})
    assert (slo.percentile, slo.attainment) == (99.0, 0.99)
    assert SLO.from_dict(slo.as_dict()) == slo
    assert slo.describe() == "TTFT ≤ 300 ms at p99, with 99% of requests meeting every target"


def test_a_requests_time_is_its_ttft_then_one_tpot_per_token_after_the_first():
    assert request_ms(200.0, 20.0, 101) == pytest.approx(2200.0)
    assert request_ms(200.0, 20.0, 1) == 200.0
    assert request_ms(200.0, 20.0, 0) == 200.0


def test_an_open_loops_requests_in_flight_are_its_rate_times_their_time_rounded_up():
    assert requests_in_flight(4.0, 2.2) == 9
    assert requests_in_flight(4.0, 0.5) == 2
    assert requests_in_flight(0.1, 0.2) == 1
