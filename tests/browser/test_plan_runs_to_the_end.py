"""A plan made in the browser runs to the end on a real runner agent and the simulated engine."""

import pytest

from tests.benchmarks.factories import catalog, selection_with_candidates
from tests.browser.conftest import log_in, screenshot
from tests.fleet.conftest import fast_fleet, runners  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_plan_made_in_the_browser_runs_to_the_end(page, alice, acme, runners):  # noqa: F811
    selection = selection_with_candidates(acme, alice, catalog(), layouts=[("h100-sxm", 1, "bf16")])
    runners("sim-local")

    log_in(page, "alice")
    page.goto(f"/benchmarks/new/{selection.pk}/")
    page.fill("#id_load_levels", "2, 4")
    page.fill("#id_request_count", "8")
    page.fill("#id_warmup_requests", "1")
    page.check("input[name=run_mode][value=simulated]")
    page.click("#plan-form button[type=submit]")

    state = page.locator("tr[data-job] [data-field=state]")
    state.wait_for()
    page.wait_for_function(
        "() => document.querySelector('tr[data-job] [data-field=state]').innerText === 'Succeeded'",
        timeout=120_000,
    )
    assert page.locator("tr[data-job] [data-field=progress]").evaluate("el => el.value") == 1
    page.wait_for_function("() => document.getElementById('cancel-plan').closest('form').hidden")
    assert not page.locator("tr[data-job] form").is_visible()
    screenshot(page, "plan-finished")
