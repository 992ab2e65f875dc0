"""The Django side of the fault scripts: a team, a selection, plans, and what became of the jobs.

Import it only after `PrivateStack.use_django()`: it talks to the private database.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Count
from stack import PrivateStack, RunnerProcess, wait_for

from apps.accounts.choices import Role
from apps.accounts.models import Membership, Team
from apps.benchmarks.choices import JOB_TERMINAL, AttemptState, JobState
from apps.benchmarks.models import BenchmarkJob, BenchmarkPlan, JobAttempt, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.evidence.models import EvidenceRun, Sample
from apps.runners.services import enrollment_token_create
from apps.selections.models import Selection
from tests.benchmarks.factories import catalog, selection_with_candidates

T = TypeVar("T")


@dataclass(frozen=True)
class Fleet:
    """The one team every fault script works in, its admin, and a selection of candidates."""

    team: Team
    admin: Any
    selection: Selection

    def enrollment_token(self) -> str:
        return enrollment_token_create(actor_user=self.admin, team=self.team)[1]

    def plan(self, *, requests: int, rates: Iterable[float], max_attempts: int) -> BenchmarkPlan:
        """A fixed plan over the selection's chosen candidates, warm-up of one request."""
        options = PlanOptions(
            run_mode="simulated",
            request_count=requests,
            load_points=tuple({"rate_rps": rate} for rate in rates),
            warmup_requests=1,
            max_attempts=max_attempts,
        )
        return plan_create(
            actor_user=self.admin, team=self.team, selection_id=self.selection.pk, options=options
        )


def fleet(*, gpu_counts: Iterable[int] = (1,)) -> Fleet:
    """Test catalog rows (tests/benchmarks/factories.py) and one H100 candidate per GPU count."""
    team = Team.objects.create(slug="faults", name="Fault injection")
    admin = get_user_model().objects.create_user("fault-admin", password=None)
    Membership.objects.create(user=admin, team=team, role=Role.ADMIN)
    layouts = [("h100-sxm", count, "bf16") for count in gpu_counts]
    selection = selection_with_candidates(team, admin, catalog(), layouts=layouts)
    return Fleet(team=team, admin=admin, selection=selection)


def surviving(read: Callable[[], T]) -> T:
    """Run a read, reconnecting while the database restarts (a fault script's own queries)."""
    for _ in range(60):
        close_old_connections()
        try:
            return read()
        except DatabaseError:
            connection.close()
            time.sleep(0.5)
    return read()


def running_attempt(job_id: int) -> JobAttempt | None:
    return (
        JobAttempt.objects.filter(job_id=job_id, state=AttemptState.RUNNING)
        .select_related("runner")
        .first()
    )


def any_running(job_ids: list[int]) -> bool:
    return any(running_attempt(job_id) is not None for job_id in job_ids)


def first_upload_stored(plan_id: int) -> bool:
    return ResultUpload.objects.filter(job__plan_id=plan_id).exists()


def job_states(job_ids: list[int]) -> list[str]:
    return list(BenchmarkJob.objects.filter(pk__in=job_ids).values_list("state", flat=True))


def wait_until_finished(job_ids: list[int], *, timeout_s: float) -> bool:
    """True when every job reached a terminal state in time; False on the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(state in JOB_TERMINAL for state in surviving(lambda: job_states(job_ids))):
            return True
        time.sleep(1)
    return False


@dataclass
class Outcome:
    """What became of a set of jobs: finished, duplicated, lost."""

    jobs: int
    job_states: Counter = field(default_factory=Counter)
    attempt_states: Counter = field(default_factory=Counter)
    uploads: int = 0
    duplicate_chunks: int = 0
    doubly_succeeded_jobs: int = 0
    jobs_with_two_evidence_runs: int = 0
    uploads_of_lost_attempts: int = 0
    samples: int = 0
    expected_samples: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        """Jobs that never produced a stored result: failed, or still not finished."""
        return self.jobs - self.job_states[JobState.SUCCEEDED]

    def lines(self) -> Iterator[str]:
        yield (
            f"jobs: {self.jobs}  finished ok: {self.job_states[JobState.SUCCEEDED]}  "
            f"lost: {self.lost}  (states {dict(sorted(self.job_states.items()))})"
        )
        yield f"attempts: {dict(sorted(self.attempt_states.items()))}"
        yield (
            f"duplicates: {self.duplicate_chunks} chunk(s) stored twice, "
            f"{self.doubly_succeeded_jobs} job(s) succeeded twice, "
            f"{self.jobs_with_two_evidence_runs} job(s) with evidence from two attempts"
        )
        yield (
            f"result rows: {self.uploads} upload(s) ({self.uploads_of_lost_attempts} from lost "
            f"attempts), {self.samples} sample(s) stored, {self.expected_samples} expected"
        )
        yield from (f"not ok: {failure}" for failure in self.failures)


def outcome(job_ids: list[int]) -> Outcome:
    return surviving(lambda: _outcome(job_ids))


def _outcome(job_ids: list[int]) -> Outcome:
    jobs = BenchmarkJob.objects.filter(pk__in=job_ids).select_related("plan")
    uploads = ResultUpload.objects.filter(job__in=jobs)
    chunk_copies = uploads.values("job", "load_point_index", "chunk_index").annotate(
        copies=Count("id")
    )
    succeeded = (
        JobAttempt.objects.filter(job__in=jobs, state=AttemptState.SUCCEEDED)
        .values("job")
        .annotate(n=Count("id"))
    )
    runs = EvidenceRun.objects.filter(job__in=jobs).values("job").annotate(n=Count("id"))
    return Outcome(
        jobs=len(job_ids),
        job_states=Counter(jobs.values_list("state", flat=True)),
        attempt_states=Counter(
            JobAttempt.objects.filter(job__in=jobs).values_list("state", flat=True)
        ),
        uploads=uploads.count(),
        duplicate_chunks=sum(row["copies"] - 1 for row in chunk_copies),
        doubly_succeeded_jobs=sum(1 for row in succeeded if row["n"] > 1),
        jobs_with_two_evidence_runs=sum(1 for row in runs if row["n"] > 1),
        uploads_of_lost_attempts=uploads.filter(attempt__state=AttemptState.LOST).count(),
        samples=Sample.objects.filter(result__run__job__in=jobs).count(),
        expected_samples=sum(len(job.plan.requests) * len(job.plan.load_points) for job in jobs),
        failures=[
            f"job {job.pk} {job.state}: {job.state_reason}"
            for job in jobs
            if job.state != JobState.SUCCEEDED
        ],
    )


def start_runners(
    stack: PrivateStack, team: Fleet, names: str, *, gpus: int
) -> dict[str, RunnerProcess]:
    """One simulated runner per letter of `names`, and the reaper loop; ready to take jobs."""
    runners = {name: stack.start_runner(name, team.enrollment_token(), gpus=gpus) for name in names}
    stack.start_reaper(interval_s=1.0)
    wait_for(lambda: all("ready" in r.output() for r in runners.values()), timeout=60,
             what="the runners to start")  # fmt: skip
    return runners


def report(stack: PrivateStack, job_ids: list[int], *, fault: str, deadline: float) -> Outcome:
    """Wait for the jobs until `deadline` (time.monotonic), then print what became of them."""
    finished = wait_until_finished(job_ids, timeout_s=deadline - time.monotonic())
    result = outcome(job_ids)
    print(fault)
    print("\n".join(result.lines()))
    print(f"reaper: {stack.reaper_totals()}")
    print(f"all jobs terminal before the deadline: {finished}")
    return result
