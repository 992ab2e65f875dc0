"""Content-Security-Policy (this origin only, no inline script) and Secure cookies whenever
DEBUG is off, on real responses; and no template left with an inline script to be blocked."""

from __future__ import annotations

import re
from pathlib import Path

from django.test import Client

from tests.conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("apps/*/templates/**/*.html")]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
HANDLER = re.compile(r"\son[a-z]+\s*=|javascript:", re.I)


def _policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


def test_pages_and_the_api_carry_a_same_origin_policy_without_inline_script(client, alice):
    for response in (client.get("/accounts/login/"), client.get("/api/v1/")):
        policy = _policy(response)
        assert policy["script-src"] == "'self'"
        assert policy["style-src"] == "'self' 'unsafe-inline'"  # plotly.js styles inline
        assert policy["default-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'"
        assert "unsafe" not in policy["script-src"] + policy["default-src"]
        assert "http" not in response["Content-Security-Policy"]  # no other host


def test_no_template_has_an_inline_script_or_event_handler():
    offenders = [
        str(path.relative_to(ROOT))
        for path in TEMPLATES
        if INLINE_SCRIPT.search(text := path.read_text()) or HANDLER.search(text)
    ]
    assert TEMPLATES and not offenders, offenders


def test_the_session_and_csrf_cookies_are_secure_with_debug_off(alice):
    client = Client(enforce_csrf_checks=False)
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"] is True
    assert client.get("/accounts/login/").cookies["csrftoken"]["secure"] is True
