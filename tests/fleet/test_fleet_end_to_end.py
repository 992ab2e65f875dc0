"""The fleet on real parts: live HTTP server, PostgreSQL, Redis, Celery workers running the
runner agent, and the simulated engine over HTTP. Only the GPU is simulated."""

from __future__ import annotations

import time

import pytest

from apps.benchmarks.choices import AttemptState, JobState
from apps.benchmarks.dispatch import reap_expired_leases
from apps.benchmarks.models import BenchmarkJob, JobAttempt, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_cancel, plan_create
from apps.evidence.models import LoadPointResult
from tests.benchmarks.factories import selection_with_candidates
from tests.fleet.processes import restart_local_redis, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _plan(alice, acme, selection, *, requests: int, rates: tuple[float, ...]):
    options = PlanOptions(
        run_mode="simulated",
        request_count=requests,
        load_points=tuple({"rate_rps": rate} for rate in rates),
        warmup_requests=1,
        max_attempts=3,
    )
    return plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)


def _job_done(job: BenchmarkJob) -> bool:
    job.refresh_from_db()
    return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}


def _running_attempt(job: BenchmarkJob) -> JobAttempt | None:
    return job.attempts.filter(state=AttemptState.RUNNING, runner__isnull=False).first()


def _reap_until(condition, *, timeout: float, what: str) -> None:
    def reaped_and_checked() -> bool:
        reap_expired_leases()
        return condition()

    wait_for(reaped_and_checked, timeout=timeout, what=what, every=1.0)


def test_a_plans_results_arrive_through_celery_and_are_stored(alice, acme, selection, runners):
    runner = runners("sim-a")
    plan = _plan(alice, acme, selection, requests=8, rates=(2.0, 4.0))
    job = plan.jobs.get()

    wait_for(lambda: _job_done(job), timeout=120, what="the job to finish\n" + runner.output())

    assert job.state == JobState.SUCCEEDED, job.state_reason
    attempt = job.attempts.get()
    assert attempt.state == AttemptState.SUCCEEDED and attempt.runner.name == "sim-a"
    uploads = ResultUpload.objects.filter(job=job).order_by("load_point_index")
    assert [u.load_point_index for u in uploads] == [0, 1]
    assert all(u.record_count == 8 and len(u.sha256) == 64 for u in uploads)
    results = LoadPointResult.objects.filter(run__job=job).order_by("index")
    assert [result.summary["requests"] for result in results] == [8, 8]


def test_a_runner_killed_mid_job_is_replaced_and_one_result_is_stored(
    alice, acme, selection, runners
):
    fleet = {name: runners(name) for name in ("sim-a", "sim-b")}
    plan = _plan(alice, acme, selection, requests=24, rates=(2.0,))
    job = plan.jobs.get()
    wait_for(lambda: _running_attempt(job) is not None, timeout=60, what="a runner to start")
    first = _running_attempt(job)
    victim = fleet[first.runner.name]
    time.sleep(2)  # mid-load-point
    victim.kill()

    _reap_until(lambda: _job_done(job), timeout=150, what="the job to finish elsewhere")

    attempts = list(job.attempts.order_by("number"))
    assert job.state == JobState.SUCCEEDED, job.state_reason
    assert [a.state for a in attempts] == [AttemptState.LOST, AttemptState.SUCCEEDED]
    assert attempts[1].runner.name != victim.name
    assert ResultUpload.objects.filter(job=job).count() == 1
    assert ResultUpload.objects.get(job=job).attempt == attempts[1]


def test_a_cancel_reaches_the_runner_within_a_heartbeat(alice, acme, selection, runners):
    runner = runners("sim-a")
    plan = _plan(alice, acme, selection, requests=60, rates=(1.0,))
    job = plan.jobs.get()
    wait_for(lambda: _running_attempt(job) is not None, timeout=60, what="the run to start")

    cancelled_at = time.monotonic()
    plan_cancel(actor_user=alice, team=acme, plan_id=plan.pk)
    attempt = job.attempts.get()
    wait_for(
        lambda: attempt.refresh_from_db() or attempt.state == AttemptState.CANCELLED,
        timeout=20,
        what="the runner to stop\n" + runner.output(),
    )

    assert time.monotonic() - cancelled_at < 10
    assert _job_done(job) and job.state == JobState.CANCELLED
    assert not ResultUpload.objects.filter(job=job).exists()


def test_redis_restarted_during_a_plan_loses_no_job(alice, acme, rows, runners, settings):
    selection = selection_with_candidates(acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")] * 2)
    # One 1-GPU runner runs one job at a time, so the second job's message waits in Redis (a
    # multi-GPU runner would already hold it in a worker thread, waiting for a free device).
    runner = runners("sim-a", gpus=1)
    plan = _plan(alice, acme, selection, requests=10, rates=(2.0,))
    jobs = list(plan.jobs.order_by("pk"))
    wait_for(lambda: any(_running_attempt(job) for job in jobs), timeout=60, what="a first run")

    restart_local_redis(settings.CELERY_BROKER_URL)  # the waiting job's message is gone

    _reap_until(
        lambda: all(_job_done(job) for job in jobs),
        timeout=180,
        what="both jobs to finish\n" + runner.output()[-3000:],
    )
    assert [job.state for job in jobs] == [JobState.SUCCEEDED, JobState.SUCCEEDED]
    assert ResultUpload.objects.filter(job__plan=plan).count() == 2
