"""Catalog corrections as a user meets them: CPU goals, AMD multi-GPU estimates, vLLM INT8,
LMDeploy DeepSeek-V3, llama.cpp on ROCm, TGI's dated status, and lengths bounded at entry."""

from __future__ import annotations

import datetime

import pytest

from apps.catalog.models import Accelerator, Engine
from apps.selections import services
from apps.selections.choices import CandidateOutcome
from apps.selections.models import Selection
from tests.selections.helpers import create_selection
from tests.selections.test_pages import FORM

pytestmark = pytest.mark.django_db
URL = "/api/v1/selections/"


def _compute(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    return services.candidates_compute(actor_user=user, selection=selection)


def _rows(selection, outcome, **stack):
    rows = selection.candidates.filter(outcome=outcome)
    for key, value in stack.items():
        rows = rows.filter(**{f"stack__{key}": value})
    return list(rows)


def _codes(rows):
    return {reason["code"] for row in rows for reason in row.reasons}


def test_a_cpu_only_goal_is_accepted_and_lists_llama_cpp_and_ollama(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["workload"].update(precision="q4_k_m", max_context=4096)
    goal_payload["constraints"].update(accelerators=["cpu"], max_gpus=1)

    response = alice_client.post(URL, goal_payload, content_type="application/json")
    assert response.status_code == 201, response.json()
    assert response.json()["constraints"]["accelerators"] == ["xeon-8480plus"]

    selection = _compute(alice, acme, goal_payload)
    kept = _rows(selection, CandidateOutcome.KEPT)
    engines = {row.stack["engine"] for row in kept}
    assert {"llama-cpp", "ollama"} <= engines
    assert all(row.stack["accelerator"] == "xeon-8480plus" for row in kept)
    llama = next(row for row in kept if row.stack["engine"] == "llama-cpp")
    assert llama.stack["backends"] == ["ggml_cpu"]
    assert llama.estimate["goodput_per_gpu_rps"] > 0


def test_an_unknown_accelerator_or_vendor_word_is_still_a_400(catalog, alice_client, goal_payload):
    goal_payload["constraints"]["accelerators"] = ["quantum-9000"]

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    assert response.status_code == 400
    assert "quantum-9000" in str(response.json()["constraints"]["accelerators"])


def test_an_eight_gpu_mi300x_goal_gets_estimates(catalog, alice, acme, goal_payload):
    goal_payload["workload"]["model"] = "llama-3.1-405b"
    goal_payload["constraints"].update(accelerators=["mi300x"], max_gpus=8)

    selection = _compute(alice, acme, goal_payload)

    dropped = _rows(selection, CandidateOutcome.DROPPED, accelerator="mi300x", gpu_count=8)
    assert "interconnect_unknown" not in _codes(dropped)
    kept = _rows(selection, CandidateOutcome.KEPT, accelerator="mi300x", gpu_count=8)
    assert kept and all("goodput_per_gpu_rps" in row.estimate for row in kept)
    assert any(row.estimate.get("latency", {}).get("tpot_ms", 0) > 0 for row in kept)
    assert Accelerator.objects.get(slug="mi300x").sources["interconnect_gbps"]["as_of"]


def test_vllm_int8_stacks_are_kept_on_hopper_and_refused_on_blackwell(
    catalog, alice, acme, goal_payload
):
    goal_payload["workload"]["precision"] = "int8"
    goal_payload["constraints"].update(accelerators=["h100-sxm", "b200"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    assert _rows(selection, CandidateOutcome.KEPT, engine="vllm", accelerator="h100-sxm")
    blackwell = _rows(selection, CandidateOutcome.DROPPED, engine="vllm", accelerator="b200")
    assert "precision_unsupported" in _codes(blackwell)


def test_lmdeploy_is_offered_deepseek_v3_with_an_unlabelled_support_hint(
    catalog, alice, acme, goal_payload
):
    goal_payload["workload"].update(model="deepseek-v3", precision="fp8")
    goal_payload["constraints"].update(accelerators=["h200-sxm"], max_gpus=8)

    selection = _compute(alice, acme, goal_payload)

    lmdeploy = selection.candidates.filter(stack__engine="lmdeploy")
    assert lmdeploy.exists()
    assert "model_unverified" not in _codes(lmdeploy)
    kept = [row for row in lmdeploy if row.outcome == CandidateOutcome.KEPT]
    assert kept and any(hint["code"] == "unlabelled_support" for hint in kept[0].hints)


def test_llama_cpp_on_amd_runs_the_hip_backend_not_cuda(catalog, alice, acme, goal_payload):
    goal_payload["workload"]["precision"] = "q4_k_m"
    goal_payload["constraints"].update(accelerators=["mi300x"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    rows = selection.candidates.filter(stack__engine="llama-cpp")
    assert {row.stack["backend"] for row in rows} == {"ggml_hip", "ggml_vulkan"}
    hip = [row for row in rows if row.stack["backend"] == "ggml_hip"]
    assert hip[0].outcome == CandidateOutcome.KEPT


def test_an_fp8_kv_cache_llama_cpp_refuses_drops_it_for_its_kv_cache_not_its_weights(
    catalog, alice, acme, goal_payload
):
    goal_payload["workload"].update(precision="q4_k_m", kv_dtype="fp8")
    goal_payload["constraints"].update(accelerators=["mi300x"], max_gpus=1)

    selection = _compute(alice, acme, goal_payload)

    codes = _codes(_rows(selection, CandidateOutcome.DROPPED, engine="llama-cpp"))
    assert "kv_precision_unsupported" in codes
    assert "precision_unsupported" not in codes


def test_tgi_project_status_is_maintenance_checked_with_a_date_and_source(catalog):
    tgi = Engine.objects.get(slug="tgi")

    assert tgi.status == "maintenance"
    assert tgi.status_as_of == datetime.date(2026, 12, 1)
    assert "maintenance mode since 2025-12-11" in tgi.status_source


def test_lengths_past_the_models_context_are_a_400_on_the_field(
    catalog, alice_client, goal_payload
):
    goal_payload["workload"]["isl"] = {"kind": "fixed", "value": 1_000_000_000}

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    assert response.status_code == 400
    assert "value" in response.json()["workload"]["isl"]
    goal_payload["workload"]["isl"] = {"kind": "fixed", "value": 131_000}
    goal_payload["workload"]["max_context"] = 200_000

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    errors = response.json()["workload"]
    assert response.status_code == 400
    assert "131,256 tokens) exceeds the 131,072-token context" in errors["osl"]["value"][0]
    assert "max_context" in errors
    assert not Selection.objects.exists()


def test_lengths_within_the_context_are_accepted(catalog, alice_client, goal_payload):
    goal_payload["workload"]["isl"] = {"kind": "fixed", "value": 120_000}
    goal_payload["workload"]["max_context"] = 131_072

    response = alice_client.post(URL, goal_payload, content_type="application/json")

    assert response.status_code == 201, response.json()


def test_the_goal_form_shows_the_context_bound_on_the_length_field(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "isl_tokens": "500000"})

    form = response.context["form"]
    assert "context" in " ".join(form.errors["isl_tokens"])
    assert not Selection.objects.exists()
