"""The TensorRT-LLM performance overview's throughput tables as published rows: every cell read
with its layout and source, the representable ones imported once and audited, the rest named
with why, and shown beside a stack as maximum-load capacity with no latency made up."""

from __future__ import annotations

from dataclasses import replace
from io import StringIO

import pytest
from django.core.management import call_command

from apps.audit.models import AuditEvent
from apps.catalog import published_overview
from apps.catalog.choices import PublishedScenario
from apps.catalog.models import PublishedMeasurement
from apps.catalog.published_overview import (
    OverviewError,
    parse_overview,
    parse_row,
    read_overview,
)
from apps.catalog.selectors import UNFITTED_NOTE, nearest_published_many
from tests.catalog.published_rows import OVERVIEW_GOAL
from tests.selections.catalog_fixture import load_catalog

CELL = {
    "table": "LLaMA v3.3 70B",
    "checkpoint": "nvidia/Llama-3.3-70B-Instruct-FP8",
    "system": "H200",
    "layout": "TP2",
    "precision": "FP8",
    "isl": "1000",
    "osl": "1000",
    "output_tokens_s_per_gpu": "2587",
}
HEADER = ",".join(published_overview.COLUMNS)


def _file(*cells: dict[str, str]) -> list[str]:
    return [HEADER] + [
        ",".join(cell[name] for name in published_overview.COLUMNS) for cell in cells
    ]


def _overview_rows():
    return PublishedMeasurement.objects.filter(source_name=published_overview.SOURCE_NAME)


def test_the_shipped_table_reads_whole_and_the_catalog_holds_every_cell() -> None:
    rows = read_overview()

    assert len(rows) == 150
    assert len({row.key for row in rows}) == 150
    kept = [row for row in rows if row.representable]
    assert len(kept) == 150
    assert {row.model_slug for row in kept} == {
        "deepseek-r1",
        "gpt-oss-120b",
        "gpt-oss-20b",
        "llama-3.3-70b",
        "llama-4-maverick",
        "qwen3-235b-a22b",
        "qwen3-30b-a3b",
    }
    assert {row.accelerator_slug for row in kept} == {
        "h100-sxm",
        "h200-sxm",
        "b200",
        "gb200",
        "rtx-pro-6000-server",
    }
    assert all(row.ttft_ms is None and row.tpot_ms is None for row in rows)


def test_the_rtx_pro_6000_cells_are_the_server_edition_with_their_published_layouts() -> None:
    rtx = [row for row in read_overview() if row.accelerator_slug == "rtx-pro-6000-server"]

    assert len(rtx) == 27
    assert {row.system for row in rtx} == {"RTX 6000 Pro Blackwell Server Edition"}
    assert {row.model_slug for row in rtx} == {"llama-3.3-70b", "qwen3-235b-a22b", "qwen3-30b-a3b"}
    assert {row.precision for row in rtx} == {"fp4"}
    # "DEP2,PP2": two attention-DP ranks with the experts over them, in two pipeline stages
    layouts = {(row.layout_label, row.tp, row.pp, row.ep, row.dp) for row in rtx}
    assert ("DEP2,PP2", 1, 2, 2, 2) in layouts
    assert ("TP1,PP1", 1, 1, None, None) in layouts


def test_a_cell_keeps_its_layout_precision_and_figure_as_published() -> None:
    dense = parse_row(CELL)
    attention_dp = parse_row(
        {**CELL, "checkpoint": "nvidia/Qwen3-235B-A22B-FP4", "layout": "DEP4", "precision": "FP4"}
    )
    pipelined = parse_row({**CELL, "layout": "TP1,PP2"})
    gpt_oss = parse_row({**CELL, "checkpoint": "openai/gpt-oss-20b", "precision": "FP4"})

    assert (dense.tp, dense.pp, dense.ep, dense.dp) == (2, 1, None, None)
    assert (attention_dp.tp, attention_dp.ep, attention_dp.dp) == (1, 4, 4)
    assert (pipelined.tp, pipelined.pp) == (1, 2)
    assert (dense.model_slug, dense.accelerator_slug, dense.engine_slug) == (
        "llama-3.3-70b",
        "h200-sxm",
        "tensorrt-llm",
    )
    assert dense.precision == "fp8" and dense.output_tokens_s_per_gpu == 2587.0
    assert dense.scenario == PublishedScenario.MAX_THROUGHPUT
    # gpt-oss ships MXFP4 experts; the overview calls that FP4, NVIDIA's own FP4 is NVFP4
    assert (gpt_oss.precision, attention_dp.precision) == ("mxfp4", "fp4")
    assert "column H200 TP2 (FP8)" in dense.detail


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"layout": "EP8"}, "line 2: layout: 'EP8' is not TPn or DEPn"),
        ({"precision": "INT4"}, "line 2: precision: 'INT4' is not one of FP8, FP4"),
        ({"isl": "1k"}, "line 2: isl: '1k' is not a positive whole number"),
        ({"output_tokens_s_per_gpu": "fast"}, "line 2: output_tokens_s_per_gpu: 'fast'"),
        ({"output_tokens_s_per_gpu": "0"}, "line 2: output_tokens_s_per_gpu: 0.0 must be"),
    ],
)
def test_a_bad_cell_is_refused_naming_its_line_and_column(change, message) -> None:
    with pytest.raises(OverviewError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_overview(_file({**CELL, **change}))


def test_a_file_without_a_column_or_with_a_cell_twice_is_refused() -> None:
    with pytest.raises(OverviewError, match="missing column"):
        parse_overview(["table,checkpoint", "x,y"])
    with pytest.raises(OverviewError, match="two cells share"):
        parse_overview(_file(CELL, CELL))


@pytest.mark.django_db
def test_the_command_imports_every_cell_once_and_leaves_none_out(
    monkeypatch,
) -> None:
    # Only the overview: the sample's own import is covered in test_published.py.
    monkeypatch.setattr("apps.catalog.aiconfigurator_wheel.AVAILABLE", False)
    load_catalog()
    out = StringIO()

    call_command("published_import", if_available=True, stdout=out)
    call_command("published_import", if_available=True, stdout=out)

    said = out.getvalue()
    assert f"{published_overview.SOURCE_NAME}: 150 created, 0 updated, 0 unchanged." in said
    assert f"{published_overview.SOURCE_NAME}: already up to date (150 rows)." in said
    assert "cell(s) not imported" not in said
    assert _overview_rows().count() == 150
    assert _overview_rows().filter(accelerator__slug="rtx-pro-6000-server").count() == 27
    assert AuditEvent.objects.filter(action="published.import").count() == 1
    row = _overview_rows().get(
        checkpoint="nvidia/Llama-3.3-70B-Instruct-FP8", system="H200", isl=1000, osl=1000
    )
    assert (row.ttft_ms, row.tpot_ms, row.concurrency) == (None, None, None)
    assert (row.output_tokens_s_per_gpu, row.scenario) == (2587.0, "max_throughput")
    assert (row.source_url, row.licence, row.held_out) == (
        published_overview.SOURCE_URL,
        "Apache-2.0",
        False,
    )
    stats = StringIO()
    call_command("catalog_stats", stdout=stats)
    assert "TensorRT-LLM overview cells representable: 150 of 150" in stats.getvalue()


GOAL = replace(OVERVIEW_GOAL, concurrency=32)


@pytest.mark.django_db
def test_a_stack_gets_the_overviews_nearest_cell_as_capacity_with_no_latency_made_up(
    monkeypatch,
) -> None:
    monkeypatch.setattr("apps.catalog.aiconfigurator_wheel.AVAILABLE", False)
    load_catalog()
    call_command("published_import", if_available=True, stdout=StringIO())

    nearest, *_ = nearest_published_many([GOAL])[0]
    (open_loop, *_) = nearest_published_many([replace(GOAL, concurrency=None, rate_rps=2.0)])[0]
    (no_load, *_) = nearest_published_many([replace(GOAL, concurrency=None)])[0]

    assert nearest["source"]["name"] == published_overview.SOURCE_NAME
    assert (nearest["ttft_ms"], nearest["tpot_ms"]) == (None, None)
    assert nearest["output_tokens_s_per_gpu"] == 2587.0
    assert nearest["differences"] == [
        "maximum load (every request queued at once) vs the goal's concurrency 32"
    ]
    assert nearest["fit_use"] == UNFITTED_NOTE
    assert open_loop["differences"] == [
        "maximum load (every request queued at once) vs the goal's rate of 2 req/s"
    ]
    assert no_load["differences"] == [] and no_load["distance"] == 0
