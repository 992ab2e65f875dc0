"""A private copy of the whole stack for the fault scripts: nothing shared is ever touched.

The machine's own PostgreSQL (5432) and Redis (6379) serve other people and CI, and the fault
scripts restart their services on purpose, so each script starts its own: a PostgreSQL cluster
initialised into a temporary folder (fsync off: it is thrown away), a Redis without persistence,
the migrated web app under gunicorn, a lease reaper looping in `manage.py shell`, and runner
agents as child processes (tests/fleet/processes.py). `private_stack()` tears all of it down on
the way out, on an exception, Ctrl-C or SIGTERM too.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from glob import glob
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fleet.processes import RunnerProcess, wait_for  # noqa: E402

# Heartbeats every second, and unclaimed attempts re-sent after 10 s (the lowest allowed), so
# every fault shows within seconds; each script sets its own RUNNER_LEASE_SECONDS.
FAST_FLEET = {
    "RUNNER_HEARTBEAT_INTERVAL_S": "1",
    "RUNNER_OFFLINE_AFTER_S": "5",
    "RUNNER_REDISPATCH_AFTER_S": "10",
}
PG_SUPERUSER = "postgres"
DATABASE = "stackselect"
REAPER_LOOP = """
import time
from django.db import connection
from apps.benchmarks.dispatch import reap_expired_leases
while True:
    try:
        report = reap_expired_leases()
        if report.lost or report.republished or report.failed:
            print(time.strftime('%H:%M:%S'), report, flush=True)
    except Exception as error:  # a restarted database: reconnect on the next turn
        print(time.strftime('%H:%M:%S'), 'reaper:', type(error).__name__, error, flush=True)
        connection.close()
    time.sleep({interval})
"""


def fault_parser(doc: str, *, timeout_s: float) -> argparse.ArgumentParser:
    """The options every fault script has: its time bound and keeping the logs."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=timeout_s, help="seconds in all")
    parser.add_argument("--keep", action="store_true", help="keep the logs folder")
    return parser


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _postgres_bin(name: str) -> str:
    found = sorted(glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    on_path = shutil.which(name)
    if on_path is None:
        raise RuntimeError(f"{name} not found under /usr/lib/postgresql/*/bin or on PATH")
    return on_path


def _stop(process: subprocess.Popen | None, grace_s: float = 10) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


@dataclass
class PrivatePostgres:
    """A throw-away cluster on a free port; run as `postgres` when we are root (initdb refuses)."""

    folder: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def url(self) -> str:
        return f"postgres://{PG_SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", PG_SUPERUSER, "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")

    def create(self) -> None:
        self.folder.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, PG_SUPERUSER, PG_SUPERUSER)
        self._run(_postgres_bin("initdb"), "-D", str(self.data), "-U", PG_SUPERUSER,
                  "--auth=trust", "-E", "UTF8", "--no-sync")  # fmt: skip
        self.start()
        self._run(_postgres_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", PG_SUPERUSER, DATABASE)  # fmt: skip

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")  # fmt: skip
        self._run(_postgres_bin("pg_ctl"), "-D", str(self.data), "-l",
                  str(self.folder / "postgres.log"), "-o", options, "-w", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`fast` ends every session at once, as a restart by an operator does."""
        self._run(_postgres_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@dataclass
class PrivateRedis:
    """A Redis child process without persistence: a restart loses every queued message."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", str(self.folder),
                   "--logfile", str(self.folder / "redis.log")]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_for(self.answers, timeout=20, what=f"Redis on port {self.port}")

    def answers(self) -> bool:
        ping = subprocess.run(["redis-cli", "-p", str(self.port), "ping"],
                              capture_output=True, text=True, timeout=10)  # fmt: skip
        return ping.stdout.strip() == "PONG"

    def stop(self) -> None:
        """Like a crash of a cache-only Redis: nothing is saved."""
        if self.process and self.process.poll() is None:
            subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
                           capture_output=True, timeout=10)  # fmt: skip
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _stop(self.process)


@dataclass
class PrivateStack:
    """Every service of one fault run, and the environment that points the app at them."""

    workdir: Path
    postgres: PrivatePostgres | None
    redis: PrivateRedis
    database_url: str = ""
    web_port: int = field(default_factory=free_port)
    settings: dict[str, str] = field(default_factory=dict)
    children: list[subprocess.Popen] = field(default_factory=list)
    runners: list[RunnerProcess] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE"))}
        return {
            **base,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.redis.url,
            "SECRET_KEY": "private-fault-stack-not-a-secret",
            "STACKSELECT_VAR_DIR": str(self.workdir / "var"),
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "runner")]),
            **self.settings,
        }

    def manage(self, *args: str) -> None:
        command = [sys.executable, str(ROOT / "manage.py"), *args]
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")

    def spawn(self, name: str, command: list[str]) -> subprocess.Popen:
        """A child whose output goes to <workdir>/<name>.log; stopped at teardown."""
        log = (self.workdir / f"{name}.log").open("ab")
        process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log,
                                   stderr=subprocess.STDOUT)  # fmt: skip
        self.children.append(process)
        return process

    def start_web(self, workers: int = 2, threads: int = 1, timeout_s: int = 60) -> None:
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        self.spawn("gunicorn", [gunicorn, "config.wsgi:application", "--bind",
                                f"127.0.0.1:{self.web_port}", "--workers", str(workers),
                                "--threads", str(threads),
                                "--timeout", str(timeout_s)])  # fmt: skip
        wait_for(self.web_answers, timeout=60, what=f"gunicorn at {self.url}")

    def web_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def start_reaper(self, interval_s: float = 1.0) -> None:
        """What Celery beat does every RUNNER_REAP_INTERVAL_S, here every `interval_s`."""
        code = REAPER_LOOP.format(interval=interval_s)
        self.spawn("reaper", [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code])

    def reaper_totals(self) -> str:
        """What the reaper loop did, summed from its log: lost, redispatched, republished..."""
        log = self.workdir / "reaper.log"
        totals: Counter[str] = Counter()
        for line in log.read_text().splitlines() if log.exists() else []:
            if "ReapReport(" in line:
                totals.update({k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)})
        return ", ".join(f"{name} {count}" for name, count in totals.items()) or "nothing"

    def use_django(self) -> None:
        """Point this process's Django at the private services and set it up."""
        os.environ.update(self.env)
        import django

        django.setup()

    def start_runner(self, name: str, token: str, *, gpus: int = 1) -> RunnerProcess:
        runner = RunnerProcess(name=name, home=self.workdir / "runners" / name)
        runner.enroll(self.url, token, gpus=gpus)
        runner.start()
        self.runners.append(runner)
        return runner

    def restart_postgres(self, down_s: float) -> None:
        """Stop, wait, start; this process's own Django connections are dropped too."""
        if self.postgres is None:
            raise RuntimeError("the database is not this stack's own: it is never restarted")
        self.postgres.stop()
        time.sleep(down_s)
        self.postgres.start()
        if os.environ.get("DATABASE_URL") == self.database_url:
            from django.db import connections

            connections.close_all()

    def restart_redis(self, down_s: float) -> None:
        self.redis.stop()
        time.sleep(down_s)
        self.redis.start()

    def teardown(self) -> None:
        for runner in self.runners:
            with suppress(Exception):
                runner.stop()
        for child in reversed(self.children):
            with suppress(Exception):
                _stop(child)
        self.redis.stop()
        if self.postgres and self.postgres.running():
            with suppress(Exception):
                self.postgres.stop(mode="immediate")


def _raise_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}")


@contextmanager
def private_stack(
    settings: dict[str, str] | None = None,
    *,
    web_workers: int = 2,
    web_timeout_s: int = 60,
    keep: bool = False,
    database_url: str = "",
) -> Iterator[PrivateStack]:
    """Start PostgreSQL, Redis, the migrated app under gunicorn; always tear them down.

    `settings` are extra environment variables for the app (RUNNER_LEASE_SECONDS, ...);
    `web_timeout_s` is gunicorn's worker timeout (a long request is killed after it). With
    `keep`, the temporary folder (logs of every process) is left for inspection. With
    `database_url`, that (empty, throw-away) database is used instead of a private cluster.
    """
    workdir = Path(tempfile.mkdtemp(prefix="stackselect-faults-"))
    workdir.chmod(0o755)  # the postgres user must reach its cluster folder inside
    postgres = None if database_url else PrivatePostgres(workdir / "postgres")
    stack = PrivateStack(
        workdir=workdir,
        postgres=postgres,
        redis=PrivateRedis(workdir / "redis"),
        database_url=database_url or postgres.url,
        settings=dict(settings or {}),
    )
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        if postgres:
            postgres.create()
        stack.redis.start()
        stack.manage("migrate", "--noinput", "-v", "0")
        stack.start_web(workers=web_workers, timeout_s=web_timeout_s)
        yield stack
    finally:
        stack.teardown()
        signal.signal(signal.SIGTERM, previous)
        if keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
