"""Speculative decoding with a draft model, on real parts: live server, PostgreSQL, Redis, a
`stackselect-runner start` process and llama.cpp's own llama-server (the pinned build `make`
makes) serving the Gemma 3 270M GGUF with a draft model.

Elsewhere the draft fields are only held to the command builder and to the binary's flag
parser; only a launch shows that the job is routed to a runner with llama-server at all (its
probed version must read as a llama.cpp build), that llama-server starts with the draft flags
(answers /health, streams completions, drafts tokens), that the draft path the runner's model
store gives reaches the engine, and that the upload and the run identity record the draft by its
store key, never by the machine's path, and that the plan's greedy sampling reaches the engine
(a model drafting for itself then has most drafts accepted). The draft is the same GGUF (the
vocabulary matches) under a path of its own, so the model's path and the draft's can be told
apart.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from stackselect_domain.speculative import Speculative
from stackselect_runner.probe import parse_llama_server_version

from apps.benchmarks.choices import AttemptState, JobState
from apps.benchmarks.models import JobLog, ResultUpload
from apps.benchmarks.plan_identity import PlanOptions
from apps.benchmarks.services import plan_create
from tests.fleet.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
DRAFT_KEY = "gemma-3-270m-draft"
DRAFT_TOKENS = 4
REQUESTS = 4
OUTPUT_TOKENS = 16  # the llama_selection workload's fixed output length


def _draft_checkpoint(gemma_gguf: Path, folder: Path) -> Path:
    """The model's own GGUF as its draft, hard-linked under another path (no 250 MB copy; the
    model store resolves symbolic links, so a symlink would be the model's path again)."""
    folder.mkdir()
    draft = folder / gemma_gguf.name
    os.link(gemma_gguf, draft)
    return draft


def test_a_draft_model_plan_runs_on_llama_server_with_the_draft_its_runners_store_holds(
    llama_server_on_path, alice, acme, llama_selection, gemma_gguf, runners, pinned_cpus,
    tmp_path,
):  # fmt: skip
    slug = llama_selection.model.slug
    draft = _draft_checkpoint(gemma_gguf, tmp_path / "drafts")
    runner = runners("llama-draft", models={slug: gemma_gguf}, drafts={DRAFT_KEY: (draft, slug)})
    speculative = Speculative(method="draft", num_tokens=DRAFT_TOKENS, draft_model=DRAFT_KEY)
    options = PlanOptions(
        request_count=REQUESTS,
        load_points=({"rate_rps": 2.0},),
        warmup_requests=1,
        max_attempts=1,
        quality_probe=False,
        speculative=speculative,
    )
    plan = plan_create(
        actor_user=alice, team=acme, selection_id=llama_selection.pk, options=options
    )
    job = plan.jobs.get()
    assert job.engine["options"]["speculative"] == speculative.as_dict()
    assert job.engine["options"]["frontend"] == "llama-server"

    def finished() -> bool:
        job.refresh_from_db()
        return job.state in {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

    def still() -> str:
        return f"the llama-server job to finish ({job.state}: {job.state_reason})\n" + (
            runner.output()
        )

    wait_for(finished, timeout=300, what=still)
    attempt = job.attempts.get()
    log = JobLog.objects.filter(attempt=attempt).values_list("text", flat=True).first() or ""
    assert job.state == JobState.SUCCEEDED, f"{job.state_reason}\n{runner.output()}\n{log}"
    assert (attempt.state, attempt.runner.name) == (AttemptState.SUCCEEDED, "llama-draft")
    # The engine's own log, shipped to the server: llama-server loaded the draft from the
    # store's path and drafted tokens for every request, the warm-up one included (it logs
    # the acceptance only when the request had draft tokens: tools/server/server-context.cpp).
    assert f"loading draft model '{draft}'" in log, log
    assert log.count("draft acceptance = ") == REQUESTS + options.warmup_requests, log
    # The plan decodes greedily (its default temperature, sent with every request), so the
    # model drafting for itself proposes the tokens it then keeps: most drafts are accepted.
    # At llama-server's default sampling the same run accepted 0-16%.
    assert plan.temperature == 0
    rates = [float(rate) for rate in re.findall(r"draft acceptance = ([0-9.]+)", log)]
    assert sum(rates) / len(rates) > 0.5, log

    # The engine that ran is the pinned llama-server (readiness is its GET /health), not
    # llama-cpp-python, which cannot draft.
    upload = ResultUpload.objects.get(job=job)
    engine = upload.meta["engine"]
    reported = subprocess.run(
        [str(llama_server_on_path), "--version"], capture_output=True, text=True, timeout=60
    )
    assert engine["version"] == parse_llama_server_version(reported.stdout + reported.stderr)
    config = engine["effective_config"]
    assert (config["adapter"], config["frontend"]) == ("llama-cpp", "llama-server")
    # The model store gave both checkpoints; the launch options carried the draft's path...
    assert engine["model_store"] == {
        "model_key": slug,
        "path": str(gemma_gguf),
        "draft_model_key": DRAFT_KEY,
        "draft_path": str(draft),
    }
    assert config["options"]["draft_model_path"] == str(draft)
    assert config["settings"]["draft_model_path"] == str(draft)
    # ...and llama-server was started on it, with the draft speculator and its draft size.
    command = config["command"]
    assert command[0] == "llama-server"
    assert command[command.index("--model") + 1] == str(gemma_gguf)
    assert command[command.index("--model-draft") + 1] == str(draft)
    assert command[command.index("--spec-type") + 1] == "draft-simple"
    assert command[command.index("--spec-draft-n-max") + 1] == str(DRAFT_TOKENS)

    # Every streamed request completed on the speculating engine, at the pinned length.
    records = json.loads(gzip.decompress(bytes(upload.body)))["records"]
    assert len(records) == REQUESTS
    assert all(record["error"] is None for record in records), records
    assert {record["output_tokens"] for record in records} == {OUTPUT_TOKENS}
    assert all(record["ttft_s"] > 0 and len(record["itl_s"]) >= 1 for record in records)

    # The run identity names the draft by its store key and keeps the speculative setting, but
    # no path of this machine: a run with the draft stored elsewhere pools with this one.
    identity = attempt.evidence_run.identity
    stable = identity["engine_config"]
    named = f"<model store: {DRAFT_KEY}>"
    assert stable["command"][stable["command"].index("--model-draft") + 1] == named
    assert stable["command"][stable["command"].index("--model") + 1] == f"<model store: {slug}>"
    assert stable["options"]["draft_model_path"] == named
    assert stable["settings"]["draft_model_path"] == named
    assert stable["options"]["speculative"] == speculative.as_dict()
    assert str(tmp_path) not in json.dumps(identity)
