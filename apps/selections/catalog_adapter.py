"""Maps catalog rows onto the estimator's and simulator's dataclasses, and reads capability cells.

The pure cores never see a Django model; this module is the only bridge. `CatalogSnapshot` loads
everything candidate generation needs in a fixed, small number of queries, so enumerating
thousands of stacks touches the database once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from django.db.models import QuerySet
from stackselect_domain.words import grouped

from apps.catalog.choices import EngineKind, PrefixCacheKind, UnchunkedLimit, Vendor
from apps.catalog.models import Accelerator, Capability, EngineRelease, ModelSpec
from apps.selections.estimator import AcceleratorSpec, ModelArch, Parallelism
from apps.selections.simulator import EngineConfig

# Scheduler budgets assumed when the catalog has no sourced default for a release. They are
# vLLM's defaults for smaller GPUs (2048 tokens, 256 sequences; vllm/engine/arg_utils.py, as
# recorded in fixtures/catalog/engines.json) and its 16-token KV block.
FALLBACK_BATCHED_TOKENS = 2048
FALLBACK_MAX_SEQS = 256
FALLBACK_BLOCK_SIZE = 16

PREFIX_REUSE_KINDS = (PrefixCacheKind.HASH_BLOCKS, PrefixCacheKind.RADIX_TREE)

# Precision words of the API -> the prec_* capability an engine must have for them.
_PRECISION_FEATURES = {
    "bf16": "prec_bf16",
    "fp16": "prec_fp16",
    "fp8": "prec_fp8",
    "fp4": "prec_fp4",
    "mxfp4": "prec_fp4",
    "int8": "prec_int8",
    "int4_awq": "prec_awq",
    "int4_gptq": "prec_gptq",
}
SIXTEEN_BIT = ("bf16", "fp16")


def precision_feature(precision: str) -> str:
    """The prec_* feature key of a precision word; every GGUF quant name maps to prec_gguf."""
    return _PRECISION_FEATURES.get(precision, "prec_gguf")


def default_kv_dtype(model: ModelSpec) -> str:
    """Engines keep the KV cache in 16 bits unless told otherwise: fp16 for fp16 models."""
    return "fp16" if model.native_dtype == "fp16" else "bf16"


def hardware_feature(accelerator: Accelerator) -> str:
    """The hw_* feature key that says whether an engine reaches this accelerator."""
    if accelerator.vendor == Vendor.INTEL:
        return "hw_intel_gaudi" if accelerator.family.startswith("gaudi") else "hw_intel_xpu"
    return {
        Vendor.NVIDIA: "hw_nvidia",
        Vendor.AMD: "hw_amd",
        Vendor.GOOGLE: "hw_google_tpu",
        Vendor.APPLE: "hw_apple_metal",
        Vendor.AWS: "hw_aws_neuron",
        Vendor.HUAWEI: "hw_huawei_ascend",
        Vendor.CPU: "hw_cpu",
    }[accelerator.vendor]


def model_arch(spec: ModelSpec) -> ModelArch:
    """The estimator's view of a catalog model.

    A sliding-window model whose count of sliding layers is unsourced is treated as full
    attention on every layer: it overstates its KV cache, which errs towards "does not fit".
    """
    attention = spec.attention_kind
    sliding_layers = spec.sliding_window_layers or 0
    if attention == "sliding" and not sliding_layers:
        attention = "gqa" if spec.kv_heads < spec.attention_heads else "mha"
    return ModelArch(
        params_total_b=spec.params_total_b,
        params_active_b=spec.params_active_b,
        layers=spec.layers,
        hidden_size=spec.hidden_size,
        attention_heads=spec.attention_heads,
        kv_heads=spec.kv_heads,
        head_dim=spec.head_dim,
        attention_kind=attention,
        sliding_window=spec.sliding_window if attention == "sliding" else None,
        sliding_window_layers=sliding_layers if attention == "sliding" else 0,
        kv_lora_rank=spec.kv_lora_rank,
        qk_rope_head_dim=spec.qk_rope_head_dim,
        experts_total=spec.experts_total or 0,
        experts_active=spec.experts_active or 0,
        max_context=spec.max_context,
        vocab_size=spec.vocab_size,
    )


CUSTOM_MODEL_FIELDS = (
    "name",
    "architecture",
    "checkpoint",
    "native_dtype",
    *(item.name for item in fields(ModelArch)),
)


def custom_model_spec(custom: Mapping[str, Any]) -> ModelSpec:
    """An unsaved ModelSpec for an architecture the catalog lacks, so the filters, hints and
    `model_arch` treat it like a catalog model. Raises ValueError naming a missing field."""
    if not custom.get("name"):
        raise ValueError("custom_model.name: is required")
    if not custom.get("architecture"):
        raise ValueError("custom_model.architecture: is required (an arch_* feature key)")
    return ModelSpec(
        slug="",
        family="custom",
        **{key: custom[key] for key in CUSTOM_MODEL_FIELDS if custom.get(key) is not None},
    )


def accelerator_spec(accelerator: Accelerator) -> AcceleratorSpec:
    """Raises ValueError naming the missing figure when the catalog lacks one the model needs."""
    for name in ("memory_gb", "bandwidth_tbps", "bf16_tflops"):
        if not getattr(accelerator, name):
            raise ValueError(f"{name}: the catalog has no sourced figure for {accelerator.name}")
    return AcceleratorSpec(
        name=accelerator.slug,
        memory_gb=accelerator.memory_gb,
        bandwidth_tbps=accelerator.bandwidth_tbps,
        bf16_tflops=accelerator.bf16_tflops,
        fp8_tflops=accelerator.fp8_tflops,
        fp4_tflops=accelerator.fp4_tflops,
        interconnect_gbps=accelerator.interconnect_gbps,
    )


def interconnect_unknown(accelerator: Accelerator, layout: Parallelism) -> str | None:
    """Why this layout cannot be timed on these devices, or None when it can: its tensor,
    pipeline or expert shards talk over a scale-up link whose bandwidth the catalog does not
    record."""
    if not layout.needs_interconnect or accelerator.interconnect_gbps is not None:
        return None
    return (
        f"The catalog has no per-device interconnect bandwidth for {accelerator.name}, "
        "so a multi-GPU replica cannot be estimated."
    )


@dataclass(frozen=True)
class SchedulerBudgets:
    max_num_seqs: int
    max_num_batched_tokens: int


def _matching_tier(release: EngineRelease, accelerator: Accelerator) -> dict[str, Any]:
    """The release's first budget tier that names this accelerator or a memory bound above
    its memory; an empty tier when none does (the release's own budgets then apply).

    Engines compare the device's reported memory with their bounds; we compare the catalog's
    memory figure, which differs from it by a few percent (tests/selections/
    test_scheduler_budgets.py checks no catalog accelerator lies that close to a bound)."""
    for tier in release.budget_tiers or ():
        if accelerator.slug in (tier.get("accelerators") or ()):
            return tier
        bound = tier.get("memory_gb_below")
        if bound is not None and accelerator.memory_gb and accelerator.memory_gb < bound:
            return tier
    return {}


# A replica of no named engine schedules with the fallbacks above.
FALLBACK_BUDGETS = SchedulerBudgets(
    max_num_seqs=FALLBACK_MAX_SEQS, max_num_batched_tokens=FALLBACK_BATCHED_TOKENS
)


def scheduler_budgets(release: EngineRelease, accelerator: Accelerator) -> SchedulerBudgets:
    """The release's recorded budgets on this accelerator (its budget tiers, when the engine
    resolves them from the GPU), with the fallbacks above."""
    return _budgets(release, _matching_tier(release, accelerator))


def _budgets(release: EngineRelease, tier: dict[str, Any]) -> SchedulerBudgets:
    """The budgets of the release's matching tier, else its recorded ones, else the fallbacks:
    the one place they apply. The token budget is never below the sequence budget (vLLM
    enforces the same)."""
    max_seqs = tier.get("max_num_seqs") or release.max_num_seqs or FALLBACK_MAX_SEQS
    tokens = (
        tier.get("max_num_batched_tokens")
        or release.max_num_batched_tokens
        or FALLBACK_BATCHED_TOKENS
    )
    return SchedulerBudgets(max_num_seqs=max_seqs, max_num_batched_tokens=max(tokens, max_seqs))


def scheduler_record(release: EngineRelease | None, accelerator: Accelerator) -> dict[str, Any]:
    """The budgets a simulated replica of this release on this accelerator schedules with, and
    where each comes from (the engine's default on that GPU, its recorded default, or the
    fallback above), for the page and the API."""
    if release is None:
        tokens, seqs = FALLBACK_BUDGETS.max_num_batched_tokens, FALLBACK_BUDGETS.max_num_seqs
        return {
            "max_num_batched_tokens": tokens,
            "max_num_seqs": seqs,
            "note": f"no engine named: our fallback budgets, {grouped(tokens)} tokens per step and "
            f"{grouped(seqs)} sequences",
        }
    tier = _matching_tier(release, accelerator)
    budgets = _budgets(release, tier)

    def origin(name: str) -> str:
        if tier.get(name):
            return f"its default on the {accelerator.name}"
        return "its recorded default" if getattr(release, name) else "not recorded: our fallback"

    return {
        "max_num_batched_tokens": budgets.max_num_batched_tokens,
        "max_num_seqs": budgets.max_num_seqs,
        "note": f"scheduled as {release} schedules: {grouped(budgets.max_num_batched_tokens)} "
        f"tokens per step ({origin('max_num_batched_tokens')}), "
        f"{grouped(budgets.max_num_seqs)} sequences ({origin('max_num_seqs')})",
    }


def engine_config(
    release: EngineRelease, accelerator: Accelerator, *, kv_capacity_tokens: int
) -> EngineConfig:
    """Scheduler budgets from the release's recorded defaults on this accelerator, with the
    fallbacks above; prefixes are cached where the release reuses them and does so by default
    (the engine as started with its defaults, as every other figure here)."""
    budgets = scheduler_budgets(release, accelerator)
    return EngineConfig(
        max_num_batched_tokens=budgets.max_num_batched_tokens,
        max_num_seqs=budgets.max_num_seqs,
        kv_capacity_tokens=kv_capacity_tokens,
        kv_block_size=release.kv_block_size or FALLBACK_BLOCK_SIZE,
        chunked_prefill=release.chunked_prefill_default is not False,
        prefix_caching=release.prefix_cache_kind in PREFIX_REUSE_KINDS
        and release.prefix_cache_default_on is not False,
        # A radix tree matches to the token: SGLang's page size resolves to 1 unless an
        # attention backend needs pages (_page_size_default in sglang 0.5.23's
        # srt/arg_groups/overrides.py), and TensorRT-LLM copies a partly matched block
        # (KvCacheConfig.enable_partial_reuse=True, nvidia.github.io/TensorRT-LLM/llm-api/
        # reference/KvCacheConfig.html, read 2026-12-07).
        partial_prefix_reuse=release.prefix_cache_kind == PrefixCacheKind.RADIX_TREE,
        unchunked_prompt_only=release.unchunked_limit == UnchunkedLimit.PROMPT,
    )


@dataclass(frozen=True)
class Cell:
    """One capability cell, reduced to what a verdict needs."""

    id: int
    maturity: str
    backend_id: int | None
    vendor: str
    family: str

    def specificity(self) -> int:
        return (self.backend_id is not None) + bool(self.vendor) + bool(self.family)


def _cells(capabilities: QuerySet[Capability]) -> dict[tuple[int, str], list[Cell]]:
    """Capability cells by (release id, feature key)."""
    cells: dict[tuple[int, str], list[Cell]] = defaultdict(list)
    rows = capabilities.values_list(
        "id", "release_id", "feature__key", "maturity", "backend_id", "vendor", "family"
    )
    for cell_id, release_id, key, maturity, backend_id, vendor, family in rows:
        cells[(release_id, key)].append(Cell(cell_id, maturity, backend_id, vendor, family))
    return dict(cells)


@dataclass
class CatalogSnapshot:
    """Releases (with engine and backends), accelerators and capability cells, loaded once."""

    releases: list[EngineRelease]
    accelerators: list[Accelerator]
    cells: dict[tuple[int, str], list[Cell]] = field(default_factory=dict)

    @classmethod
    def load(cls, *, accelerator_slugs: Iterable[str] | None = None) -> CatalogSnapshot:
        releases = list(
            EngineRelease.objects.select_related("engine")
            .prefetch_related("backends__backend")
            .order_by("engine__name", "version")
        )
        accelerators = Accelerator.objects.order_by("vendor", "name")
        if accelerator_slugs is not None:
            accelerators = accelerators.filter(slug__in=list(accelerator_slugs))
        return cls(
            releases=releases,
            accelerators=list(accelerators),
            cells=_cells(Capability.objects.all()),
        )

    @classmethod
    def of_release(cls, release: EngineRelease, accelerator: Accelerator) -> CatalogSnapshot:
        """The cells of one release, for judging one stack (the stateless estimate)."""
        cells = _cells(Capability.objects.filter(release=release))
        return cls(releases=[release], accelerators=[accelerator], cells=cells)

    def serving_releases(self) -> list[EngineRelease]:
        return [r for r in self.releases if r.engine.kind == EngineKind.ENGINE]

    def cell(
        self,
        release: EngineRelease,
        feature: str,
        *,
        backend_id: int | None = None,
        accelerator: Accelerator | None = None,
    ) -> Cell | None:
        """The most specific cell of `feature` that applies to this backend and accelerator.

        A cell narrowed to a backend, vendor or family applies only when they match; with no
        applicable cell the catalog holds no evidence either way.
        """
        vendor = accelerator.vendor if accelerator is not None else ""
        family = accelerator.family if accelerator is not None else ""
        applicable = [
            cell
            for cell in self.cells.get((release.pk, feature), ())
            if cell.backend_id in (None, backend_id)
            and cell.vendor in ("", vendor)
            and cell.family in ("", family)
        ]
        return max(applicable, key=Cell.specificity, default=None)
