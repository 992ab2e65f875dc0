"""Adding a GPU machine by the enroll page's own words: its commands run, its warnings show.

The commands are read from the page and run as printed, except that the runner CLI runs from
this source tree (`python -m stackselect_runner.cli`) instead of the virtualenv the page
creates, and the GPU is simulated.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from apps.runners.models import Runner
from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
CLI = "~/stackselect-runner/bin/stackselect-runner"


def _page_commands(page) -> list[str]:
    log_in(page, "alice")
    page.click("nav.mainnav >> text=Runners")
    page.click("text=Enroll a runner")
    page.click("#create-token")
    text = page.locator("#install-commands").inner_text()
    return [line for line in text.splitlines() if line.strip()]


def _run(line: str, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """One line of the page, as a shell would split it, comments dropped."""
    words = shlex.split(line, comments=True)
    assert words[0] == CLI, line
    placeholders = {"<name>": "gpu-box-1", "<model-slug>": "llama-3.1-8b",
                    "<checkpoint-path>": str(home / "Llama-3.1-8B")}  # fmt: skip
    words = [placeholders.get(word, word) for word in words[1:]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    env.update(PYTHONPATH=str(ROOT / "runner"), STACKSELECT_RUNNER_CONFIG=str(home / "c.json"))
    argv = [sys.executable, "-m", "stackselect_runner.cli", *words, *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_alice_follows_the_enroll_page_and_is_warned_the_broker_is_unreachable(
    page, alice, acme, settings, tmp_path
):
    settings.RUNNER_BROKER_URL = "filesystem:///srv/stackselect/broker"
    lines = _page_commands(page)

    warning = page.locator("#reach-warning").inner_text()
    assert "filesystem:///srv/stackselect/broker" in warning
    assert "a runner on another machine cannot reach" in warning
    assert "localhost only works on this machine" in warning  # the live server's own URL
    screenshot(page, "runner-enroll-unreachable-broker")

    assert "python3 -m venv ~/stackselect-runner" in lines
    assert "~/stackselect-runner/bin/pip install ./domain ./runner" in lines
    version_line = next(line for line in lines if " --version" in line)
    promised = version_line.split("# prints ")[1]
    assert _run(version_line, tmp_path).stdout.strip() == promised

    enroll_line = next(line for line in lines if " enroll " in line)
    enrolled = _run(enroll_line, tmp_path, "--simulate-accelerator", "h100-sxm")
    assert enrolled.returncode == 0, enrolled.stderr
    runner = Runner.objects.get(name="gpu-box-1")
    assert runner.team_id == acme.pk

    (tmp_path / "Llama-3.1-8B").mkdir()
    stored = _run(next(line for line in lines if " models add " in line), tmp_path)
    assert stored.returncode == 0, stored.stderr

    doctor = _run(next(line for line in lines if " doctor" in line), tmp_path)
    assert doctor.returncode == 1
    assert "missing:  a reachable broker: the broker is filesystem://" in doctor.stdout
    assert f"found:    model llama-3.1-8b -> {tmp_path / 'Llama-3.1-8B'}" in doctor.stdout
    assert lines[-1] == f"{CLI} start"


def test_a_broker_other_hosts_reach_gets_no_warning_and_a_password_is_never_shown(
    page, alice, settings
):
    settings.RUNNER_PUBLIC_URL = "http://stackselect.internal:8000"
    settings.RUNNER_BROKER_URL = "redis://:s3cret@broker.internal:6379/0"
    lines = _page_commands(page)
    assert page.locator("#reach-warning").count() == 0
    enroll = " enroll --url http://stackselect.internal:8000 --token sse_"
    assert any(enroll in line for line in lines)

    settings.RUNNER_BROKER_URL = "redis://:s3cret@127.0.0.1:6379/0"
    page.reload()
    warning = page.locator("#reach-warning").inner_text()
    assert "redis://:****@127.0.0.1:6379/0" in warning and "s3cret" not in page.content()
    assert "127.0.0.1 is the runner's own machine" in warning
