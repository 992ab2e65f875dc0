"""A running runner follows its model store, on real parts: live server, PostgreSQL, Redis and a
`stackselect-runner start` process with llama.cpp but an empty store.

The measured llama.cpp job waits naming the model the runner lacks; `stackselect-runner models
add` writes the store the running runner reads, its next re-probe reports the model, the server
re-routes the job, and the same process (never restarted) runs it on the real engine.
"""

from __future__ import annotations

import pytest

from apps.benchmarks.choices import JobState
from apps.benchmarks.models import ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# One load point of two requests, no warm-up and no quality probe: the fewest engine calls.
OPTIONS = PlanOptions(
    request_count=2,
    load_points=({"rate_rps": 1.0},),
    warmup_requests=0,
    max_attempts=1,
    quality_probe=False,
)


def test_a_job_waiting_for_a_model_runs_once_it_joins_the_store_of_the_running_runner(
    alice, acme, llama_selection, gemma_gguf, runners, pinned_cpus, monkeypatch
):
    monkeypatch.setenv("STACKSELECT_RUNNER_REPROBE_INTERVAL_S", "0.5")
    runner = runners("llama-d")  # has llama.cpp; its model store is empty
    wait_for(lambda: "ready." in runner.output(), timeout=60, what="the worker\n" + runner.output())
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=llama_selection.pk, options=OPTIONS
    )
    job = plan.jobs.get()
    slug = llama_selection.model.slug
    assert job.engine["adapter"] == "llama-cpp"
    assert job.state == JobState.WAITING_FOR_RUNNER
    assert f"llama-d lacks model {slug} in its store (it has no model)" in job.state_reason

    runner.add_model(slug, gemma_gguf)

    def finished() -> bool:
        job.refresh_from_db()
        return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

    wait_for(finished, timeout=300, what="the llama.cpp job to finish\n" + runner.output())
    assert job.state == JobState.SUCCEEDED, job.state_reason + "\n" + runner.output()
    assert job.attempts.get().runner.name == "llama-d"
    assert runner.process.poll() is None  # the process that started with an empty store
    output = runner.output()
    assert output.count("ready.") == 1
    assert f"probe sent (models: {slug})" in output
    assert f"now consuming pool.{acme.pk}.h100-sxm.1.llama-cpp" in output
    engine = ResultUpload.objects.get(job=job).meta["engine"]
    assert engine["model_store"] == {"model_key": slug, "path": str(gemma_gguf)}
    assert engine["effective_config"]["adapter"] == "llama-cpp"
