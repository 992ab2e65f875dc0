"""Two people in two browsers: alice (admin) invites a new approver, who signs up through the
one-time link, signs in and accepts the decision alice proposed; alice is never offered Accept."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from apps.decisions.models import DecisionRecord
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD
from tests.decisions.factories import decision_catalog, draft, two_candidate_selection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _context_page(browser: Browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    return context, context.new_page()


def test_an_invited_approver_accepts_the_decision_its_author_cannot(
    browser, live_server, alice, acme
):
    selection = two_candidate_selection(acme, alice, decision_catalog())
    record = draft(alice, acme, selection)
    alice_context, alice_page = _context_page(browser, live_server)
    dave_context, dave_page = _context_page(browser, live_server)
    try:
        log_in(alice_page, "alice")
        alice_page.goto(f"/decisions/{record.pk}/")
        alice_page.click("#propose-record")
        assert alice_page.locator("#record-status").inner_text() == "Proposed"
        assert alice_page.locator("#accept-record").count() == 0
        assert "another approver" in alice_page.locator("#who-accepts").inner_text()

        alice_page.click("a[href='/accounts/team/members/']")
        alice_page.fill("#id_invitee", "dave@example.org")
        alice_page.select_option("#id_role", "approver")
        alice_page.click("#send-invitation")
        link = alice_page.locator("#invitation-link").inner_text()
        assert "/accounts/invitations/ssi_" in link
        screenshot(alice_page, "invitation-link")

        dave_page.goto(link)
        assert dave_page.url.endswith("/accounts/invitations/open/")  # the secret left the bar
        assert dave_page.locator("#invitation-role").inner_text() == "approver"
        dave_page.fill("#id_username", "dave")
        dave_page.fill("#id_password1", PASSWORD)
        dave_page.fill("#id_password2", PASSWORD)
        screenshot(dave_page, "invitation-sign-up")
        dave_page.click("#sign-up")
        dave_page.wait_for_url("**/accounts/login/")
        assert "Log in to start" in dave_page.locator(".messages").inner_text()
        log_in(dave_page, "dave")
        dave_page.goto(f"/decisions/{record.pk}/")
        dave_page.click("#accept-record")
        assert dave_page.locator("#record-status").inner_text() == "Accepted"
        assert dave_page.locator("#approved-by").inner_text() == "dave"

        dave_page.goto(link)
        assert "used already" in dave_page.locator("#invitation-problem").inner_text()

        alice_page.goto(f"/decisions/{record.pk}/")
        assert alice_page.locator("#record-status").inner_text() == "Accepted"
        assert alice_page.locator("#accept-record").count() == 0
        alice_page.click("a[href='/accounts/team/members/']")
        assert alice_page.locator("#members tr[data-member=dave] select").input_value() == (
            "approver"
        )
    finally:
        alice_context.close()
        dave_context.close()
    assert DecisionRecord.objects.get(pk=record.pk).decided_by.username == "dave"
