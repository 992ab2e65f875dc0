"""A plan's tuning trials and quality section, the runner's probe upload, the plan page's
checklist."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.benchmarks.models import QualityResult
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create

pytestmark = pytest.mark.django_db
DOCS = "https://docs.example/tuning (test row)"
SHORT_CHAT = {"workload_class": "short_chat", "settings": {"max_num_batched_tokens": 2048},
              "source": DOCS, "as_of": "2026-12-01"}  # fmt: skip


def _plan(alice, acme, selection, **options):
    options = PlanOptions(
        run_mode="simulated", request_count=4, load_points=({"rate_rps": 1.0},), **options
    )
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def test_a_plan_applies_the_releases_documented_setting_for_the_workload_class(
    alice, acme, selection, rows, sim_runner
):
    rows["release"].tuned_settings = [SHORT_CHAT]
    rows["release"].save(update_fields=["tuned_settings"])
    job = _plan(alice, acme, selection).jobs.get()
    assert job.tuning["origin"] == "recommended" and job.tuning["source"] == DOCS
    assert job.tuning["workload_class"] == "short_chat"
    assert job.engine["options"]["max_num_batched_tokens"] == 2048


def test_without_a_documented_setting_the_job_runs_the_defaults_and_the_plan_page_says_so(
    client, alice, acme, selection, sim_runner
):
    plan = _plan(alice, acme, selection)
    assert plan.jobs.get().tuning["origin"] == "defaults"
    client.force_login(alice)
    page = client.get(reverse("benchmarks:plan-detail", args=[plan.pk])).content.decode()
    assert 'data-item="tuned_settings" data-status="not_met"' in page
    assert 'data-item="same_requests" data-status="met"' in page
    # One load point is a single point, not a curve.
    assert 'data-item="curves" data-status="not_met"' in page


def test_a_sweep_makes_one_job_per_setting_and_the_plan_page_counts_it_as_tuned(
    client, alice, acme, selection, sim_runner
):
    plan = _plan(alice, acme, selection, tuning_sweep=True, tuning_values={"max_num_seqs": [8]})
    assert [job.tuning["settings"] for job in plan.jobs.order_by("pk")] == [
        {},
        {"max_num_seqs": 8},
    ]
    client.force_login(alice)
    page = client.get(reverse("benchmarks:plan-detail", args=[plan.pk])).content.decode()
    assert 'data-item="tuned_settings" data-status="met"' in page


def test_each_trial_records_its_settings_in_the_candidates_own_engine_knobs(
    alice, acme, selection, sim_runner
):
    plan = _plan(
        alice, acme, selection, tuning_sweep=True,
        tuning_values={"max_num_seqs": [8], "cuda_graph_max_batch": [64]},
    )  # fmt: skip
    (defaults, swept) = plan.jobs.order_by("pk")
    assert defaults.tuning["engine_knobs"] == {} and defaults.tuning["engine"] == "vllm"
    assert swept.tuning["engine_knobs"] == {
        "--max-num-seqs": 8,
        "--max-cudagraph-capture-size": 64,
    }
    assert swept.engine["options"]["cuda_graph_max_batch"] == 64


def test_a_sweep_over_a_setting_the_candidates_engine_lacks_is_refused_while_planning(
    alice, acme, selection, sim_runner
):
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "engine": "llama-cpp"}
    candidate.save(update_fields=["stack"])

    with pytest.raises(ValidationError) as refused:
        _plan(alice, acme, selection, tuning_sweep=True,
              tuning_values={"cuda_graph_max_batch": [64]})  # fmt: skip

    assert "llama-cpp has no knob for cuda_graph_max_batch" in str(refused.value)
    assert not selection.benchmark_plans.exists()


def test_a_capture_limit_sweep_on_lmdeploys_turbomind_is_refused_while_planning(
    alice, acme, selection, sim_runner
):
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "engine": "lmdeploy", "precision": "bf16"}
    candidate.save(update_fields=["stack"])

    with pytest.raises(ValidationError) as refused:
        _plan(alice, acme, selection, tuning_sweep=True,
              tuning_values={"cuda_graph_max_batch": [64]})  # fmt: skip

    assert "lmdeploy (TurboMind) has no knob for cuda_graph_max_batch" in str(refused.value)
    assert not selection.benchmark_plans.exists()


def test_a_capture_limit_sweep_on_lmdeploy_with_an_fp8_kv_cache_plans_for_its_pytorch_engine(
    alice, acme, selection, sim_runner
):
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "engine": "lmdeploy", "precision": "bf16"}
    candidate.save(update_fields=["stack"])
    selection.workload = {**selection.workload, "kv_dtype": "fp8"}
    selection.save(update_fields=["workload"])

    plan = _plan(alice, acme, selection, tuning_sweep=True,
                 tuning_values={"cuda_graph_max_batch": [64]})  # fmt: skip

    assert [job.tuning["settings"] for job in plan.jobs.order_by("pk")] == [
        {},
        {"cuda_graph_max_batch": 64},
    ]


def test_a_sweep_over_an_unknown_setting_is_refused_by_name(alice, acme, selection):
    with pytest.raises(ValueError, match="unknown setting"):
        PlanOptions(tuning_sweep=True, tuning_values={"gpu_memory_fraction": [1]})


def test_the_job_spec_carries_the_probe_greedy_unless_the_stack_samples_its_own_way(
    alice, acme, selection, sim_runner
):
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "sampling": {"temperature": 1.7}}
    candidate.save(update_fields=["stack"])
    job = _plan(alice, acme, selection).jobs.get()
    assert job.quality["sampling"]["temperature"] == 1.7
    assert len(job.quality["prompts"]) == 8 and job.quality["endpoint"] == "completions"
    _, api = sim_runner
    attempt = job.attempts.get()
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    assert api.get(f"attempts/{attempt.pk}/spec").json()["quality"] == job.quality


def test_the_runners_probe_upload_is_scored_by_the_server_and_bad_ones_are_refused(
    attempt, sim_runner
):
    _, api = sim_runner
    assert api.post(f"attempts/{attempt.pk}/claim").status_code == 200
    path = f"attempts/{attempt.pk}/quality"
    too_many = {"outputs": [{"id": "add", "text": "12"}] * 9}
    assert api.post(path, too_many).status_code == 400
    assert api.post(path, {"outputs": [{"text": "12"}]}).status_code == 400
    answer = api.post(path, {"outputs": [{"id": "add", "text": "12"}, {"id": "sky", "text": "x"}]})
    assert answer.status_code == 201, answer.content
    # A dry run's probe is scored as simulated, never as a measured quality.
    assert answer.json()["score"] == {"correct": 1, "total": 2, "rate": 0.5, "mode": "simulated"}
    assert api.post(path, {"outputs": []}).status_code == 201  # sent again: replaced
    assert QualityResult.objects.get(attempt=attempt).outputs == []
    api.post(f"attempts/{attempt.pk}/finish", {"state": "cancelled", "reason": ""})
    assert api.post(path, {"outputs": []}).status_code == 409
