"""The Markdown export against a committed golden file (UPDATE_GOLDEN=1 rewrites it)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.decisions.choices import DecisionStatus, TriggerKind
from apps.decisions.export import estimate_text, record_markdown
from apps.decisions.models import DecisionRecord, RetestTrigger

GOLDEN = Path(__file__).parent / "golden" / "record.md"
STACK = {
    "engine": "vllm",
    "engine_version": "0.8.0",
    "backend": "flash-attn",
    "accelerator": "h100-sxm",
    "gpu_count": 1,
    "tp": 1,
    "pp": 1,
    "ep": 1,
    "dp": 1,
    "precision": "bf16",
}
CELL = {
    "id": 41,
    "feature": "prefix_caching",
    "maturity": "stable",
    "release": "vLLM 0.8.0",
    "backend": None,
    "vendor": "",
    "family": "",
    "as_of": "2026-01-15",
    "evidence_url": "https://docs.example.org/prefix-caching",
}
GOAL = {
    "selection_id": 12,
    "selection_title": "Chat assistant",
    "model": {"slug": "llama-3.1-8b", "name": "Llama 3.1 8B", "checkpoint": "meta/llama-8b"},
    "workload": {
        "isl": {"kind": "lognormal", "median": 900, "sigma": 0.6},
        "osl": {"kind": "fixed", "value": 256},
        "arrival": {"process": "gamma", "rate_rps": 4.0, "burstiness": 0.5},
        "precision": "bf16",
    },
    "slo": {"ttft_ms": 500, "tpot_ms": 50, "percentile": 99, "attainment": 0.99},
    "capacity": {"accelerators": ["h100-sxm", "l40s"], "max_gpus": 2, "prices": {}},
    "operational": {
        "needs": ["openai_api"],
        "required_features": [{"feature": "prefix_caching", "min_maturity": "beta"}],
    },
}


def candidate(key: str, accelerator: str, cells: list) -> dict:
    return {
        "key": key,
        "candidate_id": 100 + ord(key),
        "rank": ord(key) - 64,
        "outcome": "kept",
        "label": f"vllm 0.8.0 on 1x {accelerator}",
        "stack": {**STACK, "accelerator": accelerator},
        "release": {"id": 3, "engine": "vllm", "version": "0.8.0"},
        "backend": "flash-attn",
        "accelerator": {"slug": accelerator, "name": accelerator, "vendor": "nvidia"},
        "capabilities": cells,
        "estimate": {
            "goodput_per_gpu_rps": 3.2,
            "goodput_method": "aiconfigurator, simulated",
            "gpus_for_peak": 2,
            "ttft_ms": 180.0,
            "tpot_ms": 21.0,
            "latency_method": "roofline, analytic",
            "error_band": {
                "ttft_ms": {"band": {"p10": -0.5875, "p90": 1.8981}, "rows": 299},
                "tpot_ms": {"band": {"p10": -0.4709, "p90": 0.2385}, "rows": 299},
                "e2e_ms": {"band": None, "reason": "no held-out accuracy measured"},
            },
        },
    }


EVIDENCE = [
    {
        "run_id": 8,
        "candidate_key": "A",
        "source": "runner",
        "mode": "measured",
        "tool": "stackselect-harness",
        "tool_version": "0.1",
        "identity_fingerprint": "ab" * 32,
        "plan_id": 5,
        "runner": {"id": 2, "name": "h100-box"},
        "raw_checksums": [{"name": "result upload 30", "sha256": "cd" * 32, "bytes": 900}],
        "load_points": [
            {
                "index": 0,
                "load_point": {"index": 0, "rate_rps": 4.0},
                "request_throughput_rps": 3.98,
                "goodput_rps": 3.9,
                "slo_attainment": 0.98,
                "errors": 2,
                "requests": 1200,
                "ttft_p50_ms": 120.0,
                "ttft_p99_ms": 410.5,
                "tpot_p50_ms": 19.0,
                "tpot_p99_ms": 27.25,
            }
        ],
        "predicted_vs_measured": [
            {"metric": "ttft_ms", "predicted": 180.0, "measured": 150.0, "ratio": 0.8333}
        ],
    }
]


@pytest.fixture
def record(acme, alice, bob):
    older = DecisionRecord.objects.create(
        team=acme, number=6, title="Old choice", goal=GOAL, candidates=[], evidence=[]
    )
    record = DecisionRecord.objects.create(
        team=acme,
        number=7,
        title="Serve the chat assistant on vLLM",
        status=DecisionStatus.ACCEPTED,
        created_by=alice,
        proposed_by=alice,
        decided_by=bob,
        decided_at=datetime(2026, 2, 3, 10, 0, tzinfo=UTC),
        supersedes=older,
        goal=GOAL,
        candidates=[candidate("A", "h100-sxm", [CELL]), candidate("B", "l40s", [])],
        evidence=EVIDENCE,
        chosen_key="A",
        rationale="A holds the SLO at the goal rate on one GPU.",
        dropped={"B": "B misses TTFT at 4 req/s."},
        risks="Prefix caching is new in this release.",
        retest_kinds=[TriggerKind.MODEL, TriggerKind.AGE],
        revalidate_after_days=90,
        retest_needed=True,
    )
    trigger = RetestTrigger.objects.create(
        record=record,
        kind=TriggerKind.MODEL,
        key="checkpoint:meta/llama-8b-rev2",
        reason="The model now points at a new checkpoint.",
    )
    RetestTrigger.objects.filter(pk=trigger.pk).update(fired_at=datetime(2026, 3, 1, tzinfo=UTC))
    return record


def test_the_markdown_export_matches_the_golden_file(record):
    markdown = record_markdown(record)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(markdown)
    assert markdown == GOLDEN.read_text()


def test_the_front_matter_names_status_date_deciders_and_supersedes(record):
    front = record_markdown(record).split("---")[1]
    assert 'status: "accepted"' in front
    assert 'date: "2026-02-03"' in front
    assert 'deciders: ["alice", "bob"]' in front
    assert 'supersedes: "DR-6"' in front


def test_a_simulation_only_record_says_so_in_its_title_and_front_matter(record):
    record.evidence = [{**EVIDENCE[0], "mode": "simulated"}]
    record.simulation_only = True
    markdown = record_markdown(record)
    front = markdown.split("---")[1]
    assert 'title: "Serve the chat assistant on vLLM (simulation only)"' in front
    assert 'evidence: "simulated"' in front and "simulation_only: true" in front
    assert "# DR-7: Serve the chat assistant on vLLM (simulation only)" in markdown
    assert "> **Evidence: simulated.** The evidence is simulated only" in markdown
    assert "- Evidence: simulated" in markdown


def test_a_candidate_without_a_figure_shows_none_rather_than_zero():
    assert estimate_text({}) == "no prediction"
    partial = estimate_text({"ttft_ms": 180.0, "tpot_ms": 21.0, "error_band": {"ttft_ms": None}})
    assert partial == "TTFT 180 ms, TPOT 21 ms (method not recorded)"


def test_the_export_says_at_what_load_a_latency_holds_per_replica_on_a_stack_of_replicas():
    figures = {"ttft_ms": 180.0, "tpot_ms": 21.0, "latency_method": "roofline, analytic"}

    one = estimate_text({**figures, "latency_in_flight": 56, "replicas": 1})
    four = estimate_text({**figures, "latency_in_flight": 56, "replicas": 4})

    assert one == "TTFT 180 ms, TPOT 21 ms at 56 in flight (roofline, analytic)"
    assert four == (
        "TTFT 180 ms, TPOT 21 ms at 56 in flight per replica (224 over the 4 replicas) "
        "(roofline, analytic)"
    )


def band(covers_stack: bool | None) -> dict:
    return {
        "band": {"p10": -0.4, "p90": 0.6},
        "rows": 299,
        "measured_for": {"engines": ["sglang", "vllm"], "vendors": ["nvidia"]},
        "covers_stack": covers_stack,
    }


def test_a_band_measured_on_other_engines_or_hardware_says_so_in_the_export():
    text = estimate_text(
        {"ttft_ms": 180.0, "tpot_ms": 21.0, "error_band": {"ttft_ms": band(False)}}
    )
    assert "error band (10th to 90th percentile over 299 held-out published rows)" in text
    assert "TTFT -40% to +60%" in text
    assert text.endswith(
        "measured on other engines or hardware than this stack's, so no measured bound for it,"
        " on sglang, vllm with nvidia GPUs"
    )


def test_a_band_measured_on_this_stacks_engine_and_vendor_carries_no_warning():
    for covers_stack in (True, None):
        text = estimate_text({"error_band": {"tpot_ms": band(covers_stack)}})
        assert text == (
            "error band (10th to 90th percentile over 299 held-out published rows)"
            " TPOT -40% to +60%"
        )
