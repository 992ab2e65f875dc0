"""The enroll page's install commands and reachability warnings, without a browser."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from apps.runners.install import broker_warning, install_commands, server_url_warning

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        ("filesystem://", True),
        ("memory://", True),
        ("redis://127.0.0.1:6379/0", True),
        ("redis://localhost:6379/0", True),
        ("redis://[::1]:6379/0", True),
        ("redis://10.1.2.3:6379/0", False),
        ("rediss://:pw@redis.internal:6380/0", False),
    ],
)
def test_only_brokers_another_host_can_reach_pass_without_a_warning(url: str, warned: bool):
    assert (broker_warning(url) is not None) is warned


def test_a_loopback_server_url_is_warned_and_a_named_one_is_not() -> None:
    assert "RUNNER_PUBLIC_URL" in server_url_warning("http://127.0.0.1:8000")
    assert server_url_warning("https://stackselect.example.org") is None


def test_the_commands_install_the_runner_version_of_this_source_tree_and_carry_the_token():
    version = tomllib.loads((ROOT / "runner/pyproject.toml").read_text())["project"]["version"]
    lines = install_commands(server_url="http://gpu-server:8000", token="sse_abc_def")
    assert f"stackselect-runner {version}" in lines[0]
    assert "~/stackselect-runner/bin/pip install ./domain ./runner" in lines
    assert any(line.endswith(f"# prints stackselect-runner {version}") for line in lines)
    enroll = "enroll --url http://gpu-server:8000 --token sse_abc_def --name <name>"
    assert any(line.endswith(enroll) for line in lines)


def test_the_enroll_page_shows_the_commands_to_an_admin(alice_client, settings):
    settings.RUNNER_BROKER_URL = "redis://10.1.2.3:6379/0"
    settings.RUNNER_PUBLIC_URL = "http://gpu-server:8000"
    page = alice_client.get("/runners/enroll/").content.decode()
    assert 'id="install-commands"' in page and 'id="reach-warning"' not in page
    assert "--token &lt;token&gt;" in page
