"""Workload parsing, fixed-seed request generation and trace summaries."""

import math

import numpy as np
import pytest
from stackselect_domain.workload import (
    MAX_TOKENS,
    ClosedLoop,
    Workload,
    generate_requests,
    parse_arrival,
    parse_length,
    trace_summary,
)


def workload(arrival=None, **extra):
    return Workload.from_dict(
        {
            "isl": {"kind": "lognormal", "median": 800, "sigma": 0.6, "min": 16, "max": 4096},
            "osl": {"kind": "normal", "mean": 200, "std": 50, "min": 8, "max": 512},
            "arrival": arrival or {"process": "poisson", "rate_rps": 4},
            **extra,
        }
    )


def gaps_of(requests):
    return np.diff([r.arrival_s for r in requests])


def test_the_same_seed_gives_the_same_requests():
    assert generate_requests(workload(), 200, 11) == generate_requests(workload(), 200, 11)
    assert generate_requests(workload(), 200, 11) != generate_requests(workload(), 200, 12)


def test_a_rate_change_only_rescales_arrival_times():
    slow = generate_requests(workload(), 300, 5, rate_rps=2)
    fast = generate_requests(workload(), 300, 5, rate_rps=8)
    assert [r.input_tokens for r in slow] == [r.input_tokens for r in fast]
    np.testing.assert_allclose([r.arrival_s / 4 for r in slow], [r.arrival_s for r in fast])


def test_poisson_arrivals_keep_the_requested_mean_rate():
    requests = generate_requests(workload({"process": "poisson", "rate_rps": 5}), 20_000, 1)
    gaps = gaps_of(requests)
    assert requests[0].arrival_s == 0
    assert gaps.mean() == pytest.approx(1 / 5, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)


def test_gamma_burstiness_below_one_makes_gaps_more_variable_at_the_same_rate():
    arrival = {"process": "gamma", "rate_rps": 5, "burstiness": 0.25}
    gaps = gaps_of(generate_requests(workload(arrival), 20_000, 1))
    assert gaps.mean() == pytest.approx(1 / 5, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(0.25), rel=0.1)


def test_constant_arrivals_are_evenly_spaced():
    gaps = gaps_of(generate_requests(workload({"process": "constant", "rate_rps": 4}), 50, 1))
    np.testing.assert_allclose(gaps, 0.25)


def test_a_trace_replays_its_gaps_and_compresses_for_a_higher_rate():
    arrival = {"process": "trace", "timestamps": [10.0, 11.0, 13.0, 13.5]}
    replay = generate_requests(workload(arrival), 7, 1)
    assert [r.arrival_s for r in replay] == pytest.approx([0, 1, 3, 3.5, 4.5, 6.5, 7.0])
    doubled = generate_requests(workload(arrival), 4, 1, rate_rps=2 * 3 / 3.5)
    assert [r.arrival_s for r in doubled] == pytest.approx([0, 0.5, 1.5, 1.75])


def test_a_closed_loop_workload_has_no_rate_and_leaves_arrivals_to_the_simulator():
    closed = workload({"concurrency": 8})
    assert closed.arrival == ClosedLoop(8)
    assert {r.arrival_s for r in generate_requests(closed, 20, 1)} == {0.0}
    with pytest.raises(ValueError, match="rate_rps"):
        generate_requests(closed, 20, 1, rate_rps=3)


def test_shared_prefix_requests_are_at_least_as_long_as_their_prefix():
    requests = generate_requests(
        workload(prefix_share=0.3, prefix_tokens=1000, prefix_groups=3), 5000, 2
    )
    shared = [r for r in requests if r.prefix_group is not None]
    assert len(shared) / len(requests) == pytest.approx(0.3, abs=0.03)
    assert all(r.input_tokens >= r.prefix_tokens == 1000 for r in shared)
    assert {r.prefix_group for r in shared} == {0, 1, 2}
    assert all(r.prefix_tokens == 0 for r in requests if r.prefix_group is None)


def test_lengths_stay_within_their_bounds_and_lognormal_centres_on_its_median():
    rng = np.random.default_rng(0)
    lognormal = parse_length({"kind": "lognormal", "median": 500, "sigma": 1.0, "max": 3000})
    samples = lognormal.sample(rng, 20_000)
    assert samples.max() <= 3000
    assert samples.min() >= 1
    assert np.median(samples) == pytest.approx(500, rel=0.05)
    normal = parse_length({"kind": "normal", "mean": 100, "std": 80, "min": 20, "max": 150})
    samples = normal.sample(rng, 5000)
    assert samples.min() == 20
    assert samples.max() == 150


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "lognormal", "median": 1000, "sigma": 1.0, "max": 4000},  # tail cut at 4,000
        {"kind": "lognormal", "median": 6000, "sigma": 0.6, "min": 500, "max": 24000},
        {"kind": "lognormal", "median": 1024, "sigma": 0.6},
        {"kind": "normal", "mean": 100, "std": 200},  # half of it clipped up to one token
        {"kind": "normal", "mean": 500, "std": 100, "min": 300, "max": 600},
    ],
)
def test_a_lengths_mean_is_that_of_the_clipped_lengths_the_requests_get(data):
    length = parse_length(data)

    drawn = length.sample(np.random.default_rng(3), 400_000)

    assert length.mean() == pytest.approx(float(drawn.mean()), rel=0.01)


def test_empirical_lengths_only_draw_observed_values():
    empirical = parse_length({"kind": "empirical", "values": [10, 20, 30]})
    assert set(empirical.sample(np.random.default_rng(0), 500)) == {10, 20, 30}
    assert empirical.mean() == 20


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"kind": "normal", "mean": 100}, "isl.std"),
        ({"kind": "fixed", "value": 0}, "isl.value"),
        ({"kind": "fixed", "value": "512"}, "isl.value"),
        ({"kind": "uniform"}, "isl.kind"),
        ({"kind": "empirical", "values": []}, "isl.values"),
        ({"kind": "normal", "mean": 100, "std": 5, "min": 50, "max": 10}, "isl.max"),
        # wider than any length histogram: its mean would overflow
        ({"kind": "lognormal", "median": 500, "sigma": 50}, "isl.sigma"),
    ],
)
def test_bad_length_fields_are_named_in_the_error(data, field):
    with pytest.raises(ValueError, match=field):
        parse_length(data, "isl")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"process": "poisson", "rate_rps": 0}, "arrival.rate_rps"),
        ({"process": "gamma", "rate_rps": 2}, "arrival.burstiness"),
        ({"process": "trace", "timestamps": [3, 1]}, "arrival.timestamps"),
        ({"process": "wave"}, "arrival.process"),
        ({"concurrency": 2.5}, "arrival.concurrency"),
    ],
)
def test_bad_arrival_fields_are_named_in_the_error(data, field):
    with pytest.raises(ValueError, match=field):
        parse_arrival(data)


def test_a_workload_without_lengths_or_with_an_impossible_prefix_is_rejected():
    with pytest.raises(ValueError, match="osl"):
        Workload.from_dict({"isl": {"kind": "fixed", "value": 5}, "arrival": {"concurrency": 1}})
    with pytest.raises(ValueError, match="prefix_tokens"):
        workload(prefix_share=0.5)
    with pytest.raises(ValueError, match="prefix_share"):
        workload(prefix_share=1.5, prefix_tokens=10)


def test_a_trace_summary_derives_rate_burstiness_lengths_and_prefix_share():
    rows = [
        {"timestamp": 3.5, "input_tokens": 40, "output_tokens": 7, "prefix_id": "b"},
        (0.0, 10, 5, "a"),
        (1.0, 20, 5, "a"),
        (3.0, 30, 6),
    ]
    summary = trace_summary(rows)
    gaps = np.array([1.0, 2.0, 0.5])
    assert summary.requests == 4
    assert summary.mean_rate_rps == pytest.approx(3 / 3.5)
    assert summary.burstiness_cv == pytest.approx(gaps.std() / gaps.mean())
    assert summary.gamma_shape == pytest.approx(1 / summary.burstiness_cv**2)
    assert summary.isl_mean == 25
    assert summary.osl_mean == 5.75
    assert summary.prefix_share == 0.5  # two rows share "a"; "b" occurs once
    replay = generate_requests(summary.to_workload(), 4, 0)
    assert [r.arrival_s for r in replay] == pytest.approx([0, 1, 3, 3.5])
    assert {r.input_tokens for r in replay} <= {10, 20, 30, 40}


def test_a_trace_row_with_a_bad_field_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"rows\[1\].output_tokens"):
        trace_summary([(0, 10, 5), (1, 10, 0)])
    with pytest.raises(ValueError, match="at least two"):
        trace_summary([(0, 10, 5)])


def test_token_counts_past_the_cap_are_refused_in_a_trace_row_and_a_length_document():
    with pytest.raises(ValueError, match=r"rows\[1\].input_tokens: must be <= 10000000"):
        trace_summary([(0, 10, 5), (1, MAX_TOKENS + 1, 5)])
    with pytest.raises(ValueError, match=r"isl.values: lengths must be between 1 and 10000000"):
        parse_length({"kind": "replay", "values": [10, MAX_TOKENS + 1]}, "isl")
    with pytest.raises(ValueError, match=r"osl.max: must be <= 10000000"):
        parse_length({"kind": "normal", "mean": 100, "std": 10, "max": 2e7}, "osl")
    assert parse_length({"kind": "fixed", "value": MAX_TOKENS}, "isl").mean() == MAX_TOKENS


REPLAY = {
    "isl": {"kind": "replay", "values": [10, 20, 30, 40]},
    "osl": {"kind": "replay", "values": [1, 2, 3, 4]},
    "arrival": {"process": "trace", "timestamps": [10.0, 11.0, 13.0, 13.5]},
}


def test_a_replayed_trace_pairs_each_request_with_its_own_row_and_cycles_from_row_one():
    requests = generate_requests(Workload.from_dict(REPLAY), 7, 3)

    # Rows 0..3, then 1..3 again: the repeat starts with the trace's first gap (1 s after row 0).
    assert [r.arrival_s for r in requests] == pytest.approx([0, 1, 3, 3.5, 4.5, 6.5, 7.0])
    assert [r.input_tokens for r in requests] == [10, 20, 30, 40, 20, 30, 40]
    assert [r.output_tokens for r in requests] == [1, 2, 3, 4, 2, 3, 4]


def test_a_replay_speedup_raises_the_nominal_rate_and_shrinks_the_gaps():
    fast = {**REPLAY, "arrival": {**REPLAY["arrival"], "speedup": 2}}

    workload_ = Workload.from_dict(fast)

    assert workload_.arrival.rate_rps == pytest.approx(2 * 3 / 3.5)
    replay = generate_requests(workload_, 4, 0)
    assert [r.arrival_s for r in replay] == pytest.approx([0, 0.5, 1.5, 1.75])


def test_a_unit_rate_replay_keeps_the_traces_order_and_lengths_for_a_benchmark_schedule():
    schedule = generate_requests(Workload.from_dict(REPLAY), 4, 0, rate_rps=1.0)

    # Mean gap 3.5 / 3 s scaled to 1 s: each gap times 3 / 3.5.
    assert [r.arrival_s for r in schedule] == pytest.approx([0, 3 / 3.5, 9 / 3.5, 10.5 / 3.5])
    assert [r.input_tokens for r in schedule] == [10, 20, 30, 40]


def test_a_replay_needs_one_length_per_timestamp_and_a_positive_speedup():
    with pytest.raises(ValueError, match=r"isl\.values"):
        Workload.from_dict({**REPLAY, "isl": {"kind": "replay", "values": [10, 20]}})
    with pytest.raises(ValueError, match=r"arrival\.speedup"):
        parse_arrival({**REPLAY["arrival"], "speedup": 0})


def test_a_trace_summary_gives_the_replay_document_of_its_rows():
    summary = trace_summary([(5.0, 50, 9), (0.0, 10, 5), (2.0, 30, 7)])

    document = summary.replay_document(speedup=1.5)

    assert document["isl"] == {"kind": "replay", "values": [10, 30, 50]}
    assert document["osl"]["values"] == [5, 7, 9]
    assert document["arrival"] == {"process": "trace", "timestamps": [0, 2, 5], "speedup": 1.5}
