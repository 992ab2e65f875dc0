"""Every page loads its scripts, styles, fonts and images from the app itself (no CDN), and the
Swagger UI, served from the app's static files, renders the API's operations."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import log_in
from tests.browser.pages import crawl
from tests.decisions.factories import make_approver
from tests.security.alice_world import build_alice_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _foreign_requests(page: Page, origin: str) -> list[str]:
    foreign: list[str] = []

    def note(request) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("data", "blob"):
            return
        if f"{parts.scheme}://{parts.netloc}" != origin:
            foreign.append(f"{request.url} (from {page.url})")

    page.context.on("request", note)
    return foreign


def test_no_page_requests_a_resource_from_another_host(page, live_server, alice, bob, acme):
    build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    foreign = _foreign_requests(page, live_server.url)
    log_in(page, "alice")
    visited = crawl(page, live_server.url)
    page.goto("/api/schema/swagger/")
    page.wait_for_selector(".opblock")
    assert len(visited) >= 25, visited  # the crawl reached the app's pages, not just the home
    assert not any(line.startswith("5") for line in visited), visited
    assert foreign == [], "\n".join(foreign)


def test_the_swagger_page_renders_the_operations(page, live_server, alice):
    foreign = _foreign_requests(page, live_server.url)
    log_in(page, "alice")
    page.goto("/api/schema/swagger/")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").evaluate_all(
        "nodes => nodes.map(n => n.getAttribute('data-path'))"
    )
    assert "/api/v1/selections/" in paths and "/api/v1/decisions/" in paths
    assert len(paths) > 20
    assert page.locator(".swagger-ui .info .title").inner_text().startswith("StackSelect API")
    assert "/static/drf_spectacular_sidecar/" in page.content()
    assert foreign == []
