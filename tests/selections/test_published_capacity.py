"""Predicting the TensorRT-LLM overview's maximum-load cells by simulating the run it made: per
GPU of a replica, the stated KV settings and request counts, trtllm-bench's own batch limits, and
a clear answer where there is none."""

from __future__ import annotations

import pytest
from stackselect_domain.steptime import METHOD_AICONFIGURATOR, METHOD_ROOFLINE
from stackselect_domain.workload import ClosedLoop, FixedLength, Workload

from apps.catalog import aiconfigurator_wheel
from apps.catalog.loading import fixture_instances
from apps.catalog.models import Accelerator, ModelSpec
from apps.catalog.published_overview import parse_row, read_overview
from apps.selections.published_capacity import CapacityCell, predict_capacity
from apps.selections.simulator import EngineConfig
from apps.selections.steady_state import capacity_run
from apps.selections.steptime_providers import roofline_provider

MODELS = fixture_instances(ModelSpec, "models")
ACCELERATORS = fixture_instances(Accelerator, "accelerators")
CELLS = {row.key: row for row in read_overview()}
LLAMA_H200_TP2 = "nvidia/Llama-3.3-70B-Instruct-FP8|H200|TP2|1000/1000"
needs_wheel = pytest.mark.skipif(
    not aiconfigurator_wheel.AVAILABLE, reason=aiconfigurator_wheel.UNAVAILABLE_REASON
)


def _cell(key: str) -> CapacityCell:
    row = CELLS[key]
    return CapacityCell(row, MODELS[row.model_slug], ACCELERATORS[row.accelerator_slug])


def test_a_cell_is_predicted_per_gpu_of_its_replica_near_the_published_figure() -> None:
    cell = _cell(LLAMA_H200_TP2)

    prediction = predict_capacity(cell, METHOD_ROOFLINE)

    # Per GPU of the two-GPU replica, not the replica's total nor requests per second: a unit
    # slip would land 2x or 1000x away from the overview's 2,587 tokens/s per GPU.
    published = cell.row.output_tokens_s_per_gpu
    assert 0.5 * published < prediction.per_gpu_tokens_s < 1.5 * published
    assert prediction.reason == ""
    assert prediction.requests == 3000  # one replica runs every request the overview states
    assert 1 < prediction.clients < prediction.requests  # the KV cache bounds the batch first
    assert prediction.relative_error(published) == pytest.approx(
        prediction.per_gpu_tokens_s / published - 1
    )


def test_attention_data_parallel_ranks_are_replicas_so_more_ranks_do_not_add_per_gpu() -> None:
    dep4 = _cell("nvidia/Qwen3-235B-A22B-FP4|B200|DEP4|1000/1000")

    assert (dep4.parallelism().tp, dep4.parallelism().dp, dep4.parallelism().ep) == (1, 4, 4)
    per_gpu = predict_capacity(dep4, METHOD_ROOFLINE).per_gpu_tokens_s
    # One rank runs on one GPU; the overview's 5,764 is per GPU too, so no factor of 4 appears.
    assert 0.4 * dep4.row.output_tokens_s_per_gpu < per_gpu < 2.5 * dep4.row.output_tokens_s_per_gpu


def test_the_stated_requests_are_shared_among_attention_data_parallel_ranks() -> None:
    dep8 = _cell("deepseek-ai/DeepSeek-R1-0528|H200|DEP8|1024/32768")

    prediction = predict_capacity(dep8, METHOD_ROOFLINE)

    # 1,000 requests over eight ranks: each rank runs 125, so its batch can never pass 125.
    assert prediction.requests == 125
    assert prediction.clients <= 125


def test_a_run_of_one_batch_does_the_work_of_the_steady_state_on_the_same_step_times() -> None:
    cell = _cell("openai/gpt-oss-20b|B200|TP1|1024/1024")
    burst = predict_capacity(cell, METHOD_ROOFLINE)
    clients = burst.clients
    config = EngineConfig(
        max_num_batched_tokens=8192,
        max_num_seqs=clients,
        kv_capacity_tokens=clients * 2048,
        prefix_caching=False,
    )
    workload = Workload(FixedLength(1024), FixedLength(1024), ClosedLoop(clients))
    provider = roofline_provider(cell.stack(), decode_batch=clients, context=1024 + 512)

    steady = capacity_run(workload, seed=1, step_time=provider, config=config)

    # All 3,000 requests fit in one batch, so the overview's run is a single wave: its prompts
    # queue for the first hundreds of steps, then every request decodes together. Its steps are
    # compute-bound (the experts' GEMMs count at their measured share of the dense rate), so the
    # wave costs about what a loop keeping the batch full does: within a tenth, where a request
    # count or a per-GPU share gone wrong would be off by a factor.
    assert clients == burst.requests == 3000
    assert burst.per_gpu_tokens_s == pytest.approx(steady.summary.output_tokens_per_s, rel=0.1)


def test_a_two_stage_pipeline_keeps_its_gpus_busy_as_the_overview_measured() -> None:
    one = _cell(
        "nvidia/Llama-3.3-70B-Instruct-FP4|RTX 6000 Pro Blackwell Server Edition|TP1,PP1|1000/1000"
    )
    two = _cell(
        "nvidia/Llama-3.3-70B-Instruct-FP4|RTX 6000 Pro Blackwell Server Edition|TP1,PP2|1000/1000"
    )

    per_gpu_one = predict_capacity(one, METHOD_ROOFLINE).per_gpu_tokens_s
    per_gpu_two = predict_capacity(two, METHOD_ROOFLINE).per_gpu_tokens_s

    # The overview publishes more tokens/s per GPU at PP2 (1,901) than at PP1 (1,724): two
    # micro-batches in flight. One batch at a time through both stages would halve it instead.
    assert two.row.output_tokens_s_per_gpu > one.row.output_tokens_s_per_gpu
    assert per_gpu_two > per_gpu_one


def test_the_kv_cache_is_fp8_where_the_overview_says_so_and_the_checkpoints_own_elsewhere() -> None:
    assert _cell("openai/gpt-oss-120b|B200|DEP2|1000/1000").kv_dtype() == "fp8"
    assert _cell("openai/gpt-oss-120b|H200|TP1|1000/1000").kv_dtype() != "fp8"  # "auto" on Hopper
    assert _cell("deepseek-ai/DeepSeek-R1-0528|H200|DEP8|1000/1000").kv_dtype() == "fp8"
    assert _cell(LLAMA_H200_TP2).kv_dtype() == "bf16"


def test_a_layout_the_model_does_not_fit_gets_no_figure_and_says_why() -> None:
    row = parse_row(
        {
            "table": "Deepseek R1 0528",
            "checkpoint": "deepseek-ai/DeepSeek-R1-0528",
            "system": "H100",
            "layout": "TP1",
            "precision": "FP8",
            "isl": "1000",
            "osl": "1000",
            "output_tokens_s_per_gpu": "100",
        }
    )
    cell = CapacityCell(row, MODELS["deepseek-r1"], ACCELERATORS["h100-sxm"])

    prediction = predict_capacity(cell, METHOD_ROOFLINE)

    assert prediction.per_gpu_tokens_s is None
    assert prediction.reason.startswith("does not fit")
    assert prediction.relative_error(100.0) is None


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method: must be roofline or aiconfigurator"):
        predict_capacity(_cell(LLAMA_H200_TP2), "guess")


@needs_wheel
def test_aiconfigurators_step_times_answer_the_cell_with_their_own_figure() -> None:
    cell = _cell(LLAMA_H200_TP2)

    measured = predict_capacity(cell, METHOD_AICONFIGURATOR)
    roofline = predict_capacity(cell, METHOD_ROOFLINE)

    assert measured.method == METHOD_AICONFIGURATOR
    assert measured.per_gpu_tokens_s is not None and measured.per_gpu_tokens_s > 0
    assert measured.per_gpu_tokens_s != roofline.per_gpu_tokens_s
    assert measured.clients == roofline.clients  # the same replica and KV cache
