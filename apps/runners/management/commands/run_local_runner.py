"""The local runner `make run` starts: a simulated-engine runner of the demo team.

It waits for the web server, enrolls once over HTTP (the credentials stay in var/local-runner/,
or in the folder --home names, so `make demo` can run several), then becomes
`stackselect-runner start`. The runner code is only ever run as a separate program: the web app
never imports it.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import Team
from apps.runners.services import enrollment_token_create

RUNNER_CLI = [sys.executable, "-m", "stackselect_runner.cli"]
SERVER_WAIT_S = 60


class Command(BaseCommand):
    help = "Enroll (once) and run a local runner with the simulated engine for the demo team."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--team", default="demo")
        parser.add_argument("--admin", default="demo", help="a team admin who issues the token")
        parser.add_argument("--accelerator", default="h100-sxm")
        parser.add_argument("--gpus", type=int, default=8)
        parser.add_argument("--name", default="local-simulated", help="the runner's name")
        parser.add_argument(
            "--home", default="local-runner", help="its credentials folder, under the var dir"
        )

    def handle(
        self,
        *args,
        url: str,
        team: str,
        admin: str,
        accelerator: str,
        gpus: int,
        name: str,
        home: str,
        **opts,
    ) -> None:
        folder = Path(settings.VAR_DIR) / home
        env = {
            **os.environ,
            "STACKSELECT_RUNNER_CONFIG": str(folder / "credentials.json"),
            "STACKSELECT_RUNNER_WORK_DIR": str(folder / "work"),
        }
        self._wait_for(url)
        if not (folder / "credentials.json").exists():
            token = self._token(team, admin)
            enroll = [*RUNNER_CLI, "enroll", "--url", url, "--token", token,
                      "--name", name, "--simulate-accelerator", accelerator,
                      "--simulate-gpus", str(gpus)]  # fmt: skip
            pid = os.spawnve(os.P_WAIT, sys.executable, enroll, env)
            if pid != 0:
                raise CommandError("the local runner could not enroll; see the lines above")
        os.execve(sys.executable, [*RUNNER_CLI, "start"], env)

    def _token(self, team_slug: str, admin_name: str) -> str:
        team = Team.objects.filter(slug=team_slug).first()
        user = get_user_model().objects.filter(username=admin_name).first()
        if team is None or user is None:
            raise CommandError(
                f"team {team_slug!r} or user {admin_name!r} is missing: run bootstrap_demo"
            )
        _, plaintext = enrollment_token_create(actor_user=user, team=team)
        return plaintext

    def _wait_for(self, url: str) -> None:
        deadline = time.monotonic() + SERVER_WAIT_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url.rstrip('/')}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(1)
        raise CommandError(f"the web server at {url} did not answer within {SERVER_WAIT_S} s")
