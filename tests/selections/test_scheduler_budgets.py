"""Scheduler budgets of a simulated replica: the release's recorded defaults, and the named
fallbacks only where the catalog records none."""

from __future__ import annotations

import pytest

from apps.catalog.models import EngineRelease
from apps.selections.catalog_adapter import (
    FALLBACK_BLOCK_SIZE,
    FALLBACK_MAX_SEQS,
    engine_config,
    scheduler_budgets,
)


def _release(slug: str) -> EngineRelease:
    return EngineRelease.objects.get(engine__slug=slug)


@pytest.mark.django_db
def test_tensorrt_llm_is_simulated_with_its_llm_apis_recorded_defaults(catalog) -> None:
    release = _release("tensorrt-llm")

    config = engine_config(release, kv_capacity_tokens=1_000_000)

    # 2,048 sequences, 8,192 tokens and 32-token blocks, each with the defaults' source: not
    # the fallbacks (256, 2,048, 16) that applied before they were recorded.
    assert (config.max_num_seqs, config.max_num_batched_tokens) == (2048, 8192)
    assert config.kv_block_size == 32
    assert "max_batch_size=2048" in release.defaults_source
    # Recorded as unknown on purpose (the defaults' source says why): simulated chunked.
    assert release.chunked_prefill_default is None and config.chunked_prefill


@pytest.mark.django_db
def test_a_budget_the_release_does_not_record_falls_back_to_the_named_default(catalog) -> None:
    release = _release("llama-cpp")  # records a 2,048-token budget but no sequence limit
    assert release.max_num_seqs is None and release.max_num_batched_tokens == 2048

    budgets = scheduler_budgets(release)
    config = engine_config(release, kv_capacity_tokens=1_000_000)

    assert budgets.max_num_seqs == FALLBACK_MAX_SEQS
    assert budgets.max_num_batched_tokens == 2048
    assert config.kv_block_size == FALLBACK_BLOCK_SIZE
