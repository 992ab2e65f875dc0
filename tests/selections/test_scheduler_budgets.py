"""Scheduler budgets of a simulated replica: the release's recorded defaults on the replica's
accelerator (the budget tiers an engine resolves from the GPU), and the named fallbacks only
where the catalog records none."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from apps.catalog.loading import FIXTURE_DIR, fixture_instances
from apps.catalog.models import Accelerator, EngineRelease
from apps.catalog.shapes import budget_tier_list
from apps.selections.catalog_adapter import (
    FALLBACK_BLOCK_SIZE,
    FALLBACK_MAX_SEQS,
    engine_config,
    scheduler_budgets,
    scheduler_record,
)


def _release(slug: str) -> EngineRelease:
    return EngineRelease.objects.get(engine__slug=slug)


def _budgets(engine: str, accelerator: str) -> tuple[int, int]:
    budgets = scheduler_budgets(_release(engine), Accelerator.objects.get(slug=accelerator))
    return budgets.max_num_batched_tokens, budgets.max_num_seqs


@pytest.mark.django_db
def test_tensorrt_llm_is_simulated_with_its_llm_apis_recorded_defaults(catalog) -> None:
    release = _release("tensorrt-llm")

    config = engine_config(
        release, Accelerator.objects.get(slug="h100-sxm"), kv_capacity_tokens=1_000_000
    )

    # 2,048 sequences, 8,192 tokens and 32-token blocks, each with the defaults' source: not
    # the fallbacks (256, 2,048, 16) that applied before they were recorded.
    assert (config.max_num_seqs, config.max_num_batched_tokens) == (2048, 8192)
    assert config.kv_block_size == 32
    assert "max_batch_size=2048" in release.defaults_source
    # Chunked prefill off, as its LLM API defaults: only a prompt over the budget is refused.
    assert release.chunked_prefill_default is False and not config.chunked_prefill
    assert config.unchunked_prompt_only and "_check_arguments" in release.defaults_source
    vllm = engine_config(
        _release("vllm"), Accelerator.objects.get(slug="h100-sxm"), kv_capacity_tokens=1_000_000
    )
    assert vllm.chunked_prefill and not vllm.unchunked_prompt_only


@pytest.mark.django_db
def test_a_prefix_cache_off_by_default_is_not_assumed_in_the_simulated_replica(catalog) -> None:
    release = _release("vllm")
    h100 = Accelerator.objects.get(slug="h100-sxm")
    assert engine_config(release, h100, kv_capacity_tokens=1_000_000).prefix_caching

    release.prefix_cache_default_on = False  # as vLLM 0.6 shipped it: --enable-prefix-caching
    config = engine_config(release, h100, kv_capacity_tokens=1_000_000)

    assert release.prefix_cache_kind == "hash_blocks" and not config.prefix_caching


@pytest.mark.django_db
def test_a_budget_the_release_does_not_record_falls_back_to_the_named_default(catalog) -> None:
    release = _release("llama-cpp")  # records a 2,048-token budget but no sequence limit
    assert release.max_num_seqs is None and release.max_num_batched_tokens == 2048

    budgets = scheduler_budgets(release, Accelerator.objects.get(slug="h100-sxm"))
    config = engine_config(
        release, Accelerator.objects.get(slug="h100-sxm"), kv_capacity_tokens=1_000_000
    )

    assert budgets.max_num_seqs == FALLBACK_MAX_SEQS
    assert budgets.max_num_batched_tokens == 2048
    assert config.kv_block_size == FALLBACK_BLOCK_SIZE


@pytest.mark.django_db
def test_vllm_takes_the_budgets_its_release_resolves_from_the_gpu_it_starts_on(catalog) -> None:
    # vLLM 0.33.0's OpenAI server: 16,384 tokens from 160 GiB, 8,192 from 70 GiB unless an
    # A100, 2,048 tokens and 256 sequences below; TPUs and CPUs by their own rules.
    assert _budgets("vllm", "b200") == (16384, 1024)
    assert _budgets("vllm", "mi300x") == (16384, 1024)
    assert _budgets("vllm", "h100-sxm") == (8192, 1024)
    assert _budgets("vllm", "rtx-pro-6000-server") == (8192, 1024)
    assert _budgets("vllm", "a100-sxm-80gb") == (2048, 256)  # 80 GB, but an A100
    assert _budgets("vllm", "l40s") == (2048, 256)
    assert _budgets("vllm", "tpu-v6e") == (1024, 256)
    assert _budgets("vllm", "xeon-8480plus") == (2048, 128)


@pytest.mark.django_db
def test_sglang_takes_the_chunked_prefill_size_it_resolves_from_the_gpus_memory(catalog) -> None:
    release = _release("sglang")

    tokens = {slug: _budgets("sglang", slug)[0] for slug in ("l4", "l40s", "h200-sxm", "b200")}

    assert tokens == {"l4": 4096, "l40s": 4096, "h200-sxm": 8192, "b200": 16384}
    # No sequence limit is recorded (resolved at run time), so the fallback applies everywhere.
    assert _budgets("sglang", "b200")[1] == FALLBACK_MAX_SEQS
    assert "memory_hook.py" in release.defaults_source


def test_no_catalog_accelerator_lies_within_5_percent_of_a_budget_tiers_memory_bound() -> None:
    """Engines compare the memory the device reports; we compare the catalog's figure, which is
    a few percent off it. Near a bound that difference could pick the other tier."""
    accelerators = fixture_instances(Accelerator, "accelerators").values()
    engines = json.loads((FIXTURE_DIR / "engines.json").read_text())
    bounds = {
        tier["memory_gb_below"]
        for engine in engines
        for release in engine["releases"]
        for tier in (release.get("defaults") or {}).get("budget_tiers", [])
        if "memory_gb_below" in tier
    }
    assert bounds, "the fixtures record memory tiers"

    close = [
        (accelerator.slug, bound)
        for accelerator in accelerators
        for bound in bounds
        if abs(accelerator.memory_gb - bound) / bound < 0.05
    ]

    assert close == []


@pytest.mark.parametrize(
    "tiers",
    [
        {"memory_gb_below": 60},  # not a list
        [{"max_num_batched_tokens": 4096}],  # no bound
        [{"memory_gb_below": 60, "accelerators": ["l4"], "max_num_seqs": 8}],  # both bounds
        [{"memory_gb_below": 0, "max_num_batched_tokens": 4096}],
        [{"memory_gb_below": 60}],  # no budget
        [{"memory_gb_below": 60, "max_num_batched_tokens": 40.5}],
        [{"accelerators": "l4", "max_num_seqs": 8}],
        [{"memory_gb_below": 60, "max_num_seqs": 8, "chunked": True}],
    ],
)
def test_a_budget_tier_of_another_shape_is_refused(tiers) -> None:
    with pytest.raises(ValidationError):
        budget_tier_list(tiers)


@pytest.mark.django_db
def test_a_tier_that_names_no_accelerators_is_matched_by_its_memory_bound(catalog) -> None:
    release = _release("sglang")
    release.budget_tiers = [
        {"memory_gb_below": 100, "accelerators": None, "max_num_batched_tokens": 1024}
    ]

    budgets = scheduler_budgets(release, Accelerator.objects.get(slug="h100-sxm"))

    assert budgets.max_num_batched_tokens == 1024


@pytest.mark.django_db
def test_the_scheduler_record_says_where_each_budget_comes_from(catalog) -> None:
    l40s, h100 = (Accelerator.objects.get(slug=slug) for slug in ("l40s", "h100-sxm"))

    tiered = scheduler_record(_release("vllm"), l40s)
    recorded = scheduler_record(_release("tensorrt-llm"), h100)
    partly = scheduler_record(_release("llama-cpp"), h100)
    no_engine = scheduler_record(None, h100)

    assert (tiered["max_num_batched_tokens"], tiered["max_num_seqs"]) == (2048, 256)
    assert tiered["note"] == (
        "scheduled as vLLM 0.33.0 schedules: 2,048 tokens per step (its default on the NVIDIA "
        "L40S), 256 sequences (its default on the NVIDIA L40S)"
    )
    assert "8,192 tokens per step (its recorded default)" in recorded["note"]
    assert f"{FALLBACK_MAX_SEQS} sequences (not recorded: our fallback)" in partly["note"]
    assert no_engine["note"].startswith("no engine named: our fallback budgets")


def test_a_well_formed_budget_tier_list_is_accepted() -> None:
    budget_tier_list(
        [
            {
                "accelerators": ["a100-sxm-80gb"],
                "max_num_batched_tokens": 2048,
                "max_num_seqs": 256,
            },
            {"memory_gb_below": 70.5, "max_num_batched_tokens": 2048},
        ]
    )
