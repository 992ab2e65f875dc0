"""One 8-GPU runner runs four 1-GPU jobs side by side, each pinned to its own device.

Real parts: live HTTP server, PostgreSQL, Redis, a `stackselect-runner start` process with
one worker thread per GPU, and four simulated engines that print the device variable they got.
"""

from __future__ import annotations

import pytest

from apps.benchmarks.choices import AttemptState, JobState
from apps.benchmarks.models import BenchmarkJob, JobAttempt, JobLog, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.benchmarks.factories import selection_with_candidates
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

JOBS = 4  # four candidates of one layout: four 1-GPU jobs of one plan


def _all_done(plan_id: int) -> bool:
    jobs = BenchmarkJob.objects.filter(plan_id=plan_id)
    finished = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
    return jobs.exists() and all(job.state in finished for job in jobs)


def test_an_8_gpu_runner_runs_four_1_gpu_jobs_at_once_each_on_its_own_device(
    alice, acme, rows, runners
):
    selection = selection_with_candidates(
        acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")] * JOBS
    )
    runner = runners("sim-8", gpus=8)
    options = PlanOptions(
        run_mode="simulated",
        request_count=16,
        load_points=({"rate_rps": 2.0},),
        warmup_requests=1,
        max_attempts=1,
    )
    plan = plan_create(actor_user=alice, team=acme, selection_id=selection.pk, options=options)
    assert plan.jobs.count() == JOBS

    wait_for(
        lambda: _all_done(plan.pk),
        timeout=240,
        what="the four jobs to finish\n" + runner.output()[-3000:],
    )

    jobs = list(plan.jobs.order_by("pk"))
    assert [job.state for job in jobs] == [JobState.SUCCEEDED] * 4, [
        job.state_reason for job in jobs
    ]
    attempts = list(JobAttempt.objects.filter(job__plan=plan).select_related("runner"))
    assert len(attempts) == 4
    assert {a.state for a in attempts} == {AttemptState.SUCCEEDED}
    assert {a.runner.name for a in attempts} == {"sim-8"}
    # Overlap: every job had started before the first one finished.
    assert max(a.started_at for a in attempts) < min(a.finished_at for a in attempts)

    seen: dict[int, str] = {}
    for attempt in attempts:
        upload = ResultUpload.objects.get(attempt=attempt)
        pinned = upload.meta["engine"]["visible_devices"]["CUDA_VISIBLE_DEVICES"]
        log = JobLog.objects.get(attempt=attempt).text
        assert f"simengine: CUDA_VISIBLE_DEVICES={pinned}\n" in log  # what the engine saw
        seen[attempt.pk] = pinned
    assert len(set(seen.values())) == 4, seen
    assert set(seen.values()) <= {str(device) for device in range(8)}
