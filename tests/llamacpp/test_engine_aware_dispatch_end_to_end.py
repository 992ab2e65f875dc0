"""Engine-aware dispatch on real parts: live server, PostgreSQL, Redis, and runner agents
started as processes with the real `stackselect-runner` CLI (each a Celery worker).

A measured llama.cpp plan waits while the only runner does not offer llama.cpp, saying why, and
never runs on the simulated engine; when a second runner that has llama.cpp (and the model in its
store) enrolls, the job runs there on the real engine.
"""

from __future__ import annotations

import time

import pytest

from apps.benchmarks.choices import AttemptState, JobState
from apps.benchmarks.models import ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
NEEDS = "llama.cpp (any build) with model {} on 1 x NVIDIA H100 SXM (h100-sxm)"
# Several heartbeats and Celery polls: long enough for a wrong runner to have taken the job.
WAIT_S = 6


def test_a_job_waits_for_a_runner_with_its_engine_and_runs_on_the_one_that_enrolls(
    alice, acme, llama_selection, gemma_store, runners, pinned_cpus, alice_client
):
    dry_only = runners("sim-only", offers=("simulated",))
    options = PlanOptions(
        request_count=4, load_points=({"rate_rps": 1.0},), warmup_requests=1, max_attempts=1
    )
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=llama_selection.pk, options=options
    )
    job = plan.jobs.get()
    needs = NEEDS.format(llama_selection.model.slug)
    assert job.engine["adapter"] == "llama-cpp"
    assert job.state == JobState.WAITING_FOR_RUNNER
    assert job.state_reason.startswith(f"No online runner has {needs}. ")
    assert "sim-only lacks llama.cpp (any build) (it has simulated)" in job.state_reason

    time.sleep(WAIT_S)
    job.refresh_from_db()
    assert job.state == JobState.WAITING_FOR_RUNNER
    attempt = job.attempts.get()
    assert (attempt.state, attempt.runner_id) == (AttemptState.DISPATCHED, None)
    assert not ResultUpload.objects.filter(job=job).exists()
    assert "claimed job" not in dry_only.output()
    page = alice_client.get(f"/benchmarks/{plan.pk}/").content.decode()
    assert f"No online runner has {needs}." in page

    llama = runners("llama-b", models=gemma_store)

    def finished() -> bool:
        job.refresh_from_db()
        return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

    wait_for(finished, timeout=300, what="the llama.cpp job to finish\n" + llama.output())
    assert job.state == JobState.SUCCEEDED, job.state_reason + "\n" + llama.output()
    attempt.refresh_from_db()
    assert attempt.runner.name == "llama-b"
    upload = ResultUpload.objects.get(job=job)
    assert upload.meta["engine"]["version"].startswith("llama-cpp-python ")
    assert upload.meta["engine"]["effective_config"]["adapter"] == "llama-cpp"
    assert "claimed job" not in dry_only.output()
