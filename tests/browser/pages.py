"""The app's pages as a signed-in user reaches them: a breadth-first walk of its own links,
one URL per pattern, shared by the no-foreign-host test, the accessibility check and the
screenshots."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

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


def crawl(page: Page, origin: str, on_page: Callable[[Page, str], None] | None = None) -> list[str]:
    """Follow the app's own links breadth-first from the home page, one URL per pattern;
    `on_page` looks at each page as it stands after loading."""
    queue, seen, visited = ["/"], {"/"}, []
    while queue and len(visited) < PAGE_LIMIT:
        path = queue.pop(0)
        try:
            response = page.goto(path)
        except PlaywrightError:  # a link that turned out to be a download
            continue
        visited.append(f"{response.status if response else '?'} {path}")
        if on_page is not None:
            on_page(page, path)
        for link in _links(page, origin):
            shape = _shape(link.split("?")[0]) + ("?" if "?" in link else "")
            if shape not in seen:
                seen.add(shape)
                queue.append(link)
    return visited
