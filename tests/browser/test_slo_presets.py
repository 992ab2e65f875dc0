"""Choosing an SLO preset fills the targets in the browser; the numbers stay editable, and
the saved goal says which preset it started from and that it was edited."""

import pytest

from tests.browser.conftest import log_in
from tests.selections.catalog_fixture import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_preset_fills_the_slo_and_an_edit_is_kept_and_told(page, alice):
    load_catalog()
    log_in(page, "alice")
    page.goto("/selections/new/")
    page.fill("#id_title", "Interactive chat")
    page.select_option("#id_model", "llama-3.1-8b")
    page.fill("#id_isl_tokens", "1024")
    page.fill("#id_osl_tokens", "256")
    page.fill("#id_rate_rps", "4")

    page.select_option("#id_slo_preset", "mlperf-llama3.1-8b-interactive")
    assert page.input_value("#id_ttft_ms") == "500" and page.input_value("#id_tpot_ms") == "30"
    assert page.input_value("#id_percentile") == "99"
    page.fill("#id_tpot_ms", "35")
    page.click("#save-goal")

    origin = page.locator("#slo-origin").inner_text()
    assert origin.startswith("Edited from the preset MLPerf Inference Llama-3.1-8B, interactive")
    assert "TPOT ≤ 35 ms" in page.locator("#goal-slo").inner_text()
