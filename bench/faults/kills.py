"""The rounds of kill_runner.py: start a job, find the runner running it, kill it, restart it."""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.utils import timezone
from fleet import Fleet, any_running, running_attempt
from stack import RunnerProcess, wait_for

from apps.benchmarks.choices import JobState
from apps.benchmarks.models import BenchmarkJob


@dataclass
class Kill:
    job_id: int
    victim: str
    killed_at: datetime

    def recovery_s(self) -> float | None:
        """Seconds from the kill until the job succeeded elsewhere; None if it never did."""
        job = BenchmarkJob.objects.get(pk=self.job_id)
        if job.state != JobState.SUCCEEDED or job.finished_at is None:
            return None
        return (job.finished_at - self.killed_at).total_seconds()


def kill_rounds(
    fleet: Fleet,
    runners: dict[str, RunnerProcess],
    args: argparse.Namespace,
    rng: random.Random,
    started: float,
) -> list[Kill]:
    """One plan per round; its runner is killed 0.3 to 1.5 s after the job starts running."""
    kills: list[Kill] = []
    number = 0
    while len(kills) < args.kills:
        number += 1
        plan = fleet.plan(requests=args.requests, rates=[args.rate], max_attempts=3)
        job_id = plan.jobs.get().pk
        budget = args.timeout - (time.monotonic() - started)
        wait_for(partial(any_running, [job_id]), timeout=max(budget, 1),
                 what=f"round {number}: a runner to run job {job_id}")  # fmt: skip
        time.sleep(rng.uniform(0.3, 1.5))
        attempt = running_attempt(job_id)
        if attempt is None:  # it finished already: too short a job to be killed mid-way
            print(f"round {number}: job {job_id} finished before the kill; no kill")
            continue
        victim = runners[attempt.runner.name]
        victim.kill()
        kills.append(Kill(job_id=job_id, victim=victim.name, killed_at=timezone.now()))
        print(f"round {number}: killed {victim.name} running job {job_id}", flush=True)
        victim.start()
    return kills
