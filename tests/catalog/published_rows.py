"""A published row in the sample's own CSV terms, for tests that need one or a few, and a goal
the TensorRT-LLM overview has a cell for."""

from __future__ import annotations

from apps.catalog.published_sample import PublishedRow, parse_row
from apps.catalog.selectors import PublishedGoal

CSV_ROW = {
    "id": "llama_h100_vllm_agg_1024x256_c16",
    "silicon_data_source": "db-dump/2026-04-27; silicon_concurrency=16; measured=2026-04-17",
    "backend": "vllm",
    "backend_version": "0.19.0",
    "model_path": "meta-llama/Llama-3.1-8B-Instruct",
    "system": "h100_sxm",
    "precision": "",
    "mode": "agg",
    "isl": "1024",
    "osl": "256",
    "gemm_quant_mode": "",
    "moe_quant_mode": "",
    "batch_size": "16",
    "tp_size": "1",
    "pp_size": "1",
    "attention_dp_size": "1",
    "moe_tp_size": "1",
    "moe_ep_size": "1",
    "silicon_ttft_ms": "80.5",
    "silicon_tpot_ms": "7.25",
}


def sample_row(**overrides: str) -> PublishedRow:
    return parse_row({**CSV_ROW, **overrides})


# Llama-3.3-70B FP8 on two H200s with TensorRT-LLM: the overview's cell is 2,587 tokens/s/GPU.
OVERVIEW_GOAL = PublishedGoal(
    model_slug="llama-3.3-70b",
    accelerator_slug="h200-sxm",
    engine_slug="tensorrt-llm",
    precision="fp8",
    tp=2,
    isl=1000,
    osl=1000,
)
