"""Real runner agents as child processes, for the end-to-end fleet tests.

Each runner gets its own credentials file and work folder, enrolls over HTTP against the live
server, then runs `stackselect-runner start` (a Celery worker on Redis) in its own process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER_CLI = [sys.executable, "-m", "stackselect_runner.cli"]


@dataclass
class RunnerProcess:
    """`offers`: the engines this runner offers (STACKSELECT_RUNNER_ENGINES); None: all found."""

    name: str
    home: Path
    offers: tuple[str, ...] | None = None
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.log = self.home / "runner.log"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
        env.update(
            PYTHONPATH=str(ROOT / "runner"),
            STACKSELECT_RUNNER_CONFIG=str(self.home / "credentials.json"),
            STACKSELECT_RUNNER_WORK_DIR=str(self.home / "work"),
            STACKSELECT_RUNNER_REPORT_INTERVAL_S="0.5",
            STACKSELECT_RUNNER_ENGINE_STOP_GRACE_S="3",
        )
        if self.offers is not None:
            env["STACKSELECT_RUNNER_ENGINES"] = ",".join(self.offers)
        return env

    def cli(self, *args: str) -> str:
        """Run one `stackselect-runner` command as this runner; its output, or an assertion."""
        result = subprocess.run([*RUNNER_CLI, *args], env=self.env, capture_output=True,
                                text=True, timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def add_model(self, slug: str, checkpoint: Path, draft_for: str | None = None) -> None:
        """Map a catalog model to a local checkpoint in this runner's model store; with
        `draft_for`, a speculative draft model key, declared a draft of that model."""
        draft = ("--draft-for", draft_for) if draft_for else ()
        self.cli("models", "add", slug, str(checkpoint), *draft)

    def enroll(self, url: str, token: str, accelerator: str = "h100-sxm", gpus: int = 1) -> None:
        self.cli("enroll", "--url", url, "--token", token, "--name", self.name,
                 "--simulate-accelerator", accelerator, "--simulate-gpus", str(gpus))  # fmt: skip

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*RUNNER_CLI, "start", "--loglevel", "INFO"], env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def kill(self) -> None:
        """What a crash looks like: SIGKILL to the agent; its engine dies with it."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_for(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str | Callable[[], str],
    every: float = 0.3,
) -> None:
    """`what` names what was awaited; a callable is asked only on a timeout, so it can say
    what the state was then (a runner's output, a job's reason)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every)
    described = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {described}")


def restart_local_redis(broker_url: str) -> None:
    """Stop the local Redis without saving (its queues are lost, as in a crash) and start it
    again the way .ci/run does."""
    if not broker_url.startswith(("redis://127.0.0.1:6379", "redis://localhost:6379")):
        raise AssertionError(
            f"this fault test restarts the local Redis; the broker is {broker_url}"
        )
    subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "shutdown", "nosave"],
                   capture_output=True, timeout=30)  # fmt: skip
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379",
         "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis",
         "--logfile", "/var/log/redis/ci.log"],
        check=True, timeout=30,
    )  # fmt: skip
    wait_for(_redis_answers, timeout=30, what="Redis to come back")


def _redis_answers() -> bool:
    ping = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", "6379", "ping"],
                          capture_output=True, text=True, timeout=10)  # fmt: skip
    return ping.stdout.strip() == "PONG"
