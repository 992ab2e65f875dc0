import pytest
from django.core.management import call_command

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_filters_the_matrix_by_vendor_and_contract_and_opens_a_cells_evidence(page, alice):
    call_command("catalog_load", verbosity=0)

    log_in(page, "alice")
    page.click("nav.mainnav >> text=Catalog")
    all_rows = page.locator("table.matrix > tbody > tr").count()

    page.select_option("#id_vendor", "amd")
    page.select_option("#id_contract", "kv")
    page.click("#matrix-filters button[type=submit]")
    page.wait_for_url("**vendor=amd**")

    rows = page.locator("table.matrix > tbody > tr")
    assert 0 < rows.count() < all_rows
    assert page.locator("table.matrix > tbody > tr[data-engine=dynamo]").count() == 0
    headers = page.locator("table.matrix th.contract")
    assert headers.count() == 1 and headers.inner_text() == "KV"

    cell = page.locator("tr[data-engine=vllm] td.cell[data-feature=prefix_caching]")
    hover = cell.get_attribute("title")
    assert "evidence: https://" in hover
    evidence_url = hover.split("evidence: ", 1)[1].split(" ", 1)[0]

    cell.locator("a").click()
    page.wait_for_url("**/catalog/cells/**")
    link = page.locator("#evidence a.evidence-link")
    assert link.get_attribute("href") == evidence_url
    assert page.locator("#history").is_visible()
    screenshot(page, "catalog-cell-evidence")
