"""The step-cost model: a wire contract shared with the server's estimator.

The server sends the `step_cost` dict in the job spec; both sides compute a step's duration
with `StepCost.step_seconds`, so a simulated run reproduces what the estimator predicted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from stackselect_runner.checks import require_number

RATE_FIELDS = ("hbm_bytes_per_s", "flops_per_s")


@dataclass(frozen=True, slots=True)
class StepCost:
    """Per-GPU costs; all floats. Rates must be positive, the other costs non-negative."""

    weight_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    attn_flops_per_token_ctx: float
    hbm_bytes_per_s: float
    flops_per_s: float
    comm_s_per_token: float
    step_overhead_s: float

    def __post_init__(self) -> None:
        for item in fields(self):
            strict = item.name in RATE_FIELDS
            require_number(getattr(self, item.name), f"step_cost.{item.name}", 0.0, strict=strict)

    def step_seconds(self, batch_tokens: int, kv_tokens_read: int, attn_token_ctx: int) -> float:
        """Overhead + roofline max(compute, memory) + communication for one engine step."""
        compute_s = (
            batch_tokens * self.flops_per_token + attn_token_ctx * self.attn_flops_per_token_ctx
        ) / self.flops_per_s
        memory_s = (self.weight_bytes + kv_tokens_read * self.kv_bytes_per_token) / (
            self.hbm_bytes_per_s
        )
        return (
            self.step_overhead_s + max(compute_s, memory_s) + batch_tokens * self.comm_s_per_token
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepCost:
        names = [item.name for item in fields(cls)]
        missing = [name for name in names if name not in data]
        if missing:
            raise ValueError(f"step_cost: missing field(s) {missing}")
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"step_cost: unknown field(s) {unknown}")
        return cls(**{name: data[name] for name in names})

    @classmethod
    def from_json_or_file(cls, text: str) -> StepCost:
        """Accept inline JSON (starts with '{') or a path to a JSON file."""
        source = text if text.lstrip().startswith("{") else Path(text).read_text()
        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            raise ValueError(f"step_cost: invalid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ValueError("step_cost: expected a JSON object")
        return cls.from_dict(data)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


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
