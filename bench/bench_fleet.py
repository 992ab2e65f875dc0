"""Fleet scale: dispatch, heartbeats, claims and the reaper with many simulated runners.

For each size RUNNERSxJOBS (default 50x500 and 200x2000, so the growth shows) a private stack
(bench/faults/stack.py: PostgreSQL, Redis, the migrated app) is started and, in this process
(the services the runner API calls, without HTTP):

1. `JOBS` jobs are planned (plans of 20 simulated 1-GPU H100 jobs) while no runner is online:
   each is dispatched (attempt row, audit, a Celery message on Redis) and waits for a runner;
2. `RUNNERS` simulated runners are enrolled and send their first heartbeat one after the other:
   each comes back online, and the pending jobs are rerouted (the "comeback" heartbeat);
3. the reaper runs once over all the pending jobs;
4. every runner then works the queue: it pops its next message from Redis (as its Celery
   worker would), claims the attempt, heartbeats with it and finishes it, for the first
   `--claims` attempts (default 200). Dispatch latency is the time from an attempt's
   publication on Redis to its claim; it includes the time those jobs sat queued while this
   one process ran the steps before, so read it as the queue's wait, not the server's cost.

Printed per size: queries and milliseconds per dispatched job, per comeback heartbeat, per
steady heartbeat (with an attempt), per claim, the reaper pass, and dispatch latency p50/p99.

    .venv/bin/python bench/bench_fleet.py [--sizes 50x500,200x2000]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))

from stack import private_stack

JOBS_PER_PLAN = 20
PROBE = {
    "gpus": [],
    "gpu_count": 1,
    "simulated": True,
    "simulated_accelerator": "h100-sxm",
    "engines": {"simulated": "0.1.0"},
    "hostname": "bench",
}


@dataclass
class Cost:
    """Wall time and database queries of every call of one operation."""

    seconds: list[float] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)

    def time(self, call: Callable[..., Any], *, per: int = 1, **kwargs: Any) -> Any:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        connection.queries_log.clear()  # a full log (9,000 queries) would miscount
        with CaptureQueriesContext(connection) as captured:
            start = perf_counter()
            result = call(**kwargs)
            elapsed = perf_counter() - start
        self.seconds.extend([elapsed / per] * per)
        self.queries.extend([len(captured) / per] * per)
        return result

    def line(self, name: str) -> str:
        ms = np.array(self.seconds) * 1e3
        p50, p99 = np.percentile(ms, [50, 99])
        return (
            f"{name:<30} {len(ms):>6} x  p50 {p50:8.2f} ms  p99 {p99:8.2f} ms  "
            f"{np.mean(self.queries):7.1f} queries each"
        )


@dataclass
class Size:
    runners: int
    jobs: int

    @classmethod
    def parse(cls, text: str) -> Size:
        runners, jobs = (int(part) for part in text.lower().split("x"))
        if runners < 1 or jobs < JOBS_PER_PLAN:
            raise argparse.ArgumentTypeError(f"{text}: at least 1 runner and {JOBS_PER_PLAN} jobs")
        return cls(runners, jobs)


def team_and_selection(name: str, rows: dict[str, Any]) -> tuple[Any, Any, Any]:
    """A team, its admin and a selection of JOBS_PER_PLAN chosen 1-GPU H100 candidates."""
    from django.contrib.auth import get_user_model

    from apps.accounts.choices import Role
    from apps.accounts.models import Membership, Team
    from tests.benchmarks.factories import selection_with_candidates

    team = Team.objects.create(slug=name, name=name)
    admin = get_user_model().objects.create_user(name, password=None)
    Membership.objects.create(user=admin, team=team, role=Role.ADMIN)
    layouts = [("h100-sxm", 1, "bf16")] * JOBS_PER_PLAN
    return team, admin, selection_with_candidates(team, admin, rows, layouts=layouts)


def plan_jobs(team: Any, admin: Any, selection: Any, jobs: int, cost: Cost) -> None:
    from django.db import transaction

    from apps.benchmarks.plan_identity import PlanOptions
    from apps.benchmarks.services import plan_create

    options = PlanOptions(run_mode="simulated", request_count=10, load_points=({"rate_rps": 1},))
    for _ in range(jobs // JOBS_PER_PLAN):

        def create() -> None:
            with transaction.atomic():  # the publish runs on commit, inside the timing
                plan_create(actor_user=admin, team=team, selection_id=selection.pk, options=options)

        cost.time(create, per=JOBS_PER_PLAN)


def enrolled_runners(team: Any, admin: Any, count: int) -> list[Any]:
    from apps.runners.services import enrollment_token_create, runner_enroll

    runners = []
    for number in range(count):
        _, token = enrollment_token_create(actor_user=admin, team=team)
        runner, _ = runner_enroll(token_plaintext=token, name=f"sim-{number:04d}", probe=PROBE)
        runners.append(runner)
    return runners


def next_attempt(redis: Any, queues: list[str]) -> int | None:
    """The attempt id of the next Celery message on any of the runner's queues (or None)."""
    for queue in queues:
        message = redis.rpop(queue)
        if message is not None:
            envelope = json.loads(message)
            _, kwargs, _ = json.loads(base64.b64decode(envelope["body"]))
            return int(kwargs["attempt_id"])
    return None


def work_the_queue(runners: list[Any], redis: Any, costs: dict[str, Cost], limit: int) -> None:
    """Rounds in which every runner takes, runs (one heartbeat) and finishes one attempt,
    until the queue is empty or `limit` attempts were claimed."""
    from apps.benchmarks.attempts import attempt_claim, attempt_finish, runner_heartbeat
    from apps.runners.selectors import runner_queues

    queues = {runner.pk: runner_queues(runner) for runner in runners}
    taken = 0
    while taken < limit:
        claimed = []
        for runner in runners[: limit - taken]:
            attempt_id = next_attempt(redis, queues[runner.pk])
            if attempt_id is None:
                continue
            costs["claim"].time(attempt_claim, runner=runner, attempt_id=attempt_id)
            claimed.append((runner, attempt_id))
        if not claimed:
            return
        taken += len(claimed)
        for runner, attempt_id in claimed:
            costs["heartbeat (with attempt)"].time(
                runner_heartbeat, runner=runner, attempt_id=attempt_id
            )
        for runner, attempt_id in claimed:
            attempt_finish(runner=runner, attempt_id=attempt_id, state="failed", reason="bench")


def dispatch_latency_ms(team: Any) -> np.ndarray:
    from apps.benchmarks.models import JobAttempt

    claimed = JobAttempt.objects.filter(job__team=team, claimed_at__isnull=False)
    rows = claimed.values_list("published_at", "claimed_at")
    return np.array([(claimed - published).total_seconds() * 1e3 for published, claimed in rows])


def run_size(size: Size, rows: dict[str, Any], redis: Any, claims: int) -> Iterator[str]:
    """One size in a team of its own; the jobs of an earlier size have all finished."""
    from apps.benchmarks.attempts import runner_heartbeat
    from apps.benchmarks.dispatch import reap_expired_leases
    from apps.benchmarks.models import BenchmarkJob
    from apps.runners.models import Runner

    costs = {
        name: Cost()
        for name in (
            "dispatch (per job)",
            "comeback heartbeat",
            "steady heartbeat (idle)",
            "reaper pass",
            "claim",
            "heartbeat (with attempt)",
        )
    }
    team, admin, selection = team_and_selection(f"fleet-{size.runners}x{size.jobs}", rows)
    runners = enrolled_runners(team, admin, size.runners)
    Runner.objects.filter(team=team).update(last_heartbeat_at=None)  # offline: the jobs wait
    for runner in runners:
        runner.last_heartbeat_at = None
    plan_jobs(team, admin, selection, size.jobs, costs["dispatch (per job)"])
    for runner in runners:
        costs["comeback heartbeat"].time(runner_heartbeat, runner=runner)
    for runner in runners:
        costs["steady heartbeat (idle)"].time(runner_heartbeat, runner=runner)
    pending = BenchmarkJob.objects.filter(team=team, state__in=("queued", "waiting_for_runner"))
    pending_count = pending.count()
    for _ in range(3):
        costs["reaper pass"].time(reap_expired_leases)
    start = perf_counter()
    work_the_queue(runners, redis, costs, claims)
    drained = perf_counter() - start
    latency = dispatch_latency_ms(team)
    yield f"--- {size.runners} runners, {size.jobs} jobs ({pending_count} pending at the reaper)"
    for name, cost in costs.items():
        yield cost.line(name)
    p50, p99 = np.percentile(latency, [50, 99])
    yield (
        f"dispatch latency (published -> claimed) of {len(latency)} attempts: "
        f"p50 {p50:.0f} ms  p99 {p99:.0f} ms  (the first {len(latency)} of {size.jobs} queued "
        f"jobs, taken by one process in rounds over the runners: {len(latency) / drained:.1f} "
        f"claims/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [Size.parse(part) for part in text.split(",")],
        default=[Size(50, 500), Size(200, 2000)],
        help="RUNNERSxJOBS,... (default 50x500,200x2000)",
    )
    parser.add_argument("--claims", type=int, default=200, help="attempts claimed per size")
    args = parser.parse_args()
    import redis as redis_client

    with private_stack(web_workers=1) as stack:
        stack.use_django()
        from tests.benchmarks.factories import catalog

        rows = catalog()
        redis = redis_client.Redis.from_url(stack.redis.url)
        for size in args.sizes:
            for line in run_size(size, rows, redis, args.claims):
                print(line, flush=True)


if __name__ == "__main__":
    main()
