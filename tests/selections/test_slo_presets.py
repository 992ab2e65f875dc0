"""SLO presets: published latency limits with their source and date, a starting point the goal
keeps the name of, and the selection page saying whether the numbers were changed since."""

import pytest

from apps.selections.models import Selection
from apps.selections.slo_presets import BY_KEY, MLPERF_URL, PRESETS
from tests.selections.test_pages import FORM

pytestmark = pytest.mark.django_db


def test_every_preset_names_its_source_and_date_and_sets_a_target():
    for preset in PRESETS:
        assert preset.source and preset.url.startswith("https://") and preset.as_of
        assert preset.ttft_ms or preset.tpot_ms or preset.e2e_ms


def test_the_goal_form_offers_the_presets_with_their_sources(catalog, alice_client):
    page = alice_client.get("/selections/new/").content.decode()
    assert '<option value="mlperf-llama2-70b-interactive">' in page
    assert 'id="slo-presets"' in page and "js/slo_presets." in page
    row = page[page.index('data-preset="mlperf-llama3.1-405b-server"') :]
    row = row[: row.index("</tr>")]
    assert "<td>6000</td><td>175</td><td>p99</td>" in row
    assert MLPERF_URL in row and "2026-08-20" in row


@pytest.mark.parametrize(("tpot", "words"), [("40", "From"), ("35", "Edited from")])
def test_the_selection_says_which_preset_its_slo_came_from(catalog, alice_client, tpot, words):
    preset = BY_KEY["mlperf-llama2-70b-interactive"]
    posted = {**FORM, "slo_preset": preset.key, "ttft_ms": "450", "tpot_ms": tpot}
    response = alice_client.post("/selections/new/", posted)
    selection = Selection.objects.get()
    assert response.status_code == 302 and selection.slo["preset"] == preset.key

    page = alice_client.get(f"/selections/{selection.pk}/").content.decode()
    origin = page[page.index('id="slo-origin"') :]
    assert origin.startswith(f'id="slo-origin">{words} the preset {preset.label}')
    assert preset.as_of in origin[: origin.index("</small>")]


def test_an_unknown_preset_is_a_form_error_on_its_field(catalog, alice_client):
    response = alice_client.post("/selections/new/", {**FORM, "slo_preset": "mlperf-gpt-5"})
    assert "slo_preset" in response.context["form"].errors
    assert not Selection.objects.exists()
