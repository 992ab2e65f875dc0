"""Published measurements: AIConfigurator's sample as sourced catalog rows, the held-out split,
an idempotent audited import, and the nearest rows to a goal with how their conditions differ."""

from __future__ import annotations

from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import PublishedMeasurement
from apps.catalog.published_sample import SampleError, held_out, parse_sample, read_sample
from apps.catalog.selectors import PublishedGoal, nearest_published
from apps.catalog.services import published_import
from tests.catalog.published_rows import CSV_ROW, sample_row
from tests.selections.catalog_fixture import load_catalog

needs_wheel = pytest.mark.skipif(
    not aiconfigurator_wheel.AVAILABLE, reason=aiconfigurator_wheel.UNAVAILABLE_REASON
)
SYSTEM = Actor.system("test")


def test_a_row_is_held_out_by_the_hash_of_its_model_system_and_engine() -> None:
    # sha256("Qwen/Qwen3-32B|h100_sxm|vllm") is 0 mod 5; the same model on SGLang is not
    assert held_out("Qwen/Qwen3-32B", "h100_sxm", "vllm")
    assert not held_out("Qwen/Qwen3-32B", "h100_sxm", "sglang")
    assert sample_row(model_path="Qwen/Qwen3-32B").held_out


@needs_wheel
def test_the_held_out_split_is_314_aggregated_rows_in_8_groups() -> None:
    rows = read_sample(aiconfigurator_wheel.sample_path())
    held = [row for row in rows if row.held_out and row.aggregated]
    assert len(rows) == 5221
    assert len(held) == 314
    assert len({(row.model_path, row.system, row.backend) for row in held}) == 8


def test_a_sample_record_keeps_its_conditions_and_concurrency() -> None:
    row = sample_row()
    assert (row.model_slug, row.accelerator_slug, row.engine_slug) == (
        "llama-3.1-8b",
        "h100-sxm",
        "vllm",
    )
    assert (row.precision, row.isl, row.osl, row.concurrency, row.tp) == ("bf16", 1024, 256, 16, 1)
    assert row.measured_on.isoformat() == "2026-04-17"


def test_a_bad_record_names_its_line_and_column() -> None:
    header = ",".join(CSV_ROW)
    good = ",".join(f'"{value}"' for value in CSV_ROW.values())
    bad = good.replace('"80.5"', '"fast"')
    with pytest.raises(SampleError, match=r"line 3: silicon_ttft_ms: 'fast' is not a number"):
        list(parse_sample([header + "\n", good + "\n", bad + "\n"]))


@pytest.mark.django_db
def test_importing_twice_changes_nothing_the_second_time_and_audits_once() -> None:
    load_catalog()
    rows = [sample_row(), sample_row(id="second", isl="2048")]
    first = published_import(actor=SYSTEM, rows=rows)
    second = published_import(actor=SYSTEM, rows=rows)
    assert (first.created, second.created, second.unchanged) == (2, 0, 2)
    assert AuditEvent.objects.filter(action="published.import").count() == 1
    stored = PublishedMeasurement.objects.get(source_key="second")
    assert (stored.isl, stored.licence, stored.model.slug) == (2048, "Apache-2.0", "llama-3.1-8b")
    changed = published_import(actor=SYSTEM, rows=[sample_row(id="second", silicon_ttft_ms="99")])
    assert (changed.updated, PublishedMeasurement.objects.get(source_key="second").ttft_ms) == (
        1,
        99,
    )


@pytest.mark.django_db
def test_an_import_naming_what_the_catalog_lacks_writes_nothing_and_says_which() -> None:
    load_catalog()
    rows = [sample_row(), sample_row(id="x", model_path="acme/Unknown-1B", system="mi300x")]
    with pytest.raises(ValueError, match=r"model \? acme/Unknown-1B.*accelerator \? mi300x"):
        published_import(actor=SYSTEM, rows=rows)
    assert not PublishedMeasurement.objects.exists()


@needs_wheel
@pytest.mark.django_db
def test_every_sample_row_is_representable_and_the_command_imports_them_all() -> None:
    load_catalog()
    out = StringIO()
    call_command("published_import", stdout=out)
    assert "5221 created" in out.getvalue()
    assert PublishedMeasurement.objects.count() == 5221
    stats = StringIO()
    call_command("catalog_stats", stdout=stats)
    assert "sample rows representable: 5221 of 5221 (100.0%)" in stats.getvalue()
    held = Counter(
        PublishedMeasurement.objects.filter(held_out=True).values_list("mode", flat=True)
    )
    assert held["agg"] == 314


@pytest.mark.django_db
def test_the_command_refuses_an_unreadable_file_with_a_message(tmp_path: Path) -> None:
    broken = tmp_path / "sample.csv"
    broken.write_text("id,backend\nx,vllm\n")
    with pytest.raises(CommandError, match="missing column"):
        call_command("published_import", file=str(broken))


@pytest.mark.django_db
def test_nearest_published_puts_the_same_engine_and_lengths_first_and_says_what_differs() -> None:
    load_catalog()
    rows = [
        sample_row(),
        sample_row(id="sglang", backend="sglang"),
        sample_row(id="long", isl="8192", silicon_data_source="db-dump; silicon_concurrency=64"),
    ]
    published_import(actor=SYSTEM, rows=rows)
    goal = PublishedGoal(
        model_slug="llama-3.1-8b",
        accelerator_slug="h100-sxm",
        engine_slug="vllm",
        precision="bf16",
        tp=1,
        isl=1024,
        osl=256,
        concurrency=32,
    )
    found = nearest_published(goal)
    assert [entry["source"]["row"] for entry in found] == [
        "llama_h100_vllm_agg_1024x256_c16",
        "long",
        "sglang",
    ]
    assert found[0]["evidence"] == "published"
    assert found[0]["differences"] == ["concurrency 16 instead of 32"]
    assert "engine SGLang instead of vllm" in found[2]["differences"]
    assert found[0]["source"]["licence"] == "Apache-2.0"
    assert nearest_published(PublishedGoal("llama-3.1-8b", "mi300x", isl=1024, osl=256)) == []
