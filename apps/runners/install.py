"""How a new GPU machine becomes a runner: the install commands and what would stop them.

The runner package is installed from this server's own source tree (./domain and ./runner),
at the version read from runner/pyproject.toml, so the page never offers a version the server
does not speak. The broker URL runners are handed must be reachable from their host: a
filesystem:// broker or a loopback address only works for a runner on the server's own machine.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from stackselect_domain.addresses import is_loopback_host

VENV = "~/stackselect-runner"


@cache
def package_version(package: str) -> str:
    """The version in <package>/pyproject.toml of this source tree ("runner", "domain")."""
    path = Path(settings.BASE_DIR) / package / "pyproject.toml"
    return str(tomllib.loads(path.read_text())["project"]["version"])


def masked(url: str) -> str:
    """The URL without its password, fit for a page."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":****@")))


def broker_warning(broker_url: str) -> str | None:
    """Why another host cannot use this broker URL, or None when it may."""
    parts = urlsplit(broker_url)
    if parts.scheme in {"filesystem", "memory"}:
        return (
            f"Runners are given the broker {masked(broker_url)}: folders on this server's disk, "
            "which a runner on another machine cannot reach."
        )
    if is_loopback_host(parts.hostname):
        return (
            f"Runners are given the broker {masked(broker_url)}: {parts.hostname} is the "
            "runner's own machine, so a runner on another host will not find this Redis."
        )
    return None


def server_url_warning(server_url: str) -> str | None:
    host = urlsplit(server_url).hostname
    if is_loopback_host(host):
        return (
            f"Runners will call this server at {server_url}; {host} only works on this machine. "
            "Set RUNNER_PUBLIC_URL to an address the GPU hosts reach."
        )
    return None


def install_commands(*, server_url: str, token: str | None) -> list[str]:
    """The whole path, in order, for a shell on the GPU machine."""
    runner_version = package_version("runner")
    cli = f"{VENV}/bin/stackselect-runner"
    return [
        f"# in a copy of this server's source tree (stackselect-runner {runner_version}, "
        f"stackselect-domain {package_version('domain')})",
        f"python3 -m venv {VENV}",
        f"{VENV}/bin/pip install ./domain ./runner",
        f"{cli} --version  # prints stackselect-runner {runner_version}",
        f"{cli} models add <model-slug> <checkpoint-path>  # each catalog model it serves",
        f"{cli} doctor  # engines, GPUs, models and what is missing",
        f"{cli} enroll --url {server_url} --token {token or '<token>'} --name <name>",
        f"{cli} start",
    ]
