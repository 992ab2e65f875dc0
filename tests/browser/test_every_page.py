"""Every page, signed in with data present and signed out, passes the accessibility check
(no serious or critical axe-core finding), and leaves a full-page screenshot in
test-artifacts/pages/ for a person to look at."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page

from apps.accounts.services import invitation_create
from tests.browser.accessibility import blocking_violations, with_axe
from tests.browser.conftest import ARTIFACTS, log_in
from tests.browser.pages import crawl
from tests.conftest import PASSWORD
from tests.decisions.factories import draft, make_approver
from tests.security.alice_world import build_alice_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = ARTIFACTS / "pages"


def _shot_name(prefix: str, path: str) -> str:
    return prefix + (re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-") or "home")


class Checker:
    """Runs axe on each page it is shown, keeps the findings, saves the screenshot."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.findings: dict[str, list[str]] = {}
        self.checked: list[str] = []
        SHOTS.mkdir(parents=True, exist_ok=True)

    def __call__(self, page: Page, path: str) -> None:
        self.checked.append(path)
        page.screenshot(path=str(SHOTS / f"{_shot_name(self.prefix, path)}.png"), full_page=True)
        found = blocking_violations(page, path)
        if found:
            self.findings[path] = found

    def visit(self, page: Page, path: str, ready: str = "body") -> None:
        """Open the page and check it once `ready` shows (Swagger UI renders after load)."""
        page.goto(path)
        page.wait_for_selector(ready)
        self(page, path)


def test_every_page_has_no_serious_accessibility_finding(
    browser: Browser, live_server, alice, bob, acme
):
    world = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    _, link = invitation_create(
        actor_user=alice, team=acme, invitee="newcomer@example.org", role="engineer"
    )
    context = with_axe(
        browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    )
    context.set_default_timeout(15_000)
    page = context.new_page()

    signed_out = Checker("anon-")
    for path in ("/", "/accounts/login/", f"/accounts/invitations/{link}/", "/no-such-page/"):
        signed_out.visit(page, path)

    get_user_model().objects.create_user("newcomer", password=PASSWORD)
    log_in(page, "newcomer")  # in no team yet: the home page says to wait for an admin
    waiting = Checker("waiting-")
    waiting.visit(page, "/")
    page.click("button:has-text('Log out')")

    log_in(page, "alice")
    signed_in = Checker("")
    visited = crawl(page, live_server.url, on_page=signed_in)
    selection = world.objects["selection"]
    ids = "&".join(f"ids={c.pk}" for c in selection.candidates.order_by("rank")[:2])
    editing = draft(alice, acme, selection)
    extra = (
        f"/selections/{selection.pk}/compare/?{ids}",
        f"/decisions/{editing.pk}/edit/",
    )
    for path in extra:
        signed_in.visit(page, path)
    signed_in.visit(page, "/api/schema/swagger/", ready=".opblock")
    context.close()

    assert len(visited) >= 25, visited
    findings = signed_out.findings | waiting.findings | signed_in.findings
    report = "\n".join(f"{path}\n  " + "\n  ".join(lines) for path, lines in findings.items())
    assert not findings, report
