"""The embedded configuration (SQLite file, filesystem broker) end to end, as `make run` uses it."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.selections.test_pages import FORM

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _wait_until_serving(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "run_all exited early"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} never answered")


def _post(browser: urllib.request.OpenerDirector, jar, url: str, form: dict):
    """A page form's POST with the session's CSRF token, as the browser sends it."""
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    body = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": csrf}, doseq=True)
    return browser.open(url, data=body.encode(), timeout=60)


def _computed_candidates(browser: urllib.request.OpenerDirector, url: str) -> str:
    """The candidate page once the worker has computed the list (seconds on an idle machine;
    the deadline leaves room for a loaded one)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with browser.open(url, timeout=60) as response:
            page = response.read().decode()
        if "Computing candidates" not in page:
            return page
        time.sleep(1)
    raise AssertionError("the candidates were never computed")


def test_the_embedded_set_up_migrates_serves_and_logs_the_demo_user_in(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG"}
    }
    env.update(STACKSELECT_VAR_DIR=str(tmp_path), SECRET_KEY="embedded-test-secret")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    _manage(env, "migrate", "--noinput")
    _manage(env, "collectstatic", "--noinput")
    _manage(env, "load_curated")
    banner = _manage(env, "bootstrap_demo", "--url", base + "/")
    assert "Log in as  demo  /  " in banner
    password = (tmp_path / "demo_password").read_text().strip()
    assert password in banner
    assert (tmp_path / "stackselect.sqlite3").exists()

    server = subprocess.Popen(
        [sys.executable, "manage.py", "run_all", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_until_serving(base + "/healthz", server)
        with urllib.request.urlopen(base + "/readyz", timeout=10) as ready:
            assert ready.status == 200

        # Browsers count http://127.0.0.1 as a secure context and send Secure cookies there.
        loopback_is_secure = http.cookiejar.DefaultCookiePolicy(
            secure_protocols=("https", "wss", "http")
        )
        jar = http.cookiejar.CookieJar(policy=loopback_is_secure)
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        browser.open(base + "/accounts/login/", timeout=10).read()
        login = {"username": "demo", "password": password}
        with _post(browser, jar, base + "/accounts/login/", login) as home:
            assert home.url == base + "/"
            assert "You act for <strong>Demo team</strong>" in home.read().decode()

        # a goal through its page, its candidates computed by the embedded worker, on SQLite
        with _post(browser, jar, base + "/selections/new/", FORM) as goal:
            selection_url = goal.url
        _post(browser, jar, selection_url + "candidates/compute/", {}).close()
        page = _computed_candidates(browser, selection_url + "candidates/")
        assert int(re.search(r'Kept <span class="muted">\((\d+)\)', page).group(1)) > 0
        assert "simulated" in page
    finally:
        os.killpg(server.pid, signal.SIGINT)  # what one Ctrl-C in the terminal sends
        output = server.communicate(timeout=30)[0].decode()
    assert "all StackSelect processes stopped." in output
