"""The benchmarks app's reactions to the runners app's signals (connected in apps.py)."""

from __future__ import annotations

from typing import Any

from apps.benchmarks.dispatch import pending_jobs_reroute
from apps.runners.models import Runner
from apps.runners.signals import runner_available


def _reroute(sender: Any, *, runner: Runner, **_: Any) -> None:
    """A runner came (back) with its labels: jobs waiting for one like it may go now."""
    pending_jobs_reroute(team_id=runner.team_id)


def connect() -> None:
    runner_available.connect(_reroute, sender=Runner, dispatch_uid="benchmarks.reroute")
