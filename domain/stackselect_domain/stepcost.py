"""The step-time model of the roofline provider, shared by the estimator and the simulated engine.

One formula, one place: the estimator fills the coefficients from the catalog, the runner's
simulated engine receives them in the job spec and sleeps for the steps they predict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from stackselect_domain.checks import require_number

RATE_FIELDS = ("hbm_bytes_per_s", "flops_per_s")


@dataclass(frozen=True, slots=True)
class StepCost:
    """Cost model of one engine step: the server's estimator computes it, the simulated engine
    times its steps with it (the job spec carries `as_dict()`).

    All fields are floats describing one TP rank along a token's path through every pipeline
    stage (stages run one after another, so per-step latency sees all of them):

    - weight_bytes: weight bytes read per step
    - kv_bytes_per_token: KV bytes read per token of context
    - flops_per_token: linear-layer FLOPs per processed token
    - attn_flops_per_token_ctx: attention FLOPs per (processed token x context token) pair
    - hbm_bytes_per_s, flops_per_s: effective (efficiency-scaled) memory bandwidth and compute
    - comm_s_per_token: collective communication seconds per processed token
    - step_overhead_s: fixed seconds per step (scheduling, launches, collective latency)

    For a step, batch_tokens = tokens processed (prefill chunk tokens + 1 per decoding
    sequence), kv_tokens_read = sum of the context lengths of the sequences in the batch, and
    attn_token_ctx = sum over processed tokens of their context length:

        step_seconds = step_overhead_s
            + max((batch_tokens * flops_per_token + attn_token_ctx * attn_flops_per_token_ctx)
                  / flops_per_s,
                  (weight_bytes + kv_tokens_read * kv_bytes_per_token) / hbm_bytes_per_s)
            + batch_tokens * comm_s_per_token
    """

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
            name = f"step_cost.{item.name}"
            value = require_number(getattr(self, item.name), name, 0.0, strict=strict)
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")

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
        return {key: float(value) for key, value in asdict(self).items()}
