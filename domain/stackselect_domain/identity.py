"""The identity a result is measured under, its fingerprint, and when two results compare.

docs/domain.md section 5: candidates are compared only under one identity. The fields of the stack
under test may differ (that is the comparison); any other difference makes the pair
`not_comparable`, and the differing fields are named so the page can say why. A simulated
result never compares with one measured on real hardware, whatever the stack under test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from stackselect_domain.canonical import canonical_hash

# What usually varies between candidates of one selection (docs/domain.md section 1: a stack is
# engine + kernels + KV layer + hardware + parallelism + precision recipe).
STACK_FIELDS: tuple[str, ...] = (
    "checkpoint",  # the weights actually served (a quantised checkpoint is its own)
    "precision",
    "kernel",  # the executed kernel backend
    "accelerator",
    "gpu_count",
    "topology",
    "power_mode",
    "parallelism",  # {"tp", "pp", "dp", "ep", "cp"}
    "placement",
    "engine",
    "engine_version",
    "backend",
    "engine_config",
    "kv_tier",
)
WORKLOAD_FIELDS: tuple[str, ...] = (
    "model",
    "tokenizer",
    "isl_distribution",
    "osl_distribution",
    "arrival",
    "prefix_share",
    "tool_call_share",
    "structured_output_share",
)
MEASUREMENT_FIELDS: tuple[str, ...] = (
    "warmup",
    "measurement_window",
    "failure_policy",
    "harness_tool",
    "harness_version",
    "simulated",
)
IDENTITY_FIELDS: tuple[str, ...] = WORKLOAD_FIELDS + STACK_FIELDS + MEASUREMENT_FIELDS
SIMULATED = "simulated"


def _canonical_value(field: str, value: Any) -> Any:
    """JSON-ready value with one spelling per meaning (1.0 and 1 are the same number)."""
    if isinstance(value, Mapping):
        return {str(key): _canonical_value(f"{field}.{key}", item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical_value(field, item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{field}: must be a finite number")
        return int(value) if value.is_integer() else value
    if value is None or isinstance(value, str | int | bool):
        return value
    raise ValueError(f"{field}: {type(value).__name__} is not an identity value")


# The most GPUs one identity can name: what the web app's GPU-count columns hold (a small
# integer), far above any one deployment, so a typo is refused by name rather than by the database.
MAX_GPU_COUNT = 32_767


def canonical_identity(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Every identity field (None when not given); unknown fields are refused by name."""
    unknown = sorted(set(raw) - set(IDENTITY_FIELDS))
    if unknown:
        raise ValueError(f"identity: unknown fields {', '.join(unknown)}")
    simulated = raw.get(SIMULATED)
    if simulated is not None and not isinstance(simulated, bool):
        raise ValueError("simulated: must be true or false")
    gpu_count = raw.get("gpu_count")
    if gpu_count is not None and not (type(gpu_count) is int and 1 <= gpu_count <= MAX_GPU_COUNT):
        raise ValueError(f"gpu_count: must be an integer from 1 to {MAX_GPU_COUNT}")
    return {field: _canonical_value(field, raw.get(field)) for field in IDENTITY_FIELDS}


def fingerprint(identity: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical identity in the one canonical JSON form."""
    return canonical_hash(canonical_identity(identity))


def _differences(name: str, a: Any, b: Any) -> list[str]:
    """Dotted names of what differs, down into nested objects (`engine_config.max_num_seqs`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            difference
            for key in sorted(set(a) | set(b))
            for difference in _differences(f"{name}.{key}", a.get(key), b.get(key))
        ]
    return [] if a == b else [name]


@dataclass(frozen=True, slots=True)
class Comparability:
    """Whether two results compare, and if not, which identity fields stand in the way."""

    differing: tuple[str, ...]

    @property
    def comparable(self) -> bool:
        return not self.differing

    @property
    def status(self) -> Literal["comparable", "not_comparable"]:
        return "comparable" if self.comparable else "not_comparable"


def comparability(
    a: Mapping[str, Any], b: Mapping[str, Any], *, stack_fields: Iterable[str] = STACK_FIELDS
) -> Comparability:
    """Compare two identities, allowing `stack_fields` (the stack under test) to differ."""
    allowed = set(stack_fields)
    unknown = sorted(allowed - set(IDENTITY_FIELDS))
    if unknown:
        raise ValueError(f"stack_fields: unknown fields {', '.join(unknown)}")
    allowed.discard(SIMULATED)
    left, right = canonical_identity(a), canonical_identity(b)
    differing = [
        difference
        for field in IDENTITY_FIELDS
        if field not in allowed
        for difference in _differences(field, left[field], right[field])
    ]
    return Comparability(differing=tuple(differing))
