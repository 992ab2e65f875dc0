"""Precision words: bytes per weight or KV element, and the tensor-core rate that runs them.

The estimator needs two facts per precision recipe: the resident size of a weight (memory and the
bytes streamed per decode step) and the peak rate of the matrix units that execute it. Only FP8
and NVFP4 recipes run on low-precision tensor cores here; integer, GGUF and MXFP4 weights are
treated as weight-only quantisation, dequantised to 16-bit for the matmul. For MXFP4 that is how
AIConfigurator reads an MXFP4 checkpoint (gpt-oss: 16-bit GEMMs, W4A16 experts) and how the
engines serve it on Hopper; a TensorRT-LLM build with FP8 activations on Blackwell runs faster.
"""

from __future__ import annotations

from dataclasses import dataclass

# Compute tiers: which AcceleratorSpec peak a precision's matmuls use.
COMPUTE_BF16 = "bf16"
COMPUTE_FP8 = "fp8"
COMPUTE_FP4 = "fp4"


@dataclass(frozen=True)
class Precision:
    """A weight precision recipe: resident bits per weight (scales included) and compute tier."""

    name: str
    bits_per_weight: float
    compute: str

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8


def _group_quant_bits(bits: int, group_size: int, scale_bits: int, zero_bits: int) -> float:
    """Bits per weight of a group quantisation: the payload plus one scale and zero per group."""
    return bits + (scale_bits + zero_bits) / group_size


# Bits per weight. Sources for the non-obvious figures:
# - fp8: one byte; block-128x128 FP32 scales (DeepSeek-V3 style) add 4/16384 bytes, neglected.
# - fp4: NVFP4 layout, 4-bit E2M1 values plus one FP8 scale per 16 values = 4.5 bits (NVIDIA
#   Blackwell NVFP4 description); mxfp4 is the OCP MX layout, one 8-bit scale per 32 values.
# - int8: one byte, per-channel scales neglected.
# - int4_awq / int4_gptq: 4-bit payload, group size 128 (the AutoAWQ and GPTQ default), one
#   FP16 scale and one packed 4-bit zero point per group.
# - GGUF legacy quants from ggml's block layouts (ggml-common.h): q8_0 = 32 int8 + FP16 scale
#   = 34 bytes per 32 weights = 8.5 bits; q4_0 = 18 bytes per 32 = 4.5; q4_1 = 20/32 = 5.0;
#   q5_0 = 22/32 = 5.5; q5_1 = 24/32 = 6.0.
# - GGUF k-quant mixes: whole-model bits per weight measured on Llama 2 7B, from the table in
#   llama.cpp tools/quantize/README.md (q2_k 3.35, q3_k_s 3.50, q3_k_m 3.91, q3_k_l 4.27,
#   q4_k_s 4.58, q4_k_m 4.84, q5_k_s 5.52, q5_k_m 5.68, q6_k 6.56).
PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("bf16", 16.0, COMPUTE_BF16),
        Precision("fp16", 16.0, COMPUTE_BF16),
        Precision("fp8", 8.0, COMPUTE_FP8),
        Precision("fp4", 4.5, COMPUTE_FP4),
        Precision("mxfp4", _group_quant_bits(4, 32, 8, 0), COMPUTE_BF16),
        Precision("int8", 8.0, COMPUTE_BF16),
        Precision("int4_awq", _group_quant_bits(4, 128, 16, 4), COMPUTE_BF16),
        Precision("int4_gptq", _group_quant_bits(4, 128, 16, 4), COMPUTE_BF16),
        Precision("q8_0", 34 * 8 / 32, COMPUTE_BF16),
        Precision("q5_1", 24 * 8 / 32, COMPUTE_BF16),
        Precision("q5_0", 22 * 8 / 32, COMPUTE_BF16),
        Precision("q4_1", 20 * 8 / 32, COMPUTE_BF16),
        Precision("q4_0", 18 * 8 / 32, COMPUTE_BF16),
        Precision("q6_k", 6.56, COMPUTE_BF16),
        Precision("q5_k_m", 5.68, COMPUTE_BF16),
        Precision("q5_k_s", 5.52, COMPUTE_BF16),
        Precision("q4_k_m", 4.84, COMPUTE_BF16),
        Precision("q4_k_s", 4.58, COMPUTE_BF16),
        Precision("q3_k_l", 4.27, COMPUTE_BF16),
        Precision("q3_k_m", 3.91, COMPUTE_BF16),
        Precision("q3_k_s", 3.50, COMPUTE_BF16),
        Precision("q2_k", 3.35, COMPUTE_BF16),
    )
}

# KV-cache element sizes. Left out (None or "") means the 16-bit default of the engines.
KV_DTYPE_BYTES: dict[str, int] = {
    "bf16": 2,
    "fp16": 2,
    "auto": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


def peak_of_tier(
    compute: str, *, bf16: float, fp8: float | None = None, fp4: float | None = None
) -> float:
    """Dense peak of the tier a precision runs on; a missing low-precision rate falls back a tier
    (an FP8 recipe on a GPU without FP8 tensor cores runs its matmuls at 16 bits)."""
    if compute not in (COMPUTE_BF16, COMPUTE_FP8, COMPUTE_FP4):
        raise ValueError(f"compute: unknown tier {compute!r}")
    if compute == COMPUTE_FP4 and fp4:
        return fp4
    if compute in (COMPUTE_FP4, COMPUTE_FP8) and fp8:
        return fp8
    return bf16


def weight_precision(name: str) -> Precision:
    """Look a precision word up, case-insensitively; a ValueError lists the known words."""
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in PRECISIONS:
        known = ", ".join(PRECISIONS)
        raise ValueError(f"precision: unknown precision {name!r}; known: {known}")
    return PRECISIONS[key]


def kv_bytes_per_element(kv_dtype: str | None) -> int:
    """Bytes per KV-cache element; None or an empty word means 16-bit."""
    if kv_dtype is None or kv_dtype == "":
        return 2
    key = kv_dtype.strip().lower()
    if key not in KV_DTYPE_BYTES:
        known = ", ".join(KV_DTYPE_BYTES)
        raise ValueError(f"kv_dtype: unknown KV-cache dtype {kv_dtype!r}; known: {known}")
    return KV_DTYPE_BYTES[key]
