"""The sampling temperature is a plan option: greedy unless the team chooses otherwise, checked
on the form and in the API, sent with every request the runner's harness makes, and part of the
run identity, so runs sampled differently neither pool nor compare."""

from __future__ import annotations

import json

import pytest
from stackselect_domain.identity import comparability, fingerprint
from stackselect_runner.harness import HarnessSpec
from stackselect_runner.harness.streaming import request_body

from apps.benchmarks.models import BenchmarkPlan
from apps.benchmarks.plan_identity import PlanOptionError, PlanOptions
from apps.benchmarks.selectors import attempt_spec
from apps.benchmarks.services import plan_create
from apps.evidence.run_identity import runner_identity
from tests.benchmarks.test_plan_speculative_decoding import FORM

pytestmark = pytest.mark.django_db
PLANS = "/api/v1/benchmarks/plans/"


def _plan(alice, acme, selection, **options) -> BenchmarkPlan:
    options = PlanOptions(request_count=4, load_points=({"rate_rps": 1.0},), **options)
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def _first_request_body(plan: BenchmarkPlan) -> dict:
    """The body the runner's harness sends for the plan's first request, from the job spec."""
    spec = HarnessSpec.from_job_spec(
        attempt_spec(plan.jobs.get().attempts.get()), "http://127.0.0.1:1"
    )
    return json.loads(request_body(spec, spec.requests[0], "hello world"))


def _run_identity(plan: BenchmarkPlan) -> dict:
    job = plan.jobs.get()
    return runner_identity(plan_identity=plan.identity, stack=job.stack, engine={}, harness={})


def test_a_plan_decodes_greedily_unless_told_otherwise_and_every_request_asks_for_it(
    alice, acme, selection
):
    plan = _plan(alice, acme, selection)
    assert plan.temperature == 0
    assert _first_request_body(plan)["temperature"] == 0
    warm = _plan(alice, acme, selection, temperature=0.7)
    assert _first_request_body(warm)["temperature"] == 0.7


def test_a_plan_without_a_temperature_sends_none_and_keeps_the_run_identity_it_had(
    alice, acme, selection
):
    plan = _plan(alice, acme, selection, temperature=None)
    assert "temperature" not in _first_request_body(plan)
    assert "extra_body" not in attempt_spec(plan.jobs.get().attempts.get())["harness"]
    # The arrival part of the identity is what it was before plans chose a temperature.
    assert set(_run_identity(plan)["arrival"]) == {"process", "seed", "request_count", "endpoint"}


def test_runs_sampled_differently_neither_pool_nor_compare(alice, acme, selection):
    greedy, warm, unset = (
        _run_identity(_plan(alice, acme, selection, temperature=value))
        for value in (0.0, 0.7, None)
    )
    assert len({fingerprint(greedy), fingerprint(warm), fingerprint(unset)}) == 3
    assert comparability(greedy, warm).differing == ("arrival.temperature",)
    assert comparability(greedy, _run_identity(_plan(alice, acme, selection))).comparable


@pytest.mark.parametrize("value", [-0.1, 2.5, True, float("nan")])
def test_plan_options_refuse_a_temperature_outside_0_to_2_by_name(value):
    with pytest.raises(PlanOptionError) as refused:
        PlanOptions(temperature=value)
    assert refused.value.field == "temperature"
    assert "from 0 to 2" in str(refused.value)


@pytest.mark.parametrize("value", [-0.1, 2.5, "warm"])
def test_the_api_refuses_a_temperature_it_cannot_send_naming_the_field(
    alice_client, selection, value
):
    response = alice_client.post(
        PLANS,
        {"selection": selection.pk, "request_count": 4, "temperature": value},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["temperature"]
    assert not BenchmarkPlan.objects.exists()


@pytest.mark.parametrize(("sent", "stored"), [({}, 0.0), ({"temperature": 0.6}, 0.6),
                                              ({"temperature": None}, None)])  # fmt: skip
def test_the_api_plans_with_the_temperature_it_was_given_and_answers_it(
    alice_client, selection, sent, stored
):
    response = alice_client.post(
        PLANS,
        {"selection": selection.pk, "request_count": 4, **sent},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["temperature"] == stored
    plan = BenchmarkPlan.objects.get()
    assert plan.temperature == stored
    read = alice_client.get(f"{PLANS}{plan.pk}/").json()
    assert read["temperature"] == stored


def test_the_plan_form_takes_a_temperature_and_the_plan_page_names_the_sampling(
    alice_client, selection
):
    url = f"/benchmarks/new/{selection.pk}/"
    refused = alice_client.post(url, {**FORM, "temperature": "3"})
    assert "temperature" in refused.context["form"].errors
    assert not BenchmarkPlan.objects.exists()
    pages = {}
    for value in ("0", "0.6", ""):
        assert alice_client.post(url, {**FORM, "temperature": value}).status_code == 302
        plan = BenchmarkPlan.objects.latest("pk")
        pages[value] = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert "greedy decoding (temperature 0)" in pages["0"]
    assert "sampling at temperature 0.6" in pages["0.6"]
    assert "each engine samples at its own default" in pages[""]
