"""The simulated engine's default step cost; the formula is `stackselect_domain.stepcost`.

A job spec normally carries the estimator's coefficients for the stack under test; the default
serves the engine started by hand (`python -m stackselect_runner.simengine`).
"""

from __future__ import annotations

from stackselect_domain.stepcost import StepCost

# Roughly Llama-3.1-8B in BF16 on one H100 SXM. Model shape from the checkpoint's config.json
# (huggingface.co/meta-llama/Llama-3.1-8B: 32 layers, 32 query / 8 KV heads, head_dim 128,
# ~8.03e9 parameters); H100 SXM peaks from NVIDIA's H100 datasheet (3.35 TB/s HBM3,
# 989 TFLOPS dense BF16). The step overhead is our assumption for scheduler + launch cost.
_LLAMA_8B_PARAMS = 8.03e9
_LAYERS, _Q_HEADS, _KV_HEADS, _HEAD_DIM, _BF16_BYTES = 32, 32, 8, 128, 2
DEFAULT_STEP_COST = StepCost(
    weight_bytes=_LLAMA_8B_PARAMS * _BF16_BYTES,
    kv_bytes_per_token=2 * _LAYERS * _KV_HEADS * _HEAD_DIM * _BF16_BYTES,
    flops_per_token=2 * _LLAMA_8B_PARAMS,
    attn_flops_per_token_ctx=4 * _LAYERS * _Q_HEADS * _HEAD_DIM,
    hbm_bytes_per_s=3.35e12,
    flops_per_s=989e12,
    comm_s_per_token=0.0,
    step_overhead_s=0.002,
)
