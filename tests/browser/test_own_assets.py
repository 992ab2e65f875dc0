"""Every page loads its scripts, styles, fonts and images from the app itself (no CDN), and the
Swagger UI, served from the app's static files, renders the API's operations."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from tests.browser.conftest import log_in
from tests.decisions.factories import make_approver
from tests.security.alice_world import build_alice_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Not pages: file downloads and the JSON API (its Swagger page is visited on its own).
NOT_PAGES = re.compile(r"/api/v1/|/api/runner/|markdown|\.md$|export|\.csv|download|/admin/")
PAGE_LIMIT = 80


def _shape(path: str) -> str:
    """One visit per URL pattern: /selections/12/plan/ and /selections/7/plan/ are the same."""
    return re.sub(r"/\d+(?=/|$)", "/N", path)


def _links(page: Page, origin: str) -> list[str]:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    paths = []
    for href in hrefs:
        parts = urlsplit(urljoin(page.url, href))
        if f"{parts.scheme}://{parts.netloc}" == origin and not NOT_PAGES.search(parts.path):
            paths.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return paths


def crawl(page: Page, origin: str) -> list[str]:
    """Follow the app's own links breadth-first from the home page, one URL per pattern."""
    queue, seen, visited = ["/"], {"/"}, []
    while queue and len(visited) < PAGE_LIMIT:
        path = queue.pop(0)
        try:
            response = page.goto(path)
        except PlaywrightError:  # a link that turned out to be a download
            continue
        visited.append(f"{response.status if response else '?'} {path}")
        for link in _links(page, origin):
            shape = _shape(link.split("?")[0]) + ("?" if "?" in link else "")
            if shape not in seen:
                seen.add(shape)
                queue.append(link)
    return visited


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
