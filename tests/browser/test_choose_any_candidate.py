"""A candidate ranked below 200 is chosen from the candidates page, kept chosen while another
page is used, compared from the tray, and run: the benchmark plan created from the choice
includes it."""

import pytest

from apps.benchmarks.models import BenchmarkPlan
from apps.catalog.models import Accelerator
from apps.selections import services
from tests.browser.conftest import fill_in, log_in, screenshot
from tests.selections.catalog_fixture import load_catalog
from tests.selections.conftest import GOAL
from tests.selections.helpers import create_selection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLAN = {"#id_load_levels": "1", "#id_request_count": "8", "#id_warmup_requests": "1"}
FAR_RANK = 227  # page 5 of the candidates list, 50 a page


def wide_selection(alice, acme):
    """Every curated accelerator, up to two GPUs: some hundreds of kept candidates."""
    load_catalog()
    goal = {**GOAL, "constraints": {**GOAL["constraints"], "max_gpus": 2}}
    goal["constraints"]["accelerators"] = list(Accelerator.objects.values_list("slug", flat=True))
    selection = create_selection(user=alice, team=acme, payload=goal)
    services.candidates_compute(actor_user=alice, selection=selection)
    assert selection.candidates.filter(outcome="kept").count() > 250
    return selection


def tick_and_save(page, rank: int) -> None:
    page.get_by_label(f"Choose #{rank} for benchmarking", exact=True).check()
    page.click("#save-choice")
    page.wait_for_selector(".messages")


def test_a_candidate_ranked_below_200_is_chosen_on_the_candidates_page_and_run(page, alice, acme):
    selection = wide_selection(alice, acme)
    far = selection.candidates.get(outcome="kept", rank=FAR_RANK)
    log_in(page, "alice")

    page.goto(f"/selections/{selection.pk}/candidates/")
    assert "Nothing chosen yet" in page.locator("#chosen-tray").inner_text()
    tick_and_save(page, 1)
    pages = page.get_by_role("navigation", name="Pages")
    for number in range(2, 6):  # through the pages, as a user would
        pages.get_by_role("link", name="Older").click()
        page.wait_for_url(f"**page={number}")
    assert "Page 5 of" in pages.inner_text()
    tick_and_save(page, FAR_RANK)

    assert "2 candidates chosen" in page.locator(".messages").inner_text()
    tray = page.locator("#chosen-tray")
    assert tray.locator("tr[data-chosen]").count() == 2
    assert tray.locator(f"tr[data-chosen='{far.pk}']").is_visible()
    screenshot(page, "candidates-chosen-tray")

    tray.get_by_label("Compare #1", exact=True).check()
    tray.get_by_label(f"Compare #{FAR_RANK}", exact=True).check()
    page.click("#compare-chosen")
    page.wait_for_selector("#compare-table")
    assert page.locator(f"#compare-table th[data-candidate='{far.pk}']").is_visible()
    screenshot(page, "compare-chosen")

    page.click("text=Back to the plan")
    assert page.locator(f"#chosen-tray tr[data-chosen='{far.pk}']").is_visible()
    page.click("#create-plan")
    fill_in(page, PLAN)
    page.check("input[name=run_mode][value=simulated]")
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector("tr[data-job]")

    plan = BenchmarkPlan.objects.get(selection=selection)
    job = plan.jobs.get(candidate=far)
    assert set(plan.jobs.values_list("candidate__rank", flat=True)) == {1, FAR_RANK}
    assert page.locator(f"tr[data-job='{job.pk}']").is_visible()
    screenshot(page, "plan-with-a-far-candidate")


def test_the_tray_unchooses_with_the_keyboard(page, alice, acme):
    selection = wide_selection(alice, acme)
    log_in(page, "alice")
    page.goto(f"/selections/{selection.pk}/plan/?page=5")
    row = page.locator(f"#plan-form tr[data-rank='{FAR_RANK}'] input[name=chosen]")
    row.focus()
    page.keyboard.press("Space")
    page.click("#plan-form button[type=submit]")
    assert page.locator("#chosen-tray tr[data-chosen]").count() == 1
    screenshot(page, "selection-plan-filters-and-tray")

    page.get_by_role("button", name=f"Unchoose #{FAR_RANK}").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Nothing chosen yet")
    assert "0 candidates chosen" in page.locator(".messages").inner_text()
    assert not selection.candidates.filter(chosen=True).exists()
