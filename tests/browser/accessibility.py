"""The accessibility check: axe-core, from the browser tests' own node_modules (installed by
`make browser` from tests/browser/package-lock.json, never from a CDN), run in the page.

Its script goes in as an init script, which the browser runs outside the page's
Content-Security-Policy, so the pages keep refusing inline script while they are checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
# Serious and critical findings fail a page; moderate and minor ones are reported by axe only.
BLOCKING = ("serious", "critical")
# Swagger UI nests its operation's expand button inside the clickable summary row: its own
# markup, which the app cannot change short of patching Swagger UI; only that page skips the rule.
SKIPPED_RULES = {"/api/schema/swagger/": ["nested-interactive"]}
RUN_AXE = """async (skipped) => {
  const rules = Object.fromEntries(skipped.map(id => [id, {enabled: false}]));
  const found = await axe.run(document, {resultTypes: ["violations"], rules});
  return found.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ")),
  }));
}"""


def with_axe(context: BrowserContext) -> BrowserContext:
    if not AXE.exists():
        pytest.fail("axe-core is missing: `make browser` installs it into tests/browser")
    context.add_init_script(path=str(AXE))
    return context


def blocking_violations(page: Page, path: str) -> list[str]:
    """axe's serious and critical findings on the page as it stands, one line each."""
    page.wait_for_load_state("load")
    skipped = SKIPPED_RULES.get(path.split("?")[0], [])
    return [
        f"{v['impact']} {v['id']}: {v['help']} at {', '.join(v['nodes'])}"
        for v in page.evaluate(RUN_AXE, skipped)
        if v["impact"] in BLOCKING
    ]
