"""The wizard pages: list, goal form, trace histograms, candidates, plan."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.selections import services
from apps.selections.models import Selection
from tests.selections.helpers import create_selection
from tests.selections.test_traces import CSV

pytestmark = pytest.mark.django_db

FORM = {
    "title": "Support bot",
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "isl_kind": "lognormal",
    "isl_tokens": "800",
    "isl_spread": "0.6",
    "osl_kind": "fixed",
    "osl_tokens": "200",
    "arrival": "poisson",
    "rate_rps": "3",
    "prefix_share": "0",
    "prefix_tokens": "0",
    "tool_share": "0",
    "ttft_ms": "800",
    "tpot_ms": "50",
    "percentile": "99",
    "attainment": "0.95",
    "accelerators": ["h100-sxm"],
    "max_gpus": "1",
    "required_features": "prefix_caching stable",
    "prices": "h100-sxm 2.5",
}


def test_the_list_shows_an_empty_state_first(alice_client):
    response = alice_client.get("/selections/")

    assert b"No selections yet" in response.content


def test_the_goal_form_stores_the_same_document_as_the_api(catalog, alice_client):
    response = alice_client.post("/selections/new/", FORM)

    selection = Selection.objects.get()
    assert response.status_code == 302
    assert selection.workload["isl"] == {"kind": "lognormal", "median": 800.0, "sigma": 0.6}
    assert selection.constraints["required_features"] == [
        {"feature": "prefix_caching", "min_maturity": "stable"}
    ]
    assert selection.constraints["prices"] == {"h100-sxm": 2.5}


def test_the_goal_form_shows_api_errors_on_the_fields_that_caused_them(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "isl_spread": "", "rate_rps": ""})

    form = response.context["form"]
    assert "isl_spread" in form.errors
    assert "rate_rps" in form.errors
    assert not Selection.objects.exists()


def test_the_detail_page_draws_trace_histograms_with_the_static_plotly(
    catalog, alice, acme, alice_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.trace_upload(
        actor_user=alice, selection=selection, name="day.csv", content=CSV.encode()
    )

    page = alice_client.get(f"/selections/{selection.pk}/").content.decode()

    assert 'id="figure-lengths"' in page and 'id="figure-arrivals"' in page
    assert page.count("plotly.min") == 1 and "cdn" not in page.lower()


def test_the_candidate_page_lists_ranked_stacks_reasons_and_the_goodput_chart(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm", "mi300x"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    alice_client.post(f"/selections/{selection.pk}/candidates/compute/")

    page = alice_client.get(f"/selections/{selection.pk}/candidates/").content.decode()

    assert 'id="figure-goodput"' in page
    assert 'data-code="hardware_unsupported"' in page
    assert "req/s per GPU" in page


def test_the_plan_step_marks_the_chosen_candidates(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=selection)
    leader = selection.candidates.get(rank=1)

    alice_client.post(f"/selections/{selection.pk}/plan/", {"chosen": [str(leader.pk)]})

    assert list(selection.candidates.filter(chosen=True)) == [leader]


def test_charlie_gets_404_on_every_page_of_alices_selection(
    catalog, alice, acme, charlie_client, goal_payload
):
    selection = create_selection(user=alice, team=acme, payload=goal_payload)

    for suffix in ("", "goal/", "candidates/", "plan/"):
        assert charlie_client.get(f"/selections/{selection.pk}/{suffix}").status_code == 404
    file = SimpleUploadedFile("day.csv", CSV.encode())
    response = charlie_client.post(f"/selections/{selection.pk}/traces/", {"file": file})
    assert response.status_code == 404
