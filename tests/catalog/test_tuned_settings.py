"""The settings each engine's own documentation recommends per workload class: every curated
one carries its source URL and as-of date, the release page and the API show them, and a
release without any says the catalog has none."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.urls import reverse
from stackselect_domain.tuning import WORKLOAD_CLASSES, tunable_part

from apps.catalog.loading import FIXTURE_DIR, checked_recommendations
from apps.catalog.models import EngineRelease

URL = re.compile(r"https?://[^\s)]+")
# The engines whose documentation the catalog took recommendations from (llama.cpp's server
# README lists defaults only, so it has none).
DOCUMENTED = {"vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi"}
TRT_TUNING_PAGE = (
    "https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/"
    "tuning-max-batch-size-and-max-num-tokens.html"
)


def _curated_recommendations() -> list[tuple[str, dict]]:
    engines = json.loads((FIXTURE_DIR / "engines.json").read_text(encoding="utf-8"))
    return [
        (engine["slug"], entry)
        for engine in engines
        for release in engine["releases"]
        for entry in release.get("tuned") or []
    ]


def test_every_tuned_setting_in_the_curated_catalog_has_a_source_url_and_an_as_of_date():
    recommendations = _curated_recommendations()
    assert {slug for slug, _ in recommendations} == DOCUMENTED
    for slug, entry in recommendations:
        where = f"{slug} {entry.get('workload_class')}"
        assert entry["workload_class"] in WORKLOAD_CLASSES, where
        assert URL.search(entry["source"]), where
        assert dt.date.fromisoformat(entry["as_of"]) <= dt.date(2026, 12, 2), where
        assert entry["engine_flags"] or entry["note"], where  # what the docs said, in words
        tunable_part(entry["settings"])  # applied settings are whole numbers of sweep words


def test_a_recommendation_whose_source_names_no_url_is_refused():
    entry = {"workload_class": "short_chat", "settings": {}, "source": "the docs",
             "as_of": "2026-12-02"}  # fmt: skip
    with pytest.raises(ValueError, match="http"):
        checked_recommendations([entry])


def _release(slug: str) -> EngineRelease:
    return EngineRelease.objects.get(engine__slug=slug)


def _rows(html: str) -> dict[str, str]:
    """The tuned-settings table's rows by workload class (a class's rows joined)."""
    rows: dict[str, str] = {}
    for key, row in re.findall(r'<tr data-workload-class="(\w+)">(.*?)</tr>', html, re.S):
        rows[key] = rows.get(key, "") + row
    return rows


def test_the_release_page_shows_each_tuned_setting_with_its_source_link_and_date(
    catalog, alice_client
):
    page = alice_client.get(reverse("catalog:release", args=[_release("tensorrt-llm").pk]))
    rows = _rows(page.content.decode())
    assert page.status_code == 200 and set(rows) == set(WORKLOAD_CLASSES)
    chat = rows["short_chat"]
    assert "--max_batch_size 512" in chat and "max_num_seqs=512" in chat
    assert f'href="{TRT_TUNING_PAGE}"' in chat and "2026-12-02" in chat
    # The memory fraction is documented but not a sweep word: shown, not applied.
    busy = rows["high_concurrency"]
    assert "--kv_cache_free_gpu_memory_fraction 0.95" in busy and "shown, not applied" in busy


def test_a_workload_class_without_a_documented_setting_says_the_catalog_has_none(
    catalog, alice_client
):
    html = alice_client.get(reverse("catalog:release", args=[_release("lmdeploy").pk])).content
    rows = _rows(html.decode())
    empty = {key for key, row in rows.items() if "no sourced recommendation for this class" in row}
    assert empty == {"short_chat", "high_concurrency"} and "long_prompts" in rows


def test_a_release_without_any_tuned_setting_shows_the_empty_state(catalog, alice_client):
    html = alice_client.get(reverse("catalog:release", args=[_release("llama-cpp").pk])).content
    text = html.decode()
    assert "data-tuned-settings-empty" in text and "data-tuned-settings>" not in text
    assert "no sourced recommendation" in text


def test_the_release_api_exposes_the_tuned_settings_with_their_sources(catalog, alice_client):
    release = _release("tgi")
    body = alice_client.get(reverse("catalog-release-detail", args=[release.pk])).json()
    assert body["tuned_settings"] == release.tuned_settings
    assert {entry["workload_class"] for entry in body["tuned_settings"]} == set(WORKLOAD_CLASSES)
    assert all(URL.search(entry["source"]) for entry in body["tuned_settings"])
