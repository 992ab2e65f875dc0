"""Steady state: capacity and max rate come from stationary runs, never from a burst."""

from dataclasses import replace

import pytest
from stackselect_domain.slo import SLO
from stackselect_domain.workload import FixedLength, OpenLoopArrivals, Workload, generate_requests

from apps.selections.estimator import (
    AcceleratorSpec,
    ModelArch,
    Parallelism,
    build_step_cost,
    estimate_memory,
)
from apps.selections.simulator import FINISHED, EngineConfig, RequestOutcome, simulate
from apps.selections.steady_state import (
    CLIENT_TURNS,
    MIN_STEADY_REQUESTS,
    capacity_run,
    micro_batch_config,
    saturating_clients,
    stationarity,
    steady_max_rate,
    steady_run,
)

LLAMA_8B = ModelArch(8.03, 8.03, 32, 4096, 32, 8, 128)
H100 = AcceleratorSpec("h100-sxm", 80, 3.35, 989, 1979, None, 450)
WORKLOAD = Workload(FixedLength(1024), FixedLength(256), OpenLoopArrivals("poisson", 1.0))
SLO_CHAT = SLO(ttft_ms=1000, tpot_ms=60, percentile=99, attainment=0.95)


def _replica(tp: int = 1, pp: int = 1):
    layout = Parallelism(tp=tp, pp=pp)
    memory = estimate_memory(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=layout, isl=1024, osl=256
    )
    cost = build_step_cost(
        model=LLAMA_8B,
        accel=H100,
        precision="bf16",
        parallelism=layout,
        decode_batch=64,
        context=1152,
    )
    return cost, EngineConfig(8192, 1024, memory.kv_capacity_tokens)


def test_the_max_rate_moves_by_less_than_five_percent_when_the_run_is_four_times_longer():
    cost, config = _replica(tp=2)
    shared = {"seed": 7, "step_time": cost, "config": config, "slo": SLO_CHAT, "tolerance": 0.02}

    short = steady_max_rate(WORKLOAD, n=MIN_STEADY_REQUESTS, **shared)
    long = steady_max_rate(WORKLOAD, n=4 * MIN_STEADY_REQUESTS, **shared)

    assert short.rate_rps > 0 and short.stationary and long.stationary
    assert abs(long.rate_rps - short.rate_rps) / long.rate_rps < 0.05
    assert short.rate_rps <= short.capacity_rps


def test_a_burst_sized_search_is_refused():
    cost, config = _replica()

    with pytest.raises(ValueError, match="at least 1,000 requests"):
        steady_max_rate(WORKLOAD, n=150, seed=7, step_time=cost, config=config, slo=SLO_CHAT)


def test_a_burst_is_marked_not_stationary_even_when_long():
    cost, config = _replica()
    burst = [replace(r, arrival_s=0.0) for r in generate_requests(WORKLOAD, 1500, 7)]

    found = stationarity(simulate(burst, cost, config).rows)

    assert not found.stationary
    assert "burst" in found.reason


def test_a_short_run_is_marked_not_stationary():
    cost, config = _replica()
    rows = simulate(generate_requests(WORKLOAD, 150, 7, rate_rps=5), cost, config).rows

    found = stationarity(rows)

    assert not found.stationary and "at least 1,000" in found.reason


def test_an_open_loop_rate_far_above_capacity_grows_its_queue_and_is_not_stationary():
    cost, config = _replica()
    capacity = steady_run(
        WORKLOAD, n=1200, seed=7, step_time=cost, config=config, slo=None, concurrency=256
    ).summary.throughput_rps

    below = steady_run(
        WORKLOAD,
        n=1200,
        seed=7,
        step_time=cost,
        config=config,
        slo=SLO_CHAT,
        rate_rps=0.5 * capacity,
    )
    above = steady_run(
        WORKLOAD, n=1200, seed=7, step_time=cost, config=config, slo=SLO_CHAT, rate_rps=3 * capacity
    )

    assert below.stationarity.stationary and below.passed
    assert not above.stationarity.stationary and not above.passed
    assert "not stationary" in above.stationarity.reason
    assert "more arrives than the replica serves" in above.stationarity.reason
    assert "burst" not in above.stationarity.reason


def _rows(time_in_system_s):
    """1,000 requests arriving every 0.1 s, each in the system for time_in_system_s(arrival)."""
    rows = []
    for index in range(1000):
        arrival = index * 0.1
        e2e = time_in_system_s(arrival)
        first_token, finish = arrival + 1, arrival + e2e
        rows.append(
            RequestOutcome(
                index, FINISHED, 100, 100, arrival, first_token, finish, 1e3, 1.0, e2e * 1e3, 0
            )
        )
    return rows


def test_a_short_run_served_slower_than_it_arrives_is_named_an_overload_not_a_burst():
    # the time in the system grows by 0.3 s per second of arrivals, too slowly to pass the
    # growth limit within the run, but a queue is building
    found = stationarity(_rows(lambda arrival: 100 + 0.3 * arrival))

    assert not found.stationary
    assert "more arrives than the replica serves" in found.reason
    growth = "10 req/s arrived, and the time in the system grew about 0.3 s per second"
    assert growth in found.reason
    assert "burst" not in found.reason


def test_a_short_run_that_keeps_up_is_called_too_short_not_a_burst_or_an_overload():
    found = stationarity(_rows(lambda arrival: 50.0))

    assert not found.stationary
    assert found.reason.endswith("too few requests for how long each takes")


def test_a_closed_loop_run_settles_and_its_throughput_is_judged_after_the_warm_up():
    cost, config = _replica()

    run = steady_run(
        WORKLOAD, n=1200, seed=7, step_time=cost, config=config, slo=SLO_CHAT, concurrency=32
    )

    assert run.concurrency == 32 and run.stationarity.stationary
    assert run.summary.requests == 1200 - 240  # the first 20% by arrival are the warm-up


def test_a_closed_loop_of_more_clients_than_the_minimum_run_lets_each_send_several_and_settles():
    cost, config = _replica()

    run = steady_run(
        WORKLOAD,
        n=MIN_STEADY_REQUESTS,
        seed=7,
        step_time=cost,
        config=config,
        slo=None,
        concurrency=400,
    )

    # 1,000 requests from 400 clients would be two and a half waves of one burst
    assert run.requests == CLIENT_TURNS * 400 > MIN_STEADY_REQUESTS
    assert run.stationarity.stationary, run.stationarity.reason


def test_both_a_rate_and_a_concurrency_are_refused():
    cost, config = _replica()

    with pytest.raises(ValueError, match="not both"):
        steady_run(
            WORKLOAD,
            n=1000,
            seed=7,
            step_time=cost,
            config=config,
            slo=None,
            rate_rps=1.0,
            concurrency=4,
        )


def test_the_max_rate_is_zero_when_even_an_idle_replica_misses_the_slo():
    cost, config = _replica()

    found = steady_max_rate(
        WORKLOAD, n=1000, seed=7, step_time=cost, config=config, slo=SLO(ttft_ms=1)
    )

    assert found.rate_rps == 0 and found.run is None and not found.stationary


def test_a_micro_batch_scheduler_gets_its_share_of_the_kv_cache_and_the_sequence_limit():
    replica = EngineConfig(8192, 1024, 100_001)

    assert micro_batch_config(replica, 1) is replica
    share = micro_batch_config(replica, 4)
    assert (share.kv_capacity_tokens, share.max_num_seqs) == (25_000, 256)
    assert share.max_num_batched_tokens == replica.max_num_batched_tokens  # per step, as before
    with pytest.raises(ValueError, match="stages"):
        micro_batch_config(replica, 0)


def test_a_two_stage_pipelines_micro_batches_together_outrun_one_batch_through_both_stages():
    cost, replica = _replica(pp=2)

    one_batch = capacity_run(WORKLOAD, seed=3, step_time=cost, config=replica)
    micro = capacity_run(WORKLOAD, seed=3, step_time=cost, config=micro_batch_config(replica, 2))

    # Each micro-batch is smaller, so its steps are no slower; two of them in flight carry more
    # than the one batch that leaves a stage idle while the other works.
    assert 2 * micro.summary.throughput_rps > 1.2 * one_batch.summary.throughput_rps


def test_a_prefix_heavy_load_saturates_with_as_many_clients_as_the_shared_cache_holds():
    # 100 copies of a 4,352-token context fit; nine in ten requests share a 3,584-token prefix,
    # which is held once, so each needs about 1,126 tokens of its own and 383 fit.
    workload = replace(
        WORKLOAD,
        input_length=FixedLength(4096),
        prefix_share=0.9,
        prefix_tokens=3584,
    )
    cost, _ = _replica()
    config = EngineConfig(8192, 1024, 100 * 4352)
    assert saturating_clients(workload, replace(config, prefix_caching=False)) == 100
    assert saturating_clients(workload, config) == 383
    shared = capacity_run(workload, seed=1, step_time=cost, config=config, n=1200)
    copies = capacity_run(workload, seed=1, step_time=cost, config=config, n=1200, clients=100)
    assert shared.concurrency == 383
    # the simulator holds them too: a cache of copies would only queue the other 283
    assert shared.summary.throughput_rps > 1.15 * copies.summary.throughput_rps
