import pytest

from tests.browser.conftest import log_in, screenshot
from tests.evidence.factories import (
    catalog,
    measured_attempt,
    plan_for,
    selection_with_candidates,
)
from tests.evidence.samples import streamed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_opens_the_evidence_of_her_selection_and_sees_its_charts(page, acme, alice):
    selection = selection_with_candidates(
        acme, alice, catalog(), layouts=[("h100-sxm", 1, "bf16"), ("l40s", 1, "bf16")]
    )
    plan = plan_for(selection, load_points=[{"rate_rps": 1.0}, {"rate_rps": 2.0}])
    for candidate, ttft in zip(selection.candidates.order_by("rank"), (0.1, 0.3), strict=True):
        records = [streamed(i, ttft_s=ttft, gaps=[0.02, 0.03]) for i in range(8)]
        measured_attempt(plan, candidate, records)

    log_in(page, "alice")
    page.goto(f"/evidence/selections/{selection.pk}/")

    page.wait_for_selector("#chart-ttft .main-svg")
    page.wait_for_selector("#chart-goodput .main-svg")
    assert page.locator("#chart-ttft .shapelayer path").count() == 1  # the SLO target line
    assert page.locator("#chart-ttft .annotation-text").text_content() == "SLO"
    assert page.locator("table.evidence.metrics > tbody > tr").count() == 4
    assert "TPOT" in page.locator("#definitions").inner_text()
    screenshot(page, "evidence-selection")
