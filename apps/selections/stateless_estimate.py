"""The stateless estimate behind POST /api/v1/estimate/: catalog rows in, estimator figures out."""

from __future__ import annotations

from typing import Any

from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.catalog_adapter import accelerator_spec, default_kv_dtype, model_arch
from apps.selections.estimator import (
    Parallelism,
    estimate_latency,
    estimate_memory,
    kv_bytes_per_token,
    max_concurrency_at_tpot,
)


def stateless_estimate(
    *,
    model: str,
    precision: str,
    accelerator: str,
    gpu_count: int,
    tp: int,
    isl: int,
    osl: int,
    concurrency: int = 1,
    kv_dtype: str = "",
    tpot_ms: float | None = None,
) -> dict[str, Any]:
    """One replica of tp GPUs (gpu_count / tp replicas side by side share nothing).

    Figures are per GPU of a replica; kv_capacity_tokens is per replica; ValueErrors name the
    field that makes the layout impossible (tp that does not divide the heads, ...).
    """
    spec = ModelSpec.objects.get(slug=model)
    arch = model_arch(spec)
    accel = accelerator_spec(Accelerator.objects.get(slug=accelerator))
    kv_dtype = kv_dtype or default_kv_dtype(spec)
    layout = Parallelism(tp=tp, dp=gpu_count // tp)
    shared = {
        "model": arch,
        "accel": accel,
        "precision": precision,
        "kv_dtype": kv_dtype,
        "parallelism": layout,
        "isl": isl,
        "osl": osl,
    }
    memory = estimate_memory(**shared)
    latency = estimate_latency(**shared, concurrency=concurrency)
    max_concurrency = None
    if tpot_ms is not None:
        max_concurrency = max_concurrency_at_tpot(target_tpot_ms=tpot_ms, **shared)
    return {
        "weights_gb_per_gpu": memory.weights_gb_per_gpu,
        "kv_bytes_per_token": kv_bytes_per_token(model=arch, kv_dtype=kv_dtype),
        "kv_capacity_tokens": memory.kv_capacity_tokens,
        "fits": memory.fits,
        "fit_reason": memory.reason,
        "ttft_ms": latency.ttft_ms,
        "tpot_ms": latency.tpot_ms,
        "max_concurrency_at_tpot_slo": max_concurrency,
    }
