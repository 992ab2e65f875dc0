"""Published measurements: AIConfigurator's sample as sourced catalog rows, the held-out split,
an idempotent audited import, and the nearest rows to a goal with how their conditions differ."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import PublishedMeasurement
from apps.catalog.published_sample import (
    COPY_CONFLICTING,
    COPY_REPEATED,
    SOURCE_AS_OF,
    SOURCE_NAME,
    SampleError,
    held_out,
    parse_sample,
    read_sample,
    repeated_runs,
)
from apps.catalog.selectors import PublishedGoal, nearest_published_many
from apps.catalog.services import published_import
from tests.catalog.published_rows import CSV_ROW, sample_row
from tests.selections.catalog_fixture import load_catalog

needs_wheel = pytest.mark.skipif(
    not aiconfigurator_wheel.AVAILABLE, reason=aiconfigurator_wheel.UNAVAILABLE_REASON
)
SYSTEM = Actor.system("test")


def _sample_rows():
    return PublishedMeasurement.objects.filter(source_name=SOURCE_NAME)


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


def test_copies_of_one_run_count_once_and_copies_that_disagree_on_the_layout_not_at_all() -> None:
    first = sample_row(id="a")
    # the same figures exported again, in another collection and under another model's name
    again = sample_row(id="b", model_path="meta-llama/Llama-3.1-70B", silicon_data_source="x")
    other_run = sample_row(id="c", silicon_ttft_ms="80.6")
    labelled_tp2 = sample_row(id="d", silicon_ttft_ms="90", tp_size="2")
    labelled_tp4 = sample_row(id="e", silicon_ttft_ms="90", tp_size="4")

    left_out = repeated_runs([again, labelled_tp4, other_run, first, labelled_tp2])

    assert left_out == {"b": COPY_REPEATED, "d": COPY_CONFLICTING, "e": COPY_CONFLICTING}


@needs_wheel
def test_the_sample_repeats_runs_and_holds_some_held_out_runs_under_a_fitting_name_too() -> None:
    rows = [row for row in read_sample(aiconfigurator_wheel.sample_path()) if row.aggregated]
    held = {row.run for row in rows if row.held_out}
    fitting = [row for row in rows if not row.held_out]
    assert repeated_runs(fitting)  # the exports overlap: the fit must not count a run twice
    assert held & {row.run for row in fitting}  # the fit per engine never keys by run, though


def test_a_sample_record_keeps_its_conditions_and_concurrency() -> None:
    row = sample_row()
    assert (row.model_slug, row.accelerator_slug, row.engine_slug) == (
        "llama-3.1-8b",
        "h100-sxm",
        "vllm",
    )
    assert (row.precision, row.isl, row.osl, row.concurrency, row.tp) == ("bf16", 1024, 256, 16, 1)
    assert row.measured_on.isoformat() == "2026-04-17"


def test_a_gpt_oss_run_the_sample_labels_fp4_is_read_as_its_checkpoints_own_mxfp4() -> None:
    # Labelled fp4 with nvfp4 modes even on H100, which runs no FP4 format natively.
    gpt_oss = sample_row(
        model_path="openai/gpt-oss-120b", precision="fp4", system="h100_sxm", moe_quant_mode="nvfp4"
    )
    assert (gpt_oss.model_slug, gpt_oss.precision) == ("gpt-oss-120b", "mxfp4")
    assert gpt_oss.moe_quant_mode == "nvfp4"  # the stated modes stay as the sample gives them
    nvfp4 = sample_row(model_path="nvidia/Qwen3-32B-NVFP4", precision="fp4")
    assert nvfp4.precision == "fp4"  # an NVFP4 checkpoint keeps its word


def test_an_aggregated_record_keeps_its_engine_batch_and_quantisation_in_aiconfigurators_terms():
    capped = sample_row(batch_size="4", gemm_quant_mode="fp8", moe_quant_mode="fp8_block")
    assert (capped.concurrency, capped.batch_size) == (16, 4)  # the engine queued 12 clients
    assert (capped.gemm_quant_mode, capped.moe_quant_mode) == ("fp8", "fp8_block")
    assert (sample_row().gemm_quant_mode, sample_row().moe_quant_mode) == ("", "")
    disaggregated = sample_row(mode="disagg", decode_tp_size="1", decode_batch_size="8")
    assert disaggregated.batch_size is None  # the pools' own batches are in its layout


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
    assert _sample_rows().count() == 5221
    stats = StringIO()
    call_command("catalog_stats", stdout=stats)
    assert "sample rows representable: 5221 of 5221 (100.0%)" in stats.getvalue()
    held = Counter(_sample_rows().filter(held_out=True).values_list("mode", flat=True))
    assert held["agg"] == 314


@needs_wheel
@pytest.mark.django_db
def test_loading_the_curated_data_imports_the_published_sample_after_the_catalog() -> None:
    out = StringIO()
    call_command("load_curated", stdout=out)
    assert "5221 created" in out.getvalue()
    call_command("load_curated", stdout=out)  # safe to run again
    assert "already up to date (5221 rows)" in out.getvalue()
    assert _sample_rows().count() == 5221


@pytest.mark.django_db
def test_without_the_wheel_the_import_says_why_and_only_if_available_exits_cleanly(
    monkeypatch,
) -> None:
    # The wheel exists for manylinux x86_64 only; this is what another platform sees.
    monkeypatch.setattr(aiconfigurator_wheel, "AVAILABLE", False)
    load_catalog()
    out = StringIO()
    call_command("published_import", if_available=True, stdout=out)
    assert "not imported" in out.getvalue()
    assert aiconfigurator_wheel.UNAVAILABLE_REASON in out.getvalue()
    with pytest.raises(CommandError, match="pass --file"):
        call_command("published_import")
    assert not _sample_rows().exists()


@pytest.mark.django_db
def test_the_command_refuses_an_unreadable_file_with_a_message(tmp_path: Path) -> None:
    broken = tmp_path / "sample.csv"
    broken.write_text("id,backend\nx,vllm\n")
    with pytest.raises(CommandError, match="missing column"):
        call_command("published_import", file=str(broken))


GOAL = PublishedGoal(
    model_slug="llama-3.1-8b",
    accelerator_slug="h100-sxm",
    engine_slug="vllm",
    engine_version="0.19.0",
    precision="bf16",
    tp=1,
    ep=1,
    pp=1,
    dp=1,
    isl=1024,
    osl=256,
    concurrency=16,
)


def _nearest(goal: PublishedGoal) -> list[dict]:
    return nearest_published_many([goal])[0]


def _import(*rows) -> None:
    load_catalog()
    published_import(actor=SYSTEM, rows=list(rows))


@pytest.mark.django_db
def test_the_nearest_rows_put_the_exact_conditions_first_and_list_how_a_near_row_differs() -> None:
    _import(
        sample_row(id="near", isl="4096", silicon_data_source="db-dump; silicon_concurrency=64"),
        sample_row(id="exact"),
        sample_row(id="sglang", backend="sglang", backend_version="0.5.6"),
    )

    found = _nearest(GOAL)

    assert [entry["source"]["row"] for entry in found] == ["exact", "near", "sglang"]
    assert found[0]["differences"] == [] and found[0]["distance"] == 0
    assert found[0]["evidence"] == "published"
    assert (found[0]["ttft_ms"], found[0]["tpot_ms"]) == (80.5, 7.25)
    assert found[1]["differences"] == [
        "ISL 4096 vs the goal's 1024",
        "concurrency 64 vs the goal's 16",
    ]
    assert found[2]["differences"] == ["engine sglang 0.5.6 vs the stack's vllm 0.19.0"]
    source = found[0]["source"]
    assert (source["name"], source["licence"], source["as_of"]) == (
        SOURCE_NAME,
        "Apache-2.0",
        SOURCE_AS_OF,
    )
    assert source["url"].startswith("https://")


@pytest.mark.django_db
def test_a_run_the_source_exported_twice_is_listed_once_among_the_nearest_rows() -> None:
    _import(
        sample_row(id="exact"),
        sample_row(id="exact-again", silicon_data_source="2026-04-06.csv; silicon_concurrency=16"),
        sample_row(id="slower", silicon_ttft_ms="95"),
    )

    found = _nearest(GOAL)

    assert [entry["source"]["row"] for entry in found] == ["exact", "slower"]


@pytest.mark.django_db
def test_a_gpt_oss_stack_finds_the_samples_fp4_labelled_runs_at_its_own_precision() -> None:
    _import(sample_row(id="gpt-oss", model_path="openai/gpt-oss-120b", precision="fp4"))

    found = _nearest(replace(GOAL, model_slug="gpt-oss-120b", precision="mxfp4"))

    assert [entry["source"]["row"] for entry in found] == ["gpt-oss"]
    assert found[0]["differences"] == [] and found[0]["distance"] == 0


@pytest.mark.django_db
def test_a_row_on_another_accelerator_ranks_after_every_row_on_the_stacks_own() -> None:
    _import(
        sample_row(id="h200-exact", system="h200_sxm"),
        sample_row(id="h100-far", backend="sglang", precision="fp8", tp_size="2"),
    )

    found = _nearest(GOAL)

    assert [entry["source"]["row"] for entry in found] == ["h100-far", "h200-exact"]
    assert found[1]["differences"] == ["accelerator h200-sxm vs the stack's h100-sxm"]
    assert found[0]["differences"] == [
        "engine sglang 0.19.0 vs the stack's vllm 0.19.0",
        "precision fp8 vs the stack's bf16",
        "TP 2 vs the stack's 1",
    ]


@pytest.mark.django_db
def test_a_goal_at_a_rate_says_each_rows_fixed_concurrency_differs_from_it() -> None:
    _import(sample_row(id="exact", backend_version="0.12.0"))

    (entry,) = _nearest(replace(GOAL, concurrency=None, rate_rps=4.0))

    assert entry["differences"] == [
        "engine version 0.12.0 vs the stack's 0.19.0",
        "concurrency 16 (closed loop) vs the goal's rate of 4 req/s (open loop)",
    ]


@pytest.mark.django_db
def test_a_goal_at_a_rate_weighs_its_predicted_requests_in_flight_against_each_rows_clients():
    many = {
        "silicon_data_source": "db-dump/2026-04-27; silicon_concurrency=256; measured=2026-04-17",
        "batch_size": "256",
        "silicon_ttft_ms": "900",
        "silicon_tpot_ms": "21",
    }
    _import(sample_row(id="sixteen"), sample_row(id="many", **many))
    rate = replace(GOAL, concurrency=None, rate_rps=4.0)

    unpredicted = [entry["source"]["row"] for entry in _nearest(rate)]
    light = _nearest(replace(rate, predicted_in_flight=14))
    heavy = _nearest(replace(rate, predicted_in_flight=240))

    # without a predicted time no load is weighed: the two rows tie, listed by their row ids
    assert unpredicted == ["many", "sixteen"]
    assert [entry["source"]["row"] for entry in light] == ["sixteen", "many"]
    assert [entry["source"]["row"] for entry in heavy] == ["many", "sixteen"]
    assert light[0]["distance"] < light[1]["distance"]
    assert light[0]["differences"][-1] == (
        "concurrency 16 (closed loop) vs the goal's rate of 4 req/s "
        "(open loop, about 14 in flight by the stack's predicted time)"
    )


@pytest.mark.django_db
def test_a_held_out_row_is_shown_as_evidence_and_says_no_fit_used_it() -> None:
    # sha256("Qwen/Qwen3-32B|h100_sxm|vllm") is 0 mod 5: the row is held out
    _import(sample_row(id="held", model_path="Qwen/Qwen3-32B"), sample_row(id="fitted"))

    (held,) = _nearest(replace(GOAL, model_slug="qwen3-32b"))
    (fitted,) = _nearest(GOAL)

    assert held["held_out"] is True and "no fitted factor used this row" in held["fit_use"]
    assert fitted["held_out"] is False and "may have fitted" in fitted["fit_use"]


@pytest.mark.django_db
def test_a_model_without_published_rows_gets_none_and_a_stack_elsewhere_gets_its_models() -> None:
    _import(sample_row())

    assert _nearest(replace(GOAL, model_slug="llama-3.1-70b")) == []
    (elsewhere,) = _nearest(replace(GOAL, accelerator_slug="mi300x"))
    assert elsewhere["differences"] == ["accelerator h100-sxm vs the stack's mi300x"]


@pytest.mark.django_db
def test_many_goals_are_answered_in_one_query_with_at_most_three_rows_each(
    django_assert_num_queries,
) -> None:
    _import(
        *(
            sample_row(id=f"c{n}", batch_size=str(n), silicon_data_source="x")
            for n in (1, 2, 4, 8, 16)
        )
    )
    goals = [replace(GOAL, concurrency=n) for n in (1, 6, 64)] + [
        replace(GOAL, model_slug="qwen3-32b")
    ]

    with django_assert_num_queries(1):
        answers = nearest_published_many(goals)

    assert [[entry["concurrency"] for entry in rows] for rows in answers] == [
        [1, 2, 4],
        [8, 4, 16],
        [16, 8, 4],
        [],
    ]
