"""Playwright driving Debian's chromium against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.conftest import PASSWORD

# Playwright's sync API runs an event loop in the test thread; the ORM calls made by fixtures
# in that thread are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Browser:
    """Module-scoped: Playwright's sync API keeps an event loop running while it is open, which
    must not outlive the browser tests (other tests call asyncio.run)."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make browser` installs it")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def plain_static_names(settings) -> None:
    """The live server finds static files by their source names, not the hashed names the
    production storage writes into pages, so browser tests render with plain names."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def page(browser: Browser, live_server) -> Page:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    blocked: list[str] = []  # every page runs under the Content-Security-Policy
    page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield page
    context.close()
    assert not blocked, blocked


def log_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def fill_in(page: Page, values: dict[str, str]) -> None:
    """Type each value into the field its selector names."""
    for selector, value in values.items():
        page.fill(selector, value)


def enter_the_goal(page: Page, goal: dict[str, str]) -> None:
    """Wizard step 1: a new Llama 3.1 8B selection on H100s with the goal's fields, saved; the
    page is then the selection's, ready to compute candidates."""
    page.click("nav.mainnav >> text=Selections")
    page.click("#new-selection")
    page.select_option("#id_model", "llama-3.1-8b")
    page.check("#field-accelerators input[value='h100-sxm']")
    fill_in(page, goal)
    page.click("#save-goal")
    page.wait_for_selector("#compute-candidates")


def accept_as(page: Page, username: str, record_id: int) -> None:
    """Log out, log in as the approver and accept the proposed decision record."""
    page.click("button:has-text('Log out')")
    log_in(page, username)
    page.goto(f"/decisions/{record_id}/")
    page.click("#accept-record")
    assert page.locator("#record-status").inner_text() == "Accepted"
    assert page.locator("#approved-by").inner_text() == username


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
