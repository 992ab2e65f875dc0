"""Speculative decoding is a plan option: checked on the form and in the API by the rule the
runner parses it with, refused for a candidate whose engine cannot speculate that way, sent to
each measured job as engine.options.speculative (which the runner's adapter turns into the
engine's own flags), part of the plan's identity and of its audit event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from stackselect_domain.identity import fingerprint
from stackselect_domain.speculative import Speculative
from stackselect_runner.config import RunnerSettings
from stackselect_runner.engines import LaunchSpec, StackSettings, get_engine_adapter
from stackselect_runner.jobrun import JobPlan
from stackselect_runner.model_store import ModelStore

from apps.audit.models import AuditEvent
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptionError, PlanOptions
from apps.benchmarks.selectors import attempt_spec
from apps.benchmarks.services import plan_create
from apps.evidence.run_identity import runner_identity

pytestmark = pytest.mark.django_db
PLANS = "/api/v1/benchmarks/plans/"
EAGLE3 = {"method": "eagle3", "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_tokens": 3}
FORM = {
    "mode": "fixed",
    "load_kind": "rate_rps",
    "load_levels": "1",
    "request_count": 4,
    "seed": 0,
    "warmup_requests": 0,
    "measurement_window_s": 60,
    "max_error_rate": 0.05,
    "max_attempts": 1,
    "request_timeout_s": 60,
    "endpoint": "completions",
}


def _plan(alice, acme, selection, speculative: dict | None = None, **options):
    if speculative is not None:
        options["speculative"] = Speculative.from_dict(speculative)
    options = PlanOptions(request_count=4, load_points=({"rate_rps": 1.0},), **options)
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def _post(client, selection, **body):
    return client.post(
        PLANS,
        {"selection": selection.pk, "request_count": 4, **body},
        content_type="application/json",
    )


def _runner_plan(job, tmp_path: Path) -> JobPlan:
    """What a runner makes of the job's spec as it claims it (nothing is started here): its
    model store holds the job's model and, declared a draft of it, the plan's draft model."""
    store = ModelStore(tmp_path / "models.json")
    model = job.engine["model_key"]
    for name in ("model", "draft"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    store.add(model, str(tmp_path / "model"))
    draft = (job.engine["options"].get("speculative") or {}).get("draft_model")
    if draft:
        store.add(draft, str(tmp_path / "draft"), [model])
    store.save()
    settings = RunnerSettings(work_dir=tmp_path / "work", models_file=store.path)
    return JobPlan.from_spec(attempt_spec(job.attempts.get()), settings, job.attempts.get().pk)


def _launch(job, tmp_path: Path) -> LaunchSpec:
    return _runner_plan(job, tmp_path).launch


def _engine(selection, slug: str, **stack) -> None:
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "engine": slug, **stack}
    candidate.save(update_fields=["stack"])


@pytest.mark.parametrize(
    ("speculative", "field", "words"),
    [
        ({"method": "medusa", "num_tokens": 3}, "method", "must be one of draft, eagle"),
        ({"method": "eagle", "num_tokens": 3}, "draft_model", "is required for eagle"),
        ({"method": "draft", "draft_model": "", "num_tokens": 3}, "draft_model", "is required"),
        ({"method": "ngram", "draft_model": "x", "num_tokens": 3}, "draft_model", "not used"),
        ({"method": "ngram", "num_tokens": 0}, "num_tokens", "from 1 to 64, got 0"),
        ({"method": "mtp", "num_tokens": 65}, "num_tokens", "from 1 to 64, got 65"),
    ],
)
def test_the_api_refuses_a_bad_speculative_setting_naming_its_field(
    alice_client, selection, speculative, field, words
):
    response = _post(alice_client, selection, speculative=speculative)
    assert response.status_code == 400, response.content
    (problem,) = response.json()["speculative"][field]
    assert words in problem
    assert not BenchmarkPlan.objects.exists()


def test_the_api_refuses_a_method_the_candidates_engine_cannot_speculate_with(
    alice_client, selection
):
    _engine(selection, "tgi")
    response = _post(alice_client, selection, speculative=EAGLE3)
    assert response.status_code == 400, response.content
    (problem,) = response.json()["speculative"]
    assert "tgi cannot speculate with eagle3 (it can with ngram)" in problem
    assert not BenchmarkPlan.objects.exists()
    # The same engine with the method it has plans.
    ngram = {"method": "ngram", "num_tokens": 4}
    created = _post(alice_client, selection, speculative=ngram)
    assert created.status_code == 201, created.content
    assert created.json()["speculative"] == {**ngram, "draft_model": None}


def test_a_dry_run_with_speculative_decoding_is_refused_since_the_simulator_does_not_model_it(
    alice_client, selection
):
    response = _post(alice_client, selection, mode="simulated", speculative=EAGLE3)
    assert response.status_code == 400, response.content
    assert "does not model speculative decoding" in str(response.json()["speculative"])
    assert not BenchmarkPlan.objects.exists()


def test_the_plan_form_shows_speculative_problems_on_their_fields(alice_client, selection):
    url = f"/benchmarks/new/{selection.pk}/"
    missing = alice_client.post(url, {**FORM, "speculative_method": "eagle"})
    errors = missing.context["form"].errors
    assert "is required for eagle" in errors["speculative_draft_model"][0]
    assert "Give the number of draft tokens" in errors["speculative_num_tokens"][0]
    too_many = alice_client.post(url, {**FORM, "speculative_method": "ngram",
                                       "speculative_num_tokens": 65})  # fmt: skip
    assert "speculative_num_tokens" in too_many.context["form"].errors
    _engine(selection, "lmdeploy")
    refused = alice_client.post(url, {**FORM, "speculative_method": "ngram",
                                      "speculative_num_tokens": 4})  # fmt: skip
    assert (
        "lmdeploy cannot speculate with ngram"
        in refused.context["form"].errors["speculative_method"][0]
    )
    assert not BenchmarkPlan.objects.exists()


def test_the_plan_form_refuses_a_dry_run_with_speculative_decoding_on_its_method(
    alice_client, selection
):
    response = alice_client.post(
        f"/benchmarks/new/{selection.pk}/",
        {**FORM, "run_mode": "simulated", "speculative_method": "ngram",
         "speculative_num_tokens": 4},
    )  # fmt: skip
    assert response.status_code == 200
    (problem,) = response.context["form"].errors["speculative_method"]
    assert "the simulated engine does not model speculative decoding" in problem
    assert not BenchmarkPlan.objects.exists()


def test_the_plan_form_plans_with_speculative_decoding_and_the_plan_page_says_so(
    alice_client, selection
):
    url = f"/benchmarks/new/{selection.pk}/"
    response = alice_client.post(url, {**FORM, "speculative_method": "eagle3",
                                       "speculative_draft_model": EAGLE3["draft_model"],
                                       "speculative_num_tokens": 3})  # fmt: skip
    plan = BenchmarkPlan.objects.get()
    assert response.status_code == 302
    assert plan.jobs.get().engine["options"]["speculative"] == EAGLE3
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert "speculative decoding: eagle3, 3 draft tokens per step" in page


def test_a_speculative_plan_sends_it_to_each_job_and_the_runners_adapter_emits_its_flags(
    alice, acme, selection, tmp_path
):
    job = _plan(alice, acme, selection, speculative=EAGLE3).jobs.get()
    assert job.engine["adapter"] == "vllm"
    assert job.engine["options"]["speculative"] == EAGLE3
    # The runner's side, as it receives the job spec: its model store gives the draft's
    # checkpoint, StackSettings parses the options...
    launch = _launch(job, tmp_path)
    settings = StackSettings.from_options(launch.options)
    assert settings.speculative == Speculative(
        method="eagle3", num_tokens=3, draft_model=EAGLE3["draft_model"]
    )
    assert settings.draft_model_path == str(tmp_path / "draft")
    # ...and the adapter turns them into vLLM's own flag, on the local draft, never the hub's.
    command = get_engine_adapter("vllm").command_for(settings, launch)
    assert json.loads(command[command.index("--speculative-config") + 1]) == {
        "method": "eagle3",
        "model": str(tmp_path / "draft"),
        "num_speculative_tokens": 3,
    }


def test_an_sglang_job_gets_sglangs_speculative_flags_from_the_same_options(
    alice, acme, selection, tmp_path
):
    _engine(selection, "sglang")
    job = _plan(alice, acme, selection, speculative={"method": "mtp", "num_tokens": 2}).jobs.get()
    launch = _launch(job, tmp_path)
    settings = StackSettings.from_options(launch.options)
    command = get_engine_adapter("sglang").command_for(settings, launch)
    assert command[-4:] == [
        "--speculative-algorithm", "NEXTN", "--speculative-num-draft-tokens", "2",
    ]  # fmt: skip


def test_a_plan_without_speculative_decoding_sends_none(alice, acme, selection):
    plan = _plan(alice, acme, selection)
    assert "speculative" not in plan.jobs.get().engine["options"]
    assert "speculative" not in plan.identity


def test_speculative_decoding_is_part_of_the_plan_identity(alice, acme, selection):
    plain = _plan(alice, acme, selection)
    eagle = _plan(alice, acme, selection, speculative=EAGLE3)
    again = _plan(alice, acme, selection, speculative=dict(EAGLE3))
    fewer = _plan(alice, acme, selection, speculative={**EAGLE3, "num_tokens": 2})
    assert eagle.identity["speculative"] == EAGLE3
    assert eagle.identity_fingerprint == again.identity_fingerprint
    fingerprints = {plan.identity_fingerprint for plan in (plain, eagle, fewer)}
    assert len(fingerprints) == 3


def test_runs_of_two_plans_differing_only_in_speculation_do_not_pool(
    alice, acme, selection, tmp_path
):
    """The run identity the evidence pools by, from what the runner's adapter reports; where
    a runner keeps the draft's weights does not count."""
    folders = iter(range(10))

    def run_fingerprint(plan) -> str:
        job = plan.jobs.get()
        runner = _runner_plan(job, tmp_path / f"runner-{next(folders)}")
        config = get_engine_adapter(job.engine["adapter"]).effective_config(runner.launch)
        engine = {"effective_config": config, "version": "0.8.0", "model_store": runner.model_store}
        return fingerprint(
            runner_identity(plan_identity=plan.identity, stack=job.stack, engine=engine, harness={})
        )

    plain, eagle = _plan(alice, acme, selection), _plan(alice, acme, selection, speculative=EAGLE3)
    again = _plan(alice, acme, selection, speculative=EAGLE3)
    assert run_fingerprint(eagle) == run_fingerprint(again)
    assert run_fingerprint(plain) != run_fingerprint(eagle)


def test_the_plan_create_audit_event_records_the_speculative_setting(alice, acme, selection):
    plain = _plan(alice, acme, selection)
    eagle = _plan(alice, acme, selection, speculative=EAGLE3)
    events = AuditEvent.objects.filter(action="plan.create")
    assert events.get(object_id=str(eagle.pk)).after["speculative"] == EAGLE3
    assert events.get(object_id=str(plain.pk)).after["speculative"] is None


def test_lmdeploy_speculating_plans_for_its_pytorch_engine_so_a_capture_limit_sweep_is_allowed(
    alice, acme, selection, tmp_path
):
    _engine(selection, "lmdeploy", precision="bf16")
    sweep = {"tuning_sweep": True, "tuning_values": {"cuda_graph_max_batch": [64]}}
    with pytest.raises(ValidationError, match=r"lmdeploy \(TurboMind\) has no knob"):
        _plan(alice, acme, selection, **sweep)

    plan = _plan(alice, acme, selection, speculative=EAGLE3, **sweep)

    assert [job.tuning["settings"] for job in plan.jobs.order_by("pk")] == [
        {},
        {"cuda_graph_max_batch": 64},
    ]
    swept = plan.jobs.order_by("pk").last()
    command = get_engine_adapter("lmdeploy").build_command(_launch(swept, tmp_path))
    assert command[command.index("--backend") + 1] == "pytorch"
    assert command[command.index("--cudagraph-capture-batch-sizes") + 1] == "1"


def test_plan_options_refuse_speculation_on_a_dry_run_under_the_speculative_field():
    with pytest.raises(PlanOptionError, match=r"^speculative: the simulated engine") as refused:
        PlanOptions(run_mode="simulated", speculative=Speculative("ngram", 2))
    assert refused.value.field == "speculative"


@pytest.mark.parametrize(
    "options, field",
    [
        ({"load_points": [{"rate_rps": 0.0}]}, "load_points"),
        ({"load_mode": "max_rate_search", "load_points": [{"concurrency": 2}]}, "load_points"),
        ({"tuning_sweep": True, "tuning_values": {"gpu_memory_fraction": []}}, "tuning_values"),
    ],
)
def test_a_refused_plan_option_names_its_field_in_the_api(
    alice_client, selection, options: dict, field: str
):
    response = _post(alice_client, selection, **options)
    assert response.status_code == 400, response.content
    assert set(response.json()) == {field}
