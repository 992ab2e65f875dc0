"""The goal form speaks the page's words: an error summary at the top linking to each field,
labels instead of API names, no silent default to a custom architecture; the goal summary
shows every length number."""

import pytest

from apps.selections.models import Selection
from apps.selections.workload_words import arrival_text, length_text
from tests.selections.helpers import create_selection
from tests.selections.test_pages import FORM

pytestmark = pytest.mark.django_db


def test_a_missing_slo_is_told_with_the_labels_of_the_page(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "ttft_ms": "", "tpot_ms": ""})
    errors = response.context["form"].errors["ttft_ms"]
    assert errors == ["Set at least one of TTFT target (ms), TPOT target (ms) and E2E target (ms)."]
    assert "ttft_ms," not in response.content.decode()
    assert not Selection.objects.exists()


def test_a_target_longer_than_a_day_is_told_on_its_field(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "e2e_ms": "1e12"})
    errors = response.context["form"].errors["e2e_ms"]
    assert errors == ["At most a day (86,400,000 ms); leave it empty for no target."]
    assert not Selection.objects.exists()


def test_an_empty_needed_number_asks_for_a_value(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "isl_spread": "", "rate_rps": ""})
    errors = response.context["form"].errors
    assert errors["isl_spread"] == ["Enter a value."] and errors["rate_rps"] == ["Enter a value."]
    assert "may not be null" not in response.content.decode()


def test_the_error_summary_at_the_top_links_to_each_field(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "rate_rps": "x", "max_gpus": "x"})
    page = response.content.decode()
    summary = page[page.index('id="error-summary"') : page.index('id="field-title"')]
    assert "2 things to fix before saving" in summary
    assert '<a href="#id_rate_rps">Rate (requests/s)</a>: Enter a number.' in summary
    assert '<a href="#id_max_gpus">Max GPUs</a>: Enter a whole number.' in summary
    assert 'id="id_rate_rps"' in page and 'id="id_max_gpus"' in page


def test_forgetting_the_model_is_one_error_not_ten_on_custom_fields(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "model": ""})
    form = response.context["form"]
    assert list(form.errors) == ["model"]
    assert form.errors["model"] == [
        "Choose a model from the catalog, or Custom architecture to describe one."
    ]
    choices = [value for value, _ in form.fields["model"].choices]
    assert choices[0] == "" and choices[-1] == "custom-architecture"
    assert form["model"].value() in (None, "")
    assert not Selection.objects.exists()


def test_the_goal_summary_shows_the_length_numbers(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["workload"]["isl"] = {"kind": "normal", "mean": 12000, "std": 1500}
    goal_payload["workload"]["osl"] = {"kind": "lognormal", "median": 200, "sigma": 0.5}
    goal_payload["constraints"]["max_gpus"] = 1
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    page = alice_client.get(f"/selections/{selection.pk}/").content.decode()
    assert '<span id="goal-isl">normal, mean 12,000, std 1,500 tokens</span>' in page
    assert '<span id="goal-osl">lognormal, median 200 tokens, sigma 0.5</span>' in page
    assert "up to 1 GPU</dd>" in page and "1 GPUs" not in page


def test_the_goal_summary_words_lengths_and_arrival_as_the_decision_record_does(
    catalog, alice, acme, alice_client, goal_payload
):
    goal_payload["workload"]["isl"] = {"kind": "empirical", "values": [100, 300]}
    goal_payload["workload"]["arrival"] = {
        "process": "gamma",
        "rate_rps": 4,
        "burstiness": 2.5,
        "peak_factor": 1.5,
    }
    selection = create_selection(user=alice, team=acme, payload=goal_payload)
    page = alice_client.get(f"/selections/{selection.pk}/").content.decode()
    workload = selection.workload
    assert f'<span id="goal-isl">{length_text(workload["isl"])}</span>' in page
    assert '<span id="goal-isl">empirical, 2 values, mean 200 tokens</span>' in page
    arrival = page.split('<dd id="goal-arrival">', 1)[1].split("</dd>", 1)[0]
    assert arrival == arrival_text(workload["arrival"])
    assert arrival == "gamma, 4 req/s, burstiness 2.5, peak x1.5"


def test_the_goal_summary_says_what_the_requests_share(
    catalog, alice, acme, alice_client, goal_payload
):
    plain = create_selection(user=alice, team=acme, payload=goal_payload)
    goal_payload["workload"].update(prefix_share=0.75, prefix_tokens=800, multi_turn=True)
    shared = create_selection(user=alice, team=acme, payload=goal_payload)

    def sharing(selection):
        page = alice_client.get(f"/selections/{selection.pk}/").content.decode()
        return page.split('<dd id="goal-sharing">', 1)[1].split("</dd>", 1)[0]

    assert sharing(plain) == "no shared prefix"
    assert sharing(shared) == (
        "75% of prompts open with a shared 800-token prefix; multi-turn conversations"
    )


def test_a_length_in_words_keeps_every_digit_of_a_long_context():
    assert length_text({"kind": "fixed", "value": 1_048_576}) == "1,048,576 tokens"
    lognormal = {"kind": "lognormal", "median": 2_000_000, "sigma": 0.25}
    assert length_text(lognormal) == "lognormal, median 2,000,000 tokens, sigma 0.25"
    assert length_text({"kind": "empirical", "values": [1, 2]}) == (
        "empirical, 2 values, mean 1.5 tokens"
    )
