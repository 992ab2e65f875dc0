"""Single sign-on in a real browser: the login page's button, the stand-in provider's
redirects, and back on the home page as a member with the role the group claim maps to."""

from __future__ import annotations

import pytest

from tests.accounts.oidc_provider import StandInProvider, configure_sso
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sso(settings):
    with StandInProvider() as provider:
        yield configure_sso(settings, provider)


def test_a_person_signs_in_through_the_provider_and_lands_in_the_mapped_team(page, sso, acme):
    sso.signs_in(sub="u-iris", email="iris@example.com", preferred_username="iris")
    sso.person["groups"] = ["ml-approvers"]

    page.goto("/accounts/login/")
    page.click("#sso-login")
    page.wait_for_url("**/")

    assert "You act for Acme as Approver." in page.locator("main").inner_text()
    assert page.locator(".usermenu").inner_text().count("iris") == 1
    screenshot(page, "sso-signed-in")


def test_someone_the_claim_maps_nowhere_is_told_to_wait_for_an_admin(page, sso, acme):
    sso.signs_in(sub="u-jo", email="jo@example.com", preferred_username="jo")

    page.goto("/accounts/login/")
    page.click("#sso-login")
    page.wait_for_url("**/")

    waiting = page.locator("#waiting-for-team").inner_text()
    assert "Waiting for a team admin to add you" in waiting and "jo" in waiting
    screenshot(page, "sso-waiting-for-team")
