"""Simulation is a plan mode chosen explicitly: a measured plan sends each stack's own engine,
never the simulated one, and the mode shows on the plan, its jobs and in the API."""

import re

import pytest

from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.catalog.models import Engine, EngineRelease
from apps.selections.models import Candidate
from tests.benchmarks.factories import stack

pytestmark = pytest.mark.django_db
ENGINE_WORDS = ("precision", "kv_dtype", "tp", "pp", "ep", "dp")


def _llama_candidate(selection, rows) -> Candidate:
    engine = Engine.objects.create(slug="llama-cpp", name="llama.cpp", kind="engine")
    release = EngineRelease.objects.create(engine=engine, version="b10488")
    return Candidate.objects.create(
        selection=selection,
        outcome="kept",
        rank=9,
        release=release,
        accelerator=rows["h100"],
        stack={**stack("h100-sxm"), "engine": "llama-cpp", "precision": "bf16"},
        chosen=True,
    )


def _plan(alice, acme, selection, **options):
    options = PlanOptions(request_count=4, load_points=({"rate_rps": 1.0},), **options)
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def test_a_plan_is_measured_on_the_stacks_own_engine_unless_a_dry_run_is_asked_for(
    alice, acme, selection
):
    plan = _plan(alice, acme, selection)
    engine = plan.jobs.get().engine
    assert plan.run_mode == "measured" and plan.identity["simulated"] is False
    assert engine["adapter"] == "vllm"
    assert engine["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert {key: engine["options"][key] for key in ENGINE_WORDS} == {
        "precision": "bf16",
        "kv_dtype": "bf16",
        "tp": 1,
        "pp": 1,
        "ep": 1,
        "dp": 1,
    }
    assert "step_cost" not in engine["options"]


def test_a_dry_run_sends_every_job_to_the_simulated_engine(alice, acme, selection):
    plan = _plan(alice, acme, selection, run_mode="simulated")
    assert plan.run_mode == "simulated" and plan.identity["simulated"] is True
    assert plan.jobs.get().engine["adapter"] == "simulated"


def test_the_mode_is_part_of_the_identity(alice, acme, selection):
    measured = _plan(alice, acme, selection)
    simulated = _plan(alice, acme, selection, run_mode="simulated")
    assert measured.identity_fingerprint != simulated.identity_fingerprint


def test_a_measured_job_names_its_model_by_slug_for_the_runners_model_store(
    alice, acme, selection, rows
):
    selection.candidates.update(chosen=False)
    _llama_candidate(selection, rows)
    engine = _plan(alice, acme, selection).jobs.get().engine
    assert engine["adapter"] == "llama-cpp"
    assert engine["model_key"] == rows["model"].slug
    # No path of this host goes to another machine: the runner maps the slug to its checkpoint.
    assert "model_path" not in engine["options"]


def test_a_measured_plan_may_mix_engines_each_on_its_own_adapter(alice, acme, selection, rows):
    _llama_candidate(selection, rows)
    plan = _plan(alice, acme, selection)
    adapters = sorted(job.engine["adapter"] for job in plan.jobs.all())
    assert adapters == ["llama-cpp", "vllm"]


def test_an_unknown_run_mode_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^run_mode: must be one of measured, simulated"):
        PlanOptions(run_mode="pretend")


def test_the_plan_form_offers_the_dry_run_and_no_longer_promises_a_fallback(
    alice_client, selection
):
    page = alice_client.get(f"/benchmarks/new/{selection.pk}/").content.decode()
    assert "until real engine adapters arrive" not in page
    assert "Dry run on the simulated engine" in page
    assert re.search(r'<input type="radio" name="run_mode" value="measured"[^>]* checked', page)
    assert not re.search(r'value="simulated"[^>]* checked', page)


def test_the_plan_form_makes_a_dry_run_only_when_chosen(alice_client, selection):
    url = f"/benchmarks/new/{selection.pk}/"
    values = {"mode": "fixed", "load_kind": "rate_rps", "load_levels": "1", "request_count": 4}
    values |= {"seed": 0, "warmup_requests": 0, "measurement_window_s": 60}
    values |= {"max_error_rate": 0.05, "max_attempts": 1, "request_timeout_s": 60}
    values |= {"endpoint": "completions"}
    alice_client.post(url, values)
    alice_client.post(url, {**values, "run_mode": "simulated"})
    modes = list(BenchmarkPlan.objects.order_by("pk").values_list("run_mode", flat=True))
    assert modes == ["measured", "simulated"]
    plan = BenchmarkPlan.objects.order_by("pk").last()
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert page.count('data-mode="simulated"') == 2  # the plan and its one job
    assert "no real engine runs" in page
    job = plan.jobs.get()
    assert (
        'data-mode="simulated"' in alice_client.get(f"/benchmarks/jobs/{job.pk}/").content.decode()
    )
    listing = alice_client.get("/benchmarks/").content.decode()
    assert (
        listing.count('data-mode="measured"') == 1 and listing.count('data-mode="simulated"') == 1
    )


def test_the_api_takes_and_shows_the_mode_on_plans_and_jobs(alice_client, selection):
    response = alice_client.post(
        "/api/v1/benchmarks/plans/",
        {"selection": selection.pk, "mode": "simulated", "request_count": 4},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["mode"], body["load_mode"]) == ("simulated", "fixed")
    assert body["jobs"][0]["mode"] == "simulated"
    assert body["jobs"][0]["engine_adapter"] == "simulated"
    job = alice_client.get(f"/api/v1/benchmarks/jobs/{body['jobs'][0]['id']}/").json()
    assert job["mode"] == "simulated"
    default = alice_client.post(
        "/api/v1/benchmarks/plans/",
        {"selection": selection.pk, "request_count": 4},
        content_type="application/json",
    ).json()
    assert default["mode"] == "measured" and default["jobs"][0]["engine_adapter"] == "vllm"


def test_the_api_names_a_load_mode_sent_as_mode(alice_client, selection):
    response = alice_client.post(
        "/api/v1/benchmarks/plans/",
        {"selection": selection.pk, "mode": "max_rate_search"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "load_mode" in str(response.json())
    assert not BenchmarkPlan.objects.exists()
