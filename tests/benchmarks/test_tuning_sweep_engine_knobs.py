"""A tuning sweep for a TensorRT-LLM candidate on the simulated engine: the trials are the
engine defaults, TensorRT-LLM's own documented setting for the workload class (from the curated
catalog) and a deliberately tight batch limit, each recorded in TensorRT-LLM's knobs
(--max_batch_size, --max_num_tokens) though the simulator runs them; the best one under the
SLO is kept and the evidence page shows every trial in those knobs."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from apps.benchmarks.choices import JobState
from apps.catalog.loading import FIXTURE_DIR
from apps.catalog.models import Engine, EngineRelease
from apps.evidence.selectors import selection_evidence
from tests.benchmarks.factories import catalog, selection_with_candidates
from tests.benchmarks.sweeps import simulated_sweep, wait_until_every_job_ends

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TIGHT = 1  # one sequence at a time: every request queues behind the one decoding


def curated_release(slug: str) -> EngineRelease:
    """The curated release of one engine, with its documented settings as the catalog has them."""
    curated = json.loads((FIXTURE_DIR / "engines.json").read_text(encoding="utf-8"))
    (entry,) = [engine for engine in curated if engine["slug"] == slug]
    (release,) = entry["releases"]
    engine = Engine.objects.create(slug=slug, name=entry["name"], kind="engine")
    return EngineRelease.objects.create(
        engine=engine, version=release["version"], tuned_settings=release["tuned"]
    )


@pytest.fixture
def trt_selection(transactional_db, acme, alice):
    rows = catalog()
    selection = selection_with_candidates(acme, alice, rows, layouts=[("h100-sxm", 1, "bf16")])
    release = curated_release("tensorrt-llm")
    candidate = selection.candidates.get()
    candidate.release = release
    candidate.stack = {
        **candidate.stack,
        "engine": release.engine.slug,
        "engine_version": release.version,
    }
    candidate.save(update_fields=["release", "stack"])
    return selection


def test_a_tensorrt_llm_sweep_on_the_simulator_tries_its_own_knobs_and_keeps_the_best(
    client, alice, acme, trt_selection, runners
):
    runner = runners("sim-trt", gpus=1)
    plan = simulated_sweep(
        user=alice, team=acme, selection=trt_selection, values={"max_num_seqs": [TIGHT]}
    )
    jobs = list(plan.jobs.order_by("pk"))
    assert [(job.tuning["origin"], job.tuning["engine_knobs"]) for job in jobs] == [
        ("defaults", {}),
        ("recommended", {"--max_batch_size": 512, "--max_num_tokens": 2048}),
        ("sweep", {"--max_batch_size": TIGHT}),
    ]
    assert {job.engine["adapter"] for job in jobs} == {"simulated"}
    assert {job.tuning["engine"] for job in jobs} == {"tensorrt-llm"}
    assert jobs[1].tuning["source"].startswith("TensorRT-LLM Performance Tuning Guide")
    assert jobs[1].engine["options"]["max_num_batched_tokens"] == 2048

    wait_until_every_job_ends(plan, runner)
    assert set(plan.jobs.values_list("state", flat=True)) == {JobState.SUCCEEDED}

    (entry,) = selection_evidence(team=acme, selection_id=trt_selection.pk).candidates
    by_origin = {trial.origin: trial for trial in entry.trials}
    assert set(by_origin) == {"defaults", "recommended", "sweep"}
    assert by_origin["sweep"].engine_knobs == {"--max_batch_size": TIGHT}
    (kept,) = [trial for trial in entry.trials if trial.kept]
    assert kept.origin != "sweep" and kept.key == entry.key

    client.force_login(alice)
    page = client.get(reverse("evidence:selection", args=[trt_selection.pk])).content.decode()
    assert page.count("data-engine-knobs") == 2  # the defaults trial sets no knob
    assert "--max_batch_size 512, --max_num_tokens 2048" in page
    assert f"--max_batch_size {TIGHT}" in page
