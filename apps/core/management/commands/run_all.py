"""Run the web server, a Celery worker and Celery beat (and extra processes) in the foreground.

One Ctrl-C stops them all; if any process dies, the others are stopped too, so a broken
set-up is never left half running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

GRACE_SECONDS = 10


class Command(BaseCommand):
    help = "Run web server, Celery worker and beat together; Ctrl-C stops them all."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument(
            "--extra", action="append", default=[], help="name=command to run as well"
        )

    def handle(self, *args, bind: str, extra: list[str], **options) -> None:
        python = sys.executable
        beat_schedule = str(settings.VAR_DIR / "celerybeat-schedule")
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                bind,
                "--workers",
                "2",
                "--access-logfile",
                "-",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--queues",
                "celery",
            ],
            "beat": [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                beat_schedule,
            ],
        }
        for item in extra:
            name, _, command = item.partition("=")
            commands[name] = command.split()
        processes = {
            name: subprocess.Popen(cmd, env=os.environ.copy()) for name, cmd in commands.items()
        }
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping:
            dead = [name for name, proc in processes.items() if proc.poll() is not None]
            if dead:
                self.stderr.write(f"{', '.join(dead)} exited; stopping the rest.")
                break
            time.sleep(0.5)
        self._stop_all(processes)

    def _stop_all(self, processes: dict[str, subprocess.Popen]) -> None:
        for proc in processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        for proc in processes.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        self.stdout.write("all StackSelect processes stopped.")
