"""The load harness measured against the in-process simulated engine on loopback.

FAST_STEP_COST makes the timing hand-computable: a lone prefill of P >= 20 tokens takes P ms
and a decode step 20 ms (modelled), scaled by the engine's time_scale.
"""

from __future__ import annotations

import asyncio
from statistics import median
from typing import Any

import pytest
from stackselect_runner.harness import HarnessSpec, LoadPoint, LoadPointResult, arun_load_point
from stackselect_runner.simengine import EngineConfig, serve_simulated_engine

from .conftest import FAST_STEP_COST, MODEL

DECODE_STEP_S = 0.020


def schedule(*shapes: tuple[int, int], spacing_s: float = 1.0) -> list[dict[str, Any]]:
    return [
        {"index": i, "arrival_s": i * spacing_s, "input_tokens": inp, "output_tokens": out}
        for i, (inp, out) in enumerate(shapes)
    ]


def measure(
    config: EngineConfig, point: LoadPoint, requests: list[dict[str, Any]], **harness: Any
) -> tuple[LoadPointResult, list[tuple[int, int]]]:
    """Run one load point; also returns the (done, total) progress calls."""
    progress: list[tuple[int, int]] = []

    async def run() -> LoadPointResult:
        async with serve_simulated_engine(config) as url:
            job_spec = {"engine": {"model": config.model}, "harness": harness, "requests": requests}
            spec = HarnessSpec.from_job_spec(job_spec, url)
            return await arun_load_point(
                spec, point, on_progress=lambda done, total: progress.append((done, total))
            )

    return asyncio.run(run()), progress


def engine(time_scale: float, **settings: Any) -> EngineConfig:
    return EngineConfig(model=MODEL, step_cost=FAST_STEP_COST, time_scale=time_scale, **settings)


def test_records_match_the_schedule_token_counts_and_timings_for_completions() -> None:
    requests = schedule((30, 5), (50, 8), (25, 3))
    result, progress = measure(engine(0.05), LoadPoint(concurrency=2), requests, warmup_requests=2)
    assert [r.index for r in result.records] == [0, 1, 2]
    for record, request in zip(result.records, requests, strict=True):
        assert record.error is None and record.status == 200
        assert record.input_tokens == request["input_tokens"]
        assert record.output_tokens == request["output_tokens"]
        assert len(record.itl_s) == request["output_tokens"] - 1
        assert record.finish_reason == "length"
        assert record.ttft_s is not None and record.e2e_s is not None
        assert 0 < record.ttft_s < record.e2e_s
        assert record.e2e_s >= record.ttft_s + sum(record.itl_s)
    assert result.warmup_requests == 2
    assert progress == [(1, 3), (2, 3), (3, 3)]


def test_chat_without_usage_counts_content_chunks_as_output_tokens() -> None:
    requests = schedule((20, 6), (20, 2))
    result, _ = measure(
        engine(0.05),
        LoadPoint(concurrency=1),
        requests,
        endpoint="chat",
        include_usage=False,
    )
    assert [r.output_tokens for r in result.records] == [6, 2]
    assert all(r.error is None for r in result.records)
    assert [r.input_tokens for r in result.records] == [20, 20]


def test_open_loop_sends_at_the_scheduled_arrival_times_scaled_by_the_rate() -> None:
    requests = schedule((20, 1), (20, 1), (20, 1), spacing_s=1.0)
    result, _ = measure(engine(0.05), LoadPoint(rate_rps=20.0), requests)
    sends = [record.send_s for record in result.records]
    # arrivals at 0, 1, 2 s at unit rate become 0, 50, 100 ms at 20 req/s
    assert sends == pytest.approx([0.0, 0.05, 0.10], abs=0.015)


def test_low_load_ttft_is_close_to_the_modelled_prefill_and_itl_to_the_decode_step() -> None:
    time_scale = 0.5
    result, _ = measure(engine(time_scale), LoadPoint(concurrency=1), schedule(*[(100, 4)] * 3))
    # a lone 100-token prefill: max(100 * 1 ms compute, 20 ms memory) = 100 ms, scaled by 0.5
    modelled_ttft = 0.100 * time_scale
    ttft = median(r.ttft_s for r in result.records if r.ttft_s is not None)
    assert modelled_ttft * 0.95 <= ttft <= modelled_ttft + 0.015
    itl = median(gap for r in result.records for gap in r.itl_s)
    assert itl == pytest.approx(DECODE_STEP_S * time_scale, abs=0.004)


def test_ttft_grows_once_the_load_passes_the_engine_capacity() -> None:
    # two sequences at a time, each 20 ms prefill + 9 decode steps of 20 ms = 200 ms modelled:
    # capacity is about 10 req/s modelled, 20 req/s at time_scale 0.5 (not faster: on a busy
    # machine the scheduling delay of a few ms must stay small against the unloaded TTFT)
    config = engine(0.5, max_num_seqs=2, max_num_batched_tokens=64)
    requests = schedule(*[(20, 10)] * 12)
    low, _ = measure(config, LoadPoint(rate_rps=4.0), requests)
    high, _ = measure(config, LoadPoint(rate_rps=1000.0), requests)
    low_ttft = low.summary()["ttft_s"]["p50"]
    high_ttft = high.summary()["ttft_s"]["p50"]
    assert high_ttft > 5 * low_ttft
    assert high.summary()["errors"] == low.summary()["errors"] == 0


def test_a_request_that_exceeds_its_timeout_is_recorded_as_an_error_not_raised() -> None:
    # the short request takes 20 ms modelled (10 ms real); the long one 20 ms + 49 * 20 ms
    requests = schedule((10, 1), (10, 50))
    result, _ = measure(engine(0.5), LoadPoint(concurrency=2), requests, timeout_s=0.1)
    short, long = result.records
    assert short.error is None and short.output_tokens == 1
    assert long.error == "timeout"
    assert long.e2e_s is None and long.tpot_s is None
    summary = result.summary()
    assert (summary["completed"], summary["errors"]) == (1, 1)
