"""Analysis against numbers worked out by hand (the arithmetic is in each test's comments)."""

from __future__ import annotations

import pytest
from stackselect_domain.slo import SLO

from apps.evidence.analysis import (
    Interval,
    bootstrap_interval,
    compare,
    max_rate_from_summaries,
    metric_value,
    summarize,
)
from tests.evidence.samples import failed, record, samples, streamed


def test_latency_percentiles_of_a_tiny_set_interpolate_between_ranks():
    # TTFTs 0.1..0.5: P50 is the middle one; P90 sits at rank 3.6 -> 0.4 + 0.6 * 0.1 = 0.46;
    # P95 at rank 3.8 -> 0.48; P99 at rank 3.96 -> 0.496; mean 0.3.
    ttfts = [0.5, 0.1, 0.4, 0.2, 0.3]
    summary = summarize(samples([streamed(i, ttft_s=t, gaps=[0.05]) for i, t in enumerate(ttfts)]))

    ttft = summary.ttft_s
    assert ttft is not None
    assert (ttft.p50, ttft.p90, ttft.p95, ttft.p99, ttft.mean) == pytest.approx(
        (0.3, 0.46, 0.48, 0.496, 0.3)
    )


def test_tpot_excludes_the_first_token_and_itl_pools_every_gap():
    # Request 0: 11 tokens, E2E - TTFT = 1.0 s -> TPOT 0.1. Request 1: gaps 0.2, 0.4 ->
    # TPOT (0.6 / 2) = 0.3. ITL pools the 12 gaps: ten of 0.1, then 0.2 and 0.4.
    summary = summarize(
        samples(
            [
                streamed(0, ttft_s=0.2, gaps=[0.1] * 10),
                streamed(1, ttft_s=0.2, gaps=[0.2, 0.4]),
            ]
        )
    )

    assert summary.tpot_s is not None and summary.itl_s is not None
    assert summary.tpot_s.mean == pytest.approx(0.2)
    assert summary.tpot_s.p50 == pytest.approx(0.2)
    assert summary.itl_s.mean == pytest.approx((1.0 + 0.6) / 12)
    assert summary.itl_s.p50 == pytest.approx(0.1)
    # rank 0.99 * 11 = 10.89 lies between 0.2 and 0.4
    assert summary.itl_s.p99 == pytest.approx(0.2 + 0.89 * 0.2)


def test_tpot_of_one_token_outputs_is_missing_not_zero():
    summary = summarize(
        samples([streamed(0, ttft_s=0.1, gaps=[]), streamed(1, ttft_s=0.2, gaps=[])])
    )

    assert summary.tpot_s is None
    assert summary.itl_s is None
    assert summary.ttft_s is not None
    assert summary.as_dict()["tpot_s"] is None
    assert metric_value(summary, "tpot_s.p99") is None


def test_itl_is_missing_when_the_tool_recorded_no_gaps():
    summary = summarize(samples([record(0, itl_s=None), record(1, itl_s=None)]))

    assert summary.itl_s is None
    assert metric_value(summary, "itl_s.p50") is None
    assert metric_value(summary, "ttft_s.p50") == pytest.approx(0.1)


def test_goodput_counts_only_requests_meeting_every_target_and_failures_never_meet():
    # Duration 2 s; targets TTFT 250 ms and TPOT 50 ms.
    #   0: TTFT 0.10, TPOT 0.04          -> meets
    #   1: TTFT 0.30                     -> misses TTFT
    #   2: TTFT 0.20, TPOT 0.06          -> misses TPOT
    #   3: failed                        -> never meets
    #   4: TTFT 0.15, one token (no TPOT)-> meets (nothing to miss)
    # attainment 2 / 5 = 0.4; goodput 2 / 2 s = 1.0 req/s; throughput 4 / 2 s = 2.0 req/s.
    records = [
        streamed(0, ttft_s=0.10, gaps=[0.04, 0.04]),
        streamed(1, ttft_s=0.30, gaps=[0.04, 0.04]),
        streamed(2, ttft_s=0.20, gaps=[0.06, 0.06]),
        failed(3),
        streamed(4, ttft_s=0.15, gaps=[]),
    ]
    slo = SLO(ttft_ms=250, tpot_ms=50, attainment=0.9)

    summary = summarize(samples(records), slo=slo)

    assert summary.slo_attainment == pytest.approx(0.4)
    assert summary.goodput_rps == pytest.approx(1.0)
    assert summary.request_throughput_rps == pytest.approx(2.0)
    assert (summary.requests, summary.completed, summary.errors) == (5, 4, 1)


def test_an_e2e_target_is_judged_on_the_whole_request():
    records = [streamed(0, ttft_s=0.1, gaps=[0.1, 0.1]), streamed(1, ttft_s=0.1, gaps=[0.3])]

    summary = summarize(samples(records), slo=SLO(e2e_ms=350))

    assert summary.slo_attainment == pytest.approx(0.5)


def test_attainment_is_missing_when_no_request_measured_the_targeted_metric():
    unstreamed = [record(0, itl_s=None, ttft_s=None), record(1, itl_s=None, ttft_s=None)]

    summary = summarize(samples(unstreamed), slo=SLO(ttft_ms=100))

    assert summary.slo_attainment is None
    assert summary.goodput_rps is None


def test_no_slo_means_no_attainment_rather_than_zero():
    summary = summarize(samples([record(0)]))

    assert summary.slo_attainment is None
    assert summary.goodput_rps is None


def test_errors_and_timeouts_are_counted_apart_and_excluded_from_latencies():
    records = [record(0), failed(1), failed(2, error="timeout"), failed(3, error="timeout")]

    summary = summarize(samples(records))

    assert (summary.errors, summary.timeouts, summary.completed) == (3, 2, 1)
    assert summary.e2e_s is not None and summary.e2e_s.p99 == pytest.approx(0.2)


def test_token_rates_are_per_second_and_per_gpu_only_when_the_gpu_count_is_known():
    # Completed: (100 in, 3 out) + (100 in, 3 out) over 2 s -> 3 out tok/s, 103 total tok/s.
    # The failed request's tokens do not count.
    records = [record(0), record(1), failed(2)]

    with_gpus = summarize(samples(records), gpu_count=2)
    without = summarize(samples(records))

    assert with_gpus.output_tokens_per_s == pytest.approx(3.0)
    assert with_gpus.total_tokens_per_s == pytest.approx(103.0)
    assert with_gpus.output_tokens_per_s_per_gpu == pytest.approx(1.5)
    assert with_gpus.total_tokens_per_s_per_gpu == pytest.approx(51.5)
    assert without.output_tokens_per_s_per_gpu is None
    # per user: 1 / TPOT = 1 / 0.05 s
    assert with_gpus.output_tokens_per_s_per_user == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("achieved_input", "flagged"), [(94, True), (96, False), (105, False), (106, True)]
)
def test_achieved_lengths_are_flagged_when_more_than_five_percent_off(achieved_input, flagged):
    summary = summarize(
        samples([record(0, input_tokens=achieved_input)]), requested_isl=100, requested_osl=3
    )

    assert summary.achieved_isl == achieved_input
    assert summary.isl_off_target is flagged
    assert summary.osl_off_target is False


def test_lengths_are_not_judged_without_a_requested_length():
    summary = summarize(samples([record(0)]))

    assert summary.isl_off_target is None and summary.osl_off_target is None


def test_max_rate_from_summaries_uses_the_offered_rate_of_each_load_point():
    slo = SLO(ttft_ms=150, attainment=0.9, percentile=90)
    # At 1 rps every TTFT (0.1 s) passes; at 3 rps half are 0.2 s: attainment 1.0 then 0.5,
    # so the SLO margins are 1.0 - 0.9 = 0.1 and 0.5 - 0.9 = -0.4.
    fast = samples([record(0), record(1)], load_point={"rate_rps": 1.0})
    slow = samples([record(0), record(1, ttft_s=0.2, e2e_s=0.3)], load_point={"rate_rps": 3.0})
    summaries = [summarize(fast, slo=slo), summarize(slow, slo=slo)]

    # 1 + 0.1 / (0.1 + 0.4) * 2 = 1.4
    assert max_rate_from_summaries(summaries).rate_rps == pytest.approx(1.4)


def test_bootstrap_intervals_are_reproducible_and_bracket_the_mean():
    runs = [10.0, 10.4, 9.8, 10.1, 10.2]

    first = bootstrap_interval(runs, seed=7)
    again = bootstrap_interval(runs, seed=7)

    assert first == again
    assert first is not None
    assert first.estimate == pytest.approx(10.1)
    assert min(runs) <= first.low <= first.estimate <= first.high <= max(runs)
    assert first.runs == 5


def test_bootstrap_of_identical_runs_has_no_width_and_missing_runs_are_dropped():
    interval = bootstrap_interval([5.0, None, 5.0, float("nan"), 5.0])

    assert interval == Interval(estimate=5.0, low=5.0, high=5.0, runs=3)


def test_one_run_gives_no_interval_and_so_no_verdict():
    assert bootstrap_interval([3.0, None]) is None
    assert compare(None, Interval(1.0, 0.9, 1.1, 3), higher_is_better=True) == "missing"


def test_one_candidate_is_better_only_when_the_intervals_do_not_overlap():
    high = bootstrap_interval([10.0, 10.5, 11.0])
    low = bootstrap_interval([5.0, 5.5, 6.0])
    close = bootstrap_interval([9.0, 10.6, 11.5])

    assert compare(high, low, higher_is_better=True) == "a_better"
    assert compare(high, low, higher_is_better=False) == "b_better"
    assert compare(low, high, higher_is_better=True) == "b_better"
    assert compare(high, close, higher_is_better=True) == "indistinguishable"


def test_metric_value_refuses_unknown_names():
    summary = summarize(samples([record(0)]))

    with pytest.raises(ValueError, match="unknown name"):
        metric_value(summary, "ttft_s.p42")
    with pytest.raises(ValueError, match="not a number"):
        metric_value(summary, "load_point")
