"""Continuous-batching simulator: latency at low load, queue growth past saturation, scheduling."""

from dataclasses import replace

import numpy as np
import pytest
from stackselect_domain.stepcost import StepCost
from stackselect_domain.workload import Request, Workload, generate_requests

from apps.selections import simulator
from apps.selections.simulator import (
    FINISHED,
    REJECTED,
    SLO,
    UNFINISHED,
    EngineConfig,
    SimulationTooLong,
    simulate,
)

# Roughly an 8B dense model in 16-bit on one H100-class GPU, in round numbers.
COST = StepCost(
    weight_bytes=16e9,
    kv_bytes_per_token=131_072,
    flops_per_token=16e9,
    attn_flops_per_token_ctx=0.5e6,
    hbm_bytes_per_s=2.4e12,
    flops_per_s=5e14,
    comm_s_per_token=0.0,
    step_overhead_s=0.002,
)
CONFIG = EngineConfig(max_num_batched_tokens=2048, max_num_seqs=128, kv_capacity_tokens=400_000)


def fixed_workload(isl, osl, arrival, **extra):
    return Workload.from_dict(
        {
            "isl": {"kind": "fixed", "value": isl},
            "osl": {"kind": "fixed", "value": osl},
            "arrival": arrival,
            **extra,
        }
    )


def prefill_seconds(tokens, start=0):
    """One step that prefills tokens start+1..start+tokens of a single sequence."""
    end = start + tokens
    return COST.step_seconds(tokens, end, (end * (end + 1) - start * (start + 1)) / 2)


def mean_ttft(rows):
    return float(np.mean([row.ttft_ms for row in rows]))


def test_at_low_load_ttft_is_the_prefill_time():
    requests = generate_requests(
        fixed_workload(512, 32, {"process": "constant", "rate_rps": 0.5}), 20, 0
    )
    rows = simulate(requests, COST, CONFIG).rows
    assert [row.ttft_ms for row in rows] == pytest.approx([prefill_seconds(512) * 1e3] * 20)


def test_at_low_poisson_load_median_ttft_approaches_the_prefill_time():
    workload = fixed_workload(1024, 64, {"process": "poisson", "rate_rps": 0.5})
    summary = simulate(generate_requests(workload, 300, 3), COST, CONFIG).summary
    assert summary.ttft_ms.p50 == pytest.approx(prefill_seconds(1024) * 1e3, rel=0.05)


def test_a_lone_request_decodes_one_token_per_step_at_its_growing_context():
    request = Request(index=0, arrival_s=0.0, input_tokens=512, output_tokens=5)
    row = simulate([request], COST, CONFIG).rows[0]
    decode = sum(COST.step_seconds(1, 512 + i, 512 + i) for i in range(1, 5))
    assert row.ttft_ms == pytest.approx(prefill_seconds(512) * 1e3)
    assert row.e2e_ms - row.ttft_ms == pytest.approx(decode * 1e3)
    assert row.tpot_ms == pytest.approx(decode * 1e3 / 4)


def test_a_long_prompt_is_prefilled_in_budget_sized_chunks():
    request = Request(index=0, arrival_s=0.0, input_tokens=5000, output_tokens=2)
    row = simulate([request], COST, CONFIG).rows[0]
    chunks = prefill_seconds(2048) + prefill_seconds(2048, 2048) + prefill_seconds(904, 4096)
    assert row.ttft_ms == pytest.approx(chunks * 1e3)


def test_without_chunked_prefill_a_prompt_over_the_budget_is_rejected():
    config = EngineConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=128,
        kv_capacity_tokens=400_000,
        chunked_prefill=False,
    )
    requests = [
        Request(index=0, arrival_s=0.0, input_tokens=5000, output_tokens=2),
        Request(index=1, arrival_s=0.0, input_tokens=1000, output_tokens=2),
    ]
    rows = simulate(requests, COST, config).rows
    assert [row.status for row in rows] == [REJECTED, FINISHED]


def test_an_engine_that_counts_only_the_prompt_serves_a_long_output_unchunked():
    # TensorRT-LLM's rule: a 2,000-token prompt fits a 2,048-token budget whatever the output;
    # vLLM's counts the 100 output tokens too and refuses it.
    request = Request(index=0, arrival_s=0.0, input_tokens=2000, output_tokens=100)
    unchunked = {"max_num_batched_tokens": 2048, "max_num_seqs": 8, "chunked_prefill": False}
    unchunked["kv_capacity_tokens"] = 400_000
    prompt_only = EngineConfig(**unchunked, unchunked_prompt_only=True)

    served = simulate([request], COST, prompt_only).rows[0]
    refused = simulate([request], COST, EngineConfig(**unchunked)).rows[0]

    assert (served.status, refused.status) == (FINISHED, REJECTED)
    over = Request(index=1, arrival_s=0.0, input_tokens=2049, output_tokens=1)
    assert simulate([over], COST, prompt_only).rows[0].status == REJECTED


def test_a_request_larger_than_the_kv_cache_is_rejected():
    config = EngineConfig(max_num_batched_tokens=2048, max_num_seqs=8, kv_capacity_tokens=1024)
    request = Request(index=0, arrival_s=0.0, input_tokens=1000, output_tokens=100)
    row = simulate([request], COST, config).rows[0]
    assert row.status == REJECTED
    assert row.ttft_ms is None


def test_past_saturation_queues_and_ttft_grow_without_bound():
    workload = fixed_workload(512, 128, {"process": "poisson", "rate_rps": 200})

    def last_and_first_decile(n):
        rows = simulate(generate_requests(workload, n, 1), COST, CONFIG).rows
        tenth = n // 10
        return mean_ttft(rows[-tenth:]), mean_ttft(rows[:tenth])

    last_500, first_500 = last_and_first_decile(500)
    last_1000, _ = last_and_first_decile(1000)
    assert last_500 > 10 * first_500
    assert last_1000 > 1.5 * last_500


def test_the_same_seed_gives_an_identical_simulation():
    workload = fixed_workload(
        512,
        128,
        {"process": "gamma", "rate_rps": 30, "burstiness": 0.5},
        prefix_share=0.5,
        prefix_tokens=256,
    )
    first = simulate(generate_requests(workload, 400, 9), COST, CONFIG, slo=SLO(ttft_ms=500))
    second = simulate(generate_requests(workload, 400, 9), COST, CONFIG, slo=SLO(ttft_ms=500))
    assert first.as_dict() == second.as_dict()


def test_kv_pressure_preempts_the_newest_sequence_and_recomputes_it():
    # Four 16-token blocks: each request alone fits (56 tokens), both together do not.
    config = EngineConfig(max_num_batched_tokens=64, max_num_seqs=4, kv_capacity_tokens=64)
    requests = [
        Request(index=0, arrival_s=0.0, input_tokens=16, output_tokens=40),
        Request(index=1, arrival_s=0.0, input_tokens=16, output_tokens=40),
    ]
    result = simulate(requests, COST, config)
    older, newer = result.rows
    assert (older.status, newer.status) == (FINISHED, FINISHED)
    assert older.preemptions == 0
    assert newer.preemptions >= 1
    assert result.summary.preemptions == newer.preemptions
    assert newer.finish_s > older.finish_s


def test_a_sequence_takes_a_new_block_exactly_when_its_context_outgrows_the_last():
    config = EngineConfig(max_num_batched_tokens=64, max_num_seqs=4, kv_capacity_tokens=64)

    def preemptions(output_tokens):
        requests = [
            Request(index=i, arrival_s=0.0, input_tokens=16, output_tokens=output_tokens)
            for i in range(2)
        ]
        return simulate(requests, COST, config).summary.preemptions

    # 16 prompt + 16 computed outputs = 32 tokens = 2 blocks each: both fit in 4 blocks.
    assert preemptions(17) == 0
    # One more output token makes 33 tokens, a third block each: 6 blocks do not fit.
    assert preemptions(18) >= 1


def test_ample_kv_means_no_preemption():
    workload = fixed_workload(512, 128, {"process": "poisson", "rate_rps": 20})
    summary = simulate(generate_requests(workload, 300, 1), COST, CONFIG).summary
    assert summary.preemptions == 0
    assert summary.finished == 300


def test_a_seen_prefix_is_reused_in_whole_blocks():
    workload = fixed_workload(
        600, 4, {"process": "constant", "rate_rps": 1}, prefix_share=1.0, prefix_tokens=100
    )
    requests = generate_requests(workload, 10, 0)
    cached = simulate(requests, COST, CONFIG)
    # The first request computes the prefix; the other nine reuse 6 whole 16-token blocks.
    assert cached.summary.prefix_hit_tokens == 9 * 96
    assert cached.rows[1].ttft_ms == pytest.approx(prefill_seconds(600 - 96, 96) * 1e3)
    uncached_config = EngineConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=128,
        kv_capacity_tokens=400_000,
        prefix_caching=False,
    )
    uncached = simulate(requests, COST, uncached_config)
    assert uncached.summary.prefix_hit_tokens == 0
    assert mean_ttft(cached.rows[1:]) < mean_ttft(uncached.rows[1:])


def _one_prefix_group(
    arrivals: list[float], input_tokens: int, output_tokens: int, *, prefix_tokens: int
) -> list[Request]:
    """Requests of equal lengths arriving at `arrivals`, all opening with one shared prefix."""
    return [
        Request(
            index=i,
            arrival_s=arrival,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            prefix_group=0,
            prefix_tokens=prefix_tokens,
        )
        for i, arrival in enumerate(arrivals)
    ]


def test_a_cached_prefix_is_held_once_for_every_sequence_that_reads_it():
    # 32 blocks of 16 tokens. Each request is a 96-token (6-block) prefix, 16 tokens of its own
    # and 48 outputs: 10 blocks alone, so four copies (40) do not fit, while one shared prefix
    # and four requests' own 4 blocks (22) do.
    config = EngineConfig(max_num_batched_tokens=2048, max_num_seqs=8, kv_capacity_tokens=512)
    requests = _one_prefix_group([0.0, 1e-6, 1e-6, 1e-6], 112, 48, prefix_tokens=96)
    shared = simulate(requests, COST, config).summary
    assert shared.prefix_hit_tokens == 3 * 96
    assert shared.preemptions == 0
    assert shared.finished == 4
    copies = simulate(requests, COST, replace(config, prefix_caching=False)).summary
    assert copies.preemptions >= 1


def test_an_engine_reusing_to_the_token_reads_a_prefix_past_its_last_whole_block():
    # A 100-token prefix in 16-token blocks: six whole blocks (96 tokens) and 4 tokens more.
    config = EngineConfig(max_num_batched_tokens=2048, max_num_seqs=8, kv_capacity_tokens=4096)
    requests = _one_prefix_group([0.0, 1.0, 2.0], 120, 8, prefix_tokens=100)

    whole = simulate(requests, COST, config).summary
    token = simulate(requests, COST, replace(config, partial_prefix_reuse=True)).summary

    assert whole.prefix_hit_tokens == 2 * 96
    assert token.prefix_hit_tokens == 2 * 100
    assert token.finished == whole.finished == 3


def test_a_cached_prefix_no_sequence_reads_is_evicted_when_blocks_run_short():
    # The first request leaves its group's 6-block prefix cached; the second needs 27 of the 32
    # blocks, so the unread prefix is evicted, and the third, of the first's group, misses it.
    config = EngineConfig(max_num_batched_tokens=2048, max_num_seqs=8, kv_capacity_tokens=512)
    grouped = {"input_tokens": 112, "output_tokens": 4, "prefix_group": 0, "prefix_tokens": 96}
    requests = [
        Request(index=0, arrival_s=0.0, **grouped),
        Request(index=1, arrival_s=1.0, input_tokens=420, output_tokens=4),
        Request(index=2, arrival_s=2.0, **grouped),
    ]
    result = simulate(requests, COST, config)
    assert result.summary.finished == 3
    assert result.summary.preemptions == 0
    assert result.summary.prefix_hit_tokens == 0
    without_the_large_one = simulate([requests[0], requests[2]], COST, config)
    assert without_the_large_one.summary.prefix_hit_tokens == 96


def test_tpot_is_decode_time_over_the_tokens_after_the_first():
    workload = fixed_workload(300, 50, {"process": "poisson", "rate_rps": 10})
    for row in simulate(generate_requests(workload, 100, 4), COST, CONFIG).rows:
        assert row.tpot_ms == pytest.approx((row.e2e_ms - row.ttft_ms) / 49)


def test_a_closed_loop_never_has_more_requests_in_flight_than_clients():
    workload = fixed_workload(256, 32, {"concurrency": 4})
    rows = simulate(generate_requests(workload, 60, 0), COST, CONFIG, concurrency=4).rows
    assert all(row.status == FINISHED for row in rows)
    for row in rows:
        in_flight = sum(other.arrival_s <= row.arrival_s < other.finish_s for other in rows)
        assert in_flight <= 4
    assert sum(row.arrival_s == 0 for row in rows) == 4


def test_a_spread_start_sends_each_clients_first_request_in_turn_over_the_span():
    requests = generate_requests(fixed_workload(500, 32, {"concurrency": 4}), 60, 0)

    together = simulate(requests, COST, CONFIG, concurrency=4).rows
    spread = simulate(requests, COST, CONFIG, concurrency=4, spread_start_s=0.6).rows

    assert {0.0, 0.15, 0.3, 0.45} <= {round(row.arrival_s, 9) for row in spread}
    assert sum(row.arrival_s == 0 for row in spread) == 1
    assert all(row.status == FINISHED for row in spread)
    for row in spread:
        assert sum(o.arrival_s <= row.arrival_s < o.finish_s for o in spread) <= 4
    # together, each round's four prompts share one step; spread, each shares it with decodes
    assert mean_ttft(spread) < 0.5 * mean_ttft(together)


@pytest.mark.parametrize(
    ("concurrency", "span"),
    [(None, 1.0), (4, 0.0), (4, -1.0)],
    ids=["open-loop", "zero", "negative"],
)
def test_a_spread_start_needs_a_closed_loop_and_a_positive_span(concurrency, span):
    requests = generate_requests(fixed_workload(256, 8, {"concurrency": 4}), 10, 0)
    with pytest.raises(ValueError, match="spread_start_s"):
        simulate(requests, COST, CONFIG, concurrency=concurrency, spread_start_s=span)


@pytest.mark.parametrize(
    ("arrival", "kv_capacity", "run"),
    [
        ({"process": "poisson", "rate_rps": 12}, 400_000, {}),
        ({"process": "poisson", "rate_rps": 12}, 12_000, {}),  # preempts for KV blocks
        ({"concurrency": 24}, 40_000, {"concurrency": 24}),
        ({"concurrency": 24}, 40_000, {"concurrency": 24, "spread_start_s": 3.0}),
        ({"process": "poisson", "rate_rps": 30}, 40_000, {"max_sim_seconds": 7.0}),
    ],
    ids=["open-loop", "preempting", "closed-loop", "spread-start", "time-limit"],
)
def test_steps_of_decoders_alone_are_taken_in_a_stride_with_the_full_steps_results(
    monkeypatch, arrival, kv_capacity, run
):
    workload = Workload.from_dict(
        {
            "isl": {"kind": "lognormal", "median": 700, "sigma": 0.6},
            "osl": {"kind": "lognormal", "median": 200, "sigma": 0.8},
            "arrival": arrival,
        }
    )
    requests = generate_requests(workload, 300, 3)
    config = EngineConfig(
        max_num_batched_tokens=2048, max_num_seqs=64, kv_capacity_tokens=kv_capacity
    )

    strided = simulate(requests, COST, config, **run)
    monkeypatch.setattr(simulator._Engine, "_decode_steps", simulator._Engine._step)
    stepped = simulate(requests, COST, config, **run)

    assert strided.rows == stepped.rows
    assert strided.summary == stepped.summary
    assert strided.summary.steps > 400


def test_a_time_limit_leaves_late_requests_unfinished():
    workload = fixed_workload(512, 128, {"process": "poisson", "rate_rps": 200})
    result = simulate(generate_requests(workload, 500, 1), COST, CONFIG, max_sim_seconds=1.0)
    assert result.summary.unfinished > 0
    assert result.summary.finished + result.summary.unfinished == 500
    assert all(row.finish_s <= 1.0 + 0.1 for row in result.rows if row.status == FINISHED)
    assert all(row.ttft_ms is None for row in result.rows if row.status == UNFINISHED)


def test_a_step_limit_stops_a_run_that_needs_more_steps_and_spares_one_that_does_not():
    # one prompt step gives the first token, then a step per further token: 5 steps for 5 tokens
    request = Request(index=0, arrival_s=0.0, input_tokens=512, output_tokens=5)

    assert simulate([request], COST, CONFIG, max_steps=5).summary.steps == 5
    with pytest.raises(SimulationTooLong, match="more than 4 engine steps"):
        simulate([request], COST, CONFIG, max_steps=4)


def test_slo_attainment_counts_every_request_against_every_target():
    workload = fixed_workload(512, 64, {"process": "poisson", "rate_rps": 5})
    requests = generate_requests(workload, 200, 2)
    loose = simulate(requests, COST, CONFIG, slo=SLO(ttft_ms=10_000, tpot_ms=1_000)).summary
    assert loose.attainment == 1.0
    assert loose.slo_met
    assert loose.goodput_rps == pytest.approx(loose.throughput_rps)
    tight = simulate(requests, COST, CONFIG, slo=SLO(ttft_ms=1, attainment=0.5)).summary
    assert tight.attainment == 0.0
    assert tight.goodput_rps == 0
    assert not tight.slo_met


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"max_num_batched_tokens": 64, "max_num_seqs": 128}, "max_num_batched_tokens"),
        ({"kv_block_size": 0}, "kv_block_size"),
        ({"kv_capacity_tokens": 8}, "kv_capacity_tokens"),
    ],
)
def test_engine_budgets_that_cannot_work_are_rejected(values, field):
    base = {"max_num_batched_tokens": 2048, "max_num_seqs": 128, "kv_capacity_tokens": 10_000}
    with pytest.raises(ValueError, match=field):
        EngineConfig(**{**base, **values})


def test_an_slo_with_a_meaningless_target_is_rejected():
    with pytest.raises(ValueError, match="tpot_ms"):
        SLO(tpot_ms=0)
    with pytest.raises(ValueError, match="attainment"):
        SLO(ttft_ms=100, attainment=1.5)


def test_a_request_without_output_tokens_is_rejected_as_bad_input():
    request = Request(index=3, arrival_s=0.0, input_tokens=10, output_tokens=0)
    with pytest.raises(ValueError, match=r"requests\[3\]"):
        simulate([request], COST, CONFIG)
