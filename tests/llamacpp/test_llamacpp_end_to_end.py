"""A real engine through the whole chain: a plan for a llama.cpp candidate goes through Celery to
a runner agent, which claims it, launches llama-cpp-python on the Gemma 3 270M GGUF, waits for
it to load, measures, uploads, and the server stores the results."""

from __future__ import annotations

import gzip
import json

import pytest

from apps.benchmarks.choices import AttemptState, JobState
from apps.benchmarks.models import ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from apps.decisions.export import record_markdown
from apps.decisions.services import DecisionText, record_accept, record_create, record_propose
from tests.decisions.factories import make_approver
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REQUESTS = 6
OUTPUT_TOKENS = 16


def test_a_llama_cpp_plan_runs_on_the_real_engine_and_its_results_are_stored(
    alice, bob, acme, llama_selection, gemma_store, gemma_gguf, runners, pinned_cpus
):
    runner = runners("llama-a", models=gemma_store)
    options = PlanOptions(
        request_count=REQUESTS,
        load_points=({"rate_rps": 1.0},),
        warmup_requests=2,  # the first request after start takes about 2 s
        max_attempts=1,
    )
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=llama_selection.pk, options=options
    )
    job = plan.jobs.get()
    assert job.engine["adapter"] == "llama-cpp"
    assert job.plan.identity["simulated"] is False

    def finished() -> bool:
        job.refresh_from_db()
        return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

    wait_for(finished, timeout=300, what="the llama.cpp job to finish\n" + runner.output())

    assert job.state == JobState.SUCCEEDED, job.state_reason + "\n" + runner.output()
    assert job.attempts.get().state == AttemptState.SUCCEEDED
    upload = ResultUpload.objects.get(job=job)
    assert upload.record_count == REQUESTS
    engine = upload.meta["engine"]
    assert engine["version"].startswith("llama-cpp-python ")
    slug = llama_selection.model.slug
    assert engine["model_store"] == {"model_key": slug, "path": str(gemma_gguf)}
    run = job.attempts.get().evidence_run
    assert run.identity["engine_config"]["settings"]["model_path"] == f"<model store: {slug}>"
    config = engine["effective_config"]
    assert config["adapter"] == "llama-cpp" and config["frontend"] == "llama-cpp-python"
    command = config["command"]
    assert command[command.index("--interrupt_requests") + 1] == "False"
    # The runner's model store mapped the catalog model to its local GGUF file.
    assert command[command.index("--model") + 1] == str(gemma_gguf)
    assert command[command.index("--model_alias") + 1] == llama_selection.model.checkpoint
    records = json.loads(gzip.decompress(bytes(upload.body)))["records"]
    assert all(record["error"] is None for record in records)
    # min_tokens pins the output length; the counts are the server's own usage figures.
    assert {record["output_tokens"] for record in records} == {OUTPUT_TOKENS}
    assert all(record["ttft_s"] > 0 and len(record["itl_s"]) >= 1 for record in records)

    # The measured run carries the decision: accepted without "simulation only", and its
    # record says so on the page's data, in the API and in the Markdown front matter.
    candidate = llama_selection.candidates.get()
    record = record_create(
        actor_user=alice,
        team=acme,
        selection_id=llama_selection.pk,
        text=DecisionText(
            title="Serve Gemma on llama.cpp",
            chosen_candidate_id=candidate.pk,
            rationale="Measured on the real engine.",
        ),
    )
    assert [entry["mode"] for entry in record.evidence] == ["measured"]
    record_propose(actor_user=alice, team=acme, record_id=record.pk)
    record = record_accept(actor_user=make_approver(bob, acme), team=acme, record_id=record.pk)
    assert (record.status, record.evidence_kind) == ("accepted", "measured")
    assert 'evidence: "measured"' in record_markdown(record).split("---")[1]
