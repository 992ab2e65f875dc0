"""trtllm-bench's own batch settings and the overview's request counts, as the cells were run."""

from __future__ import annotations

import pytest

from apps.selections.trtllm_bench import BenchSettings, bench_settings, stated_requests


def test_a_small_kv_cache_gets_the_minimum_batch_and_token_budget() -> None:
    # 20 requests fit: the batch is raised to 64 and the budget to 2,048 tokens.
    assert bench_settings(kv_requests=20, isl=1024, osl=1024, pp=1) == BenchSettings(64, 2048)


def test_the_batch_rounds_up_in_steps_that_grow_with_it() -> None:
    assert bench_settings(kv_requests=100, isl=1024, osl=1024, pp=1).max_batch_size == 128
    assert bench_settings(kv_requests=300, isl=1024, osl=1024, pp=1).max_batch_size == 384
    assert bench_settings(kv_requests=1100, isl=1024, osl=1024, pp=1).max_batch_size == 1280


def test_the_batch_and_the_token_budget_are_capped() -> None:
    settings = bench_settings(kv_requests=10_000, isl=8192, osl=1024, pp=1)

    assert settings.max_batch_size == 4096
    # 4,096 x (1 + 8) would be 36,864 tokens: capped at 32,768, which already holds a prompt
    # beside the batch.
    assert settings.max_num_tokens == 32768


def test_the_token_budget_follows_the_batch_and_the_length_ratio() -> None:
    # 600 requests of 1024/1024: 1,200 tokens per step keep prompts coming as fast as outputs
    # finish; rounded to 2,048 (the minimum).
    assert bench_settings(kv_requests=600, isl=1024, osl=1024, pp=1).max_num_tokens == 2048
    # 2,400 requests: 4,800 tokens, rounded up to a multiple of 512.
    assert bench_settings(kv_requests=2400, isl=1024, osl=1024, pp=1).max_num_tokens == 5120


def test_without_chunked_prefill_the_budget_holds_a_whole_prompt_beside_the_batch() -> None:
    settings = bench_settings(kv_requests=30, isl=32768, osl=1024, pp=1)

    # 30 x 33 = 990 tokens by the ratio alone could never schedule a 32,768-token prompt.
    assert settings.max_num_tokens == 32768 + settings.max_batch_size


def test_pipeline_stages_share_the_batch() -> None:
    one = bench_settings(kv_requests=1000, isl=1024, osl=1024, pp=1)
    two = bench_settings(kv_requests=1000, isl=1024, osl=1024, pp=2)

    assert (one.max_batch_size, two.max_batch_size) == (1024, 512)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        bench_settings(kv_requests=0, isl=1024, osl=1024, pp=1)
    with pytest.raises(ValueError, match="must be positive"):
        bench_settings(kv_requests=10, isl=1024, osl=1024, pp=0)


def test_request_counts_are_the_overviews_and_the_unlisted_lengths_are_a_named_assumption() -> None:
    assert stated_requests(1024, 1024) == 3000
    assert stated_requests(32768, 1024) == 1000
    assert stated_requests(1000, 1000) == 3000  # assumed like 1024/1024
    with pytest.raises(ValueError, match="states no request count for 2048/128"):
        stated_requests(2048, 128)
