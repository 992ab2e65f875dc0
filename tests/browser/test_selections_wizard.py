import pytest

from apps.audit.services import Actor
from apps.catalog.published_sample import SOURCE_NAME
from apps.catalog.services import published_import
from apps.selections import services
from apps.selections.tasks import compute_candidates
from tests.browser.conftest import log_in, screenshot
from tests.catalog.published_rows import sample_row
from tests.selections.catalog_fixture import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_walks_the_wizard_from_goal_to_candidate_list(page, alice, monkeypatch):
    load_catalog()
    published_import(actor=Actor.system("test"), rows=[sample_row()])
    # No Celery worker here: the test plays it once the page shows the queued computation.
    sent = []
    monkeypatch.setattr(services.celery_app, "send_task", lambda name, **kw: sent.append(kw))

    log_in(page, "alice")
    page.click("nav.mainnav >> text=Selections")
    assert page.locator("p.empty").inner_text().startswith("No selections yet")
    page.click("#new-selection")

    page.fill("#id_title", "Support bot")
    page.select_option("#id_model", "llama-3.1-8b")
    page.fill("#id_isl_tokens", "1024")
    page.fill("#id_osl_tokens", "256")
    page.fill("#id_rate_rps", "4")
    page.fill("#id_ttft_ms", "1000")
    page.fill("#id_tpot_ms", "60")
    page.check("#field-accelerators input[value='h100-sxm']")
    page.fill("#id_max_gpus", "1")
    page.click("#save-goal")

    page.wait_for_selector("#compute-candidates")
    assert "Support bot" in page.locator("h1").inner_text()
    page.click("#compute-candidates")

    page.wait_for_selector("#computation[data-computation='queued'] progress")
    assert compute_candidates(**sent[0]["kwargs"]) == "done"
    page.wait_for_selector("table.candidates.kept")  # the poller reloads the page when done
    assert page.locator("table.candidates.kept > tbody > tr").count() > 0
    published = page.locator("table.candidates.kept > tbody > tr [data-field=published]").first
    assert f"published by {SOURCE_NAME}, as of 2026-12-01" in published.inner_text()
    page.wait_for_selector("#chart-goodput .main-svg")
    assert page.locator("table.groups tr[data-code='not_a_serving_engine']").count() == 1
    screenshot(page, "selections-candidates")

    page.click("text=Next: benchmark plan")
    page.locator("#plan-form input[name=chosen]").first.check()
    page.click("#plan-form button[type=submit]")
    assert "1 candidate chosen" in page.locator(".messages").inner_text()
