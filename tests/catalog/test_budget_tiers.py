"""Budgets an engine resolves from the GPU it starts on: loaded from the fixtures with the
release's defaults and shown on the release page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from apps.catalog.models import EngineRelease


def _release(slug: str) -> EngineRelease:
    return EngineRelease.objects.get(engine__slug=slug)


@pytest.mark.django_db
def test_the_curated_releases_load_their_budget_tiers(catalog) -> None:
    vllm, sglang = _release("vllm"), _release("sglang")

    assert {"memory_gb_below": 160, "max_num_batched_tokens": 8192, "max_num_seqs": 1024} in (
        vllm.budget_tiers
    )
    assert [tier["memory_gb_below"] for tier in sglang.budget_tiers] == [20, 60, 160]
    assert _release("tensorrt-llm").budget_tiers == []  # one budget on every GPU


def test_the_release_page_lists_each_tier_in_the_order_the_engine_checks_them(
    catalog, alice_client
) -> None:
    page = alice_client.get(reverse("catalog:release", args=[_release("vllm").pk]))
    tiers = re.search(r"<tr data-budget-tiers>(.*?)</tr>", page.content.decode(), re.S)

    assert page.status_code == 200 and tiers
    lines = re.findall(r"<li>(.*?)</li>", tiers.group(1))
    assert lines[3] == "a100-sxm-80gb: 2,048 tokens, 256 sequences"
    assert lines[-1] == "below 160 GB: 8,192 tokens, 1,024 sequences"


def test_a_release_without_tiers_shows_no_tier_row(catalog, alice_client) -> None:
    page = alice_client.get(reverse("catalog:release", args=[_release("tensorrt-llm").pk]))

    assert page.status_code == 200 and "data-budget-tiers" not in page.content.decode()
