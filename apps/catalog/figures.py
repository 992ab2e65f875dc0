"""Which columns of accelerators and models are sourced figures, and reading their sources.

Each figure's provenance lives in the row's `sources` JSON map ({field: {source, as_of, note}}),
so a figure without an entry there is an unsourced figure; the detail pages show the entry next
to the value and `catalog_stats` counts the share that have one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import models

ACCELERATOR_FIGURES = (
    "memory_gb",
    "bandwidth_tbps",
    "bf16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "interconnect",
    "interconnect_gbps",
    "tdp_w",
)
MODEL_FIGURES = (
    "native_dtype",
    "params_total_b",
    "params_active_b",
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "attention_kind",
    "sliding_window",
    "sliding_window_layers",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "experts_total",
    "experts_active",
    "max_context",
    "vocab_size",
)


@dataclass(frozen=True)
class Figure:
    name: str
    label: str
    value: Any
    source: str
    as_of: str
    note: str

    @property
    def is_sourced(self) -> bool:
        return bool(self.source and self.as_of)


def has_value(value: Any) -> bool:
    """None, an empty string and an empty list (a release without budget tiers) are unset."""
    return value is not None and value != "" and value != []


def figures_of(instance: models.Model, names: tuple[str, ...]) -> list[Figure]:
    """The instance's non-empty figures with their source entries (empty strings when missing)."""
    sources = getattr(instance, "sources", None) or {}
    figures = []
    for name in names:
        value = getattr(instance, name)
        if not has_value(value):
            continue
        entry = sources.get(name) if isinstance(sources.get(name), dict) else {}
        figures.append(
            Figure(
                name=name,
                label=str(instance._meta.get_field(name).verbose_name),
                value=value,
                source=str(entry.get("source") or ""),
                as_of=str(entry.get("as_of") or ""),
                note=str(entry.get("note") or ""),
            )
        )
    return figures
