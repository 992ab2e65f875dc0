import pytest
from django.db import transaction

from apps.audit.services import Actor, audit_record
from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_alice_filters_the_audit_page_and_reads_a_diff(page, alice, acme):
    with transaction.atomic():
        audit_record(
            actor=Actor.for_user(alice),
            action="selection.update",
            object_type="selections.selection",
            object_id=7,
            object_repr="Chat assistant",
            team=acme,
            before={"ttft_ms": 800},
            after={"ttft_ms": 500},
        )
        audit_record(
            actor=Actor.for_user(alice),
            action="team.rename",
            object_type="accounts.team",
            object_id=acme.pk,
            object_repr="Acme",
            team=acme,
        )

    log_in(page, "alice")
    page.click("nav.mainnav >> text=Audit")
    assert page.locator("table.audit > tbody > tr").count() == 2

    assert page.locator("#id_occurred_after").get_attribute("type") == "date"
    assert page.locator("#id_object_type option[value='accounts.team']").inner_text() == "Team"
    page.select_option("#id_action", "selection.update")
    page.click("#audit-filters button[type=submit]")
    rows = page.locator("table.audit > tbody > tr")
    assert rows.count() == 1
    page.click("details.diff summary")
    change = page.locator("details.diff tr.change-changed")
    assert change.locator("td").nth(0).inner_text() == "ttft_ms"
    assert change.locator("del").inner_text() == "800"
    assert change.locator("ins").inner_text() == "500"
    screenshot(page, "audit-diff")
