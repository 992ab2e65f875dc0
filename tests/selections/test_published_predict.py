"""A published row is predicted under the budgets its engine release ran with on its GPU."""

from __future__ import annotations

from apps.catalog.loading import fixture_instances
from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.published_predict import RowContext, roofline_for, simulate_row
from tests.catalog.published_rows import sample_row

MODELS = fixture_instances(ModelSpec, "models")
ACCELERATORS = fixture_instances(Accelerator, "accelerators")


def _context(backend: str, system: str, **overrides: str) -> RowContext:
    row = sample_row(backend=backend, system=system, **overrides)
    return RowContext(row, MODELS[row.model_slug], ACCELERATORS[row.accelerator_slug])


def test_sglang_rows_on_gpus_of_160_gb_or_more_get_its_16384_token_chunks() -> None:
    # SGLang 0.5.6-0.5.10 resolve chunked_prefill_size from the GPU: 16,384 from 160 GiB.
    assert _context("sglang", "b200_sxm").token_budget == 16384
    assert _context("sglang", "h200_sxm").token_budget == 8192
    # vLLM's releases in the sample (up to 0.19) give every such GPU 8,192, as TensorRT-LLM does.
    assert _context("vllm", "b200_sxm").token_budget == 8192
    assert _context("trtllm", "b200_sxm").token_budget == 8192


def test_the_budget_decides_how_many_prompts_share_a_step_and_so_the_first_rounds_ttft() -> None:
    # 64 clients of 1,024-token prompts under SGLang's prefill-first policy: 8 prompts per
    # 8,192-token step, 16 per 16,384-token one. Same GPU, so the same step times.
    long_run = {"isl": "1024", "osl": "64", "silicon_data_source": "t; silicon_concurrency=64"}
    on_b200 = _context("sglang", "b200_sxm", batch_size="64", **long_run)
    halved = RowContext(on_b200.row, on_b200.model, ACCELERATORS["h200-sxm"])  # 8,192 tokens
    provider = roofline_for(on_b200)

    large, small = simulate_row(provider, on_b200), simulate_row(provider, halved)

    assert on_b200.token_budget == 2 * halved.token_budget
    assert large.ttft_by_round_ms[0] != small.ttft_by_round_ms[0]
