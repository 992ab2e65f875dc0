import hashlib
import json

import pytest
from django.core.exceptions import ValidationError
from stackselect_domain.workload import Workload, generate_requests

from apps.audit.models import AuditEvent
from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.estimator import ModelArch, Parallelism, build_step_cost
from tests.benchmarks.factories import WORKLOAD, selection_with_candidates


def test_each_chosen_candidate_becomes_a_job_under_one_identity(alice, acme, rows):
    selection = selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16"), ("l40s", 2, "bf16")]
    )
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions(seed=7)
    )
    jobs = list(plan.jobs.order_by("pk"))
    assert [(job.accelerator, job.gpu_count) for job in jobs] == [("h100-sxm", 1), ("l40s", 2)]
    identity = plan.identity
    assert identity["model"]["checkpoint"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert identity["model"]["tokenizer"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert identity["precision"] == "bf16" and identity["kv_dtype"] == "bf16"
    assert identity["workload"]["seed"] == 7
    assert identity["workload"]["arrival"] == WORKLOAD["arrival"]
    assert identity["simulated"] is False
    assert plan.run_mode == "measured"
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert plan.identity_fingerprint == hashlib.sha256(canonical.encode()).hexdigest()
    # Default load points: half, once and twice the goal's 2 req/s.
    assert plan.load_points == [
        {"index": 0, "rate_rps": 1.0},
        {"index": 1, "rate_rps": 2.0},
        {"index": 2, "rate_rps": 4.0},
    ]
    selection.refresh_from_db()
    assert selection.state == "planned"
    assert AuditEvent.objects.filter(action="plan.create", object_id=str(plan.pk)).exists()


def test_the_schedule_is_the_seeded_unit_rate_workload(alice, acme, selection):
    options = PlanOptions(seed=11, request_count=50)
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)
    expected = generate_requests(Workload.from_dict(WORKLOAD), 50, 11, rate_rps=1.0)
    assert [r["arrival_s"] for r in plan.requests] == [round(r.arrival_s, 6) for r in expected]
    assert {r["input_tokens"] for r in plan.requests} == {512}


def test_the_simulated_engine_gets_the_candidates_step_cost(alice, acme, selection, rows):
    plan = plan_create(
        actor_user=alice,
        team=acme,
        selection_id=selection.pk,
        options=PlanOptions(run_mode="simulated"),
    )
    engine = plan.jobs.get().engine
    expected = build_step_cost(
        model=model_arch(rows["model"]),
        accel=accelerator_spec(rows["h100"]),
        precision="bf16",
        kv_dtype="bf16",
        parallelism=Parallelism(),
        decode_batch=16,
        context=512 + 128 / 2,
    )
    assert engine["adapter"] == "simulated"
    assert engine["options"]["step_cost"] == expected.as_dict()
    assert engine["options"]["max_num_seqs"] == 128  # the release's recorded default
    assert isinstance(model_arch(rows["model"]), ModelArch)


def test_a_different_seed_is_a_different_identity(alice, acme, selection):
    first = plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions(seed=1)
    )
    second = plan_create(
        actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions(seed=2)
    )
    assert first.identity_fingerprint != second.identity_fingerprint


def test_candidates_of_two_precisions_cannot_share_a_plan(alice, acme, rows):
    selection = selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16"), ("h100-sxm", 1, "fp8")]
    )
    with pytest.raises(ValidationError, match="bf16 and fp8"):
        plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions())
    assert not BenchmarkPlan.objects.exists()


def test_a_selection_without_chosen_candidates_cannot_be_planned(alice, acme, rows):
    selection = selection_with_candidates(acme, alice, rows, layouts=[])
    with pytest.raises(ValidationError, match="at least one candidate"):
        plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions())


@pytest.mark.parametrize(
    ("points", "field"),
    [
        (({"rate_rps": -1},), "rate_rps"),
        (({"rate_rps": 1, "concurrency": 2},), "exactly one"),
    ],
)
def test_bad_load_points_are_refused_naming_them(alice, acme, selection, points, field):
    with pytest.raises(ValidationError, match=field):
        plan_create(
            actor_user=alice,
            team=acme,
            selection_id=selection.pk,
            options=PlanOptions(load_points=points),
        )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"isl": {"kind": "uniform"}}, "isl.kind: must be fixed, normal"),
        ({"arrival": {"process": "trace", "trace": 999999}}, "arrival.trace: your team has no"),
    ],
)
def test_a_stored_workload_that_no_longer_parses_is_refused_under_workload(
    alice, acme, selection, change, words
):
    selection.workload = {**selection.workload, **change}
    selection.save(update_fields=["workload"])
    with pytest.raises(ValidationError) as refused:
        plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions())
    assert list(refused.value.message_dict) == ["workload"]
    assert words in refused.value.message_dict["workload"][0]
    assert not BenchmarkPlan.objects.exists()


def test_a_custom_model_whose_architecture_fails_the_estimators_check_is_refused_under_model(
    alice, acme, selection
):
    selection.model = None
    selection.custom_model = {"name": "tiny", "params_total_b": 0}
    selection.save(update_fields=["model", "custom_model"])
    with pytest.raises(ValidationError) as refused:
        plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=PlanOptions())
    assert list(refused.value.message_dict) == ["model"]
    assert not BenchmarkPlan.objects.exists()


def test_the_plan_page_creates_a_plan_and_another_team_gets_404(
    alice_client, charlie_client, selection
):
    url = f"/benchmarks/new/{selection.pk}/"
    assert charlie_client.get(url).status_code == 404
    form = alice_client.get(url)
    assert "Llama" not in form.content.decode() or form.status_code == 200
    response = alice_client.post(
        url,
        {
            "mode": "fixed",
            "load_kind": "concurrency",
            "load_levels": "2, 8",
            "request_count": 30,
            "seed": 3,
            "warmup_requests": 2,
            "measurement_window_s": 60,
            "max_error_rate": 0.05,
            "max_attempts": 2,
            "request_timeout_s": 60,
            "endpoint": "chat",
        },
    )
    plan = BenchmarkPlan.objects.get()
    assert response.status_code == 302 and response.url == f"/benchmarks/{plan.pk}/"
    assert plan.load_points == [{"index": 0, "concurrency": 2}, {"index": 1, "concurrency": 8}]
    assert plan.max_attempts == 2 and plan.identity["harness"]["endpoint"] == "chat"
    assert charlie_client.get(f"/benchmarks/{plan.pk}/").status_code == 404


def test_a_viewer_cannot_plan(client, acme, selection, django_user_model):
    from apps.accounts.models import Membership

    viewer = django_user_model.objects.create_user("vic", password="x")
    Membership.objects.create(user=viewer, team=acme, role="viewer")
    with pytest.raises(Exception, match="engineer role"):
        plan_create(actor_user=viewer, team=acme, selection_id=selection.pk, options=PlanOptions())
