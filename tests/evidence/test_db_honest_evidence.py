"""Simulated runs are labelled and never calibrate; repeats pool; unfinished attempts stay apart."""

from __future__ import annotations

import csv

import pytest
from django.db import transaction

from apps.benchmarks.models import JobAttempt
from apps.evidence.api.serializers import RunOut
from apps.evidence.ingest import ingest_upload
from apps.evidence.models import EvidenceRun
from apps.evidence.selectors import measured_by_candidate, selection_evidence
from tests.evidence.conftest import RATES
from tests.evidence.factories import attempt_for, measured_attempt, plan_for, result_upload
from tests.evidence.samples import streamed

pytestmark = pytest.mark.django_db
ESTIMATE = {
    "latency": {"concurrency": 1, "ttft_ms": 50.0, "tpot_ms": 10.0},
    "goodput_per_gpu_rps": 4.0,
}
RECORDS = [streamed(i, ttft_s=0.1, gaps=[0.02, 0.02]) for i in range(4)]


@pytest.fixture
def estimated(candidates):
    candidate = candidates[0]
    candidate.estimate = ESTIMATE
    candidate.save(update_fields=["estimate"])
    return candidate


@pytest.fixture
def dry_run(selection):
    return plan_for(selection, load_points=RATES, run_mode="simulated")


def _engine(port: int, work_dir: str) -> dict:
    """What a runner reports about the engine it launched on `port` in `work_dir`."""
    command = [
        f"{work_dir}/venv/bin/python3",
        "-m",
        "stackselect_runner.simengine",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        f"--log-file={work_dir}/attempt-{port}/engine.log",
        "--max-num-seqs",
        "128",
    ]
    return {"version": "0.1", "effective_config": {"adapter": "simulated", "command": command}}


def _run_with_engine(plan, candidate, engine: dict, number: int = 1) -> EvidenceRun:
    attempt = attempt_for(plan, candidate, number=number)
    for point in plan.load_points:
        with transaction.atomic():
            upload = result_upload(attempt, RECORDS, load_point=point, engine=engine)
            ingest_upload(upload=upload)
    return attempt.evidence_run


def test_only_simulated_runs_leave_the_estimator_uncalibrated(acme, selection, dry_run, estimated):
    measured_attempt(dry_run, estimated, RECORDS)
    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    (entry,) = evidence.candidates
    assert entry.mode == "simulated" and entry.label.endswith("simulated (stackselect-harness)")
    assert evidence.calibration.fits == [] and evidence.calibration.errors == []
    assert measured_by_candidate(candidates=[estimated]) == {}


def test_measured_runs_calibrate_beside_simulated_ones(acme, selection, plan, dry_run, estimated):
    # Two simulated runs outnumber the measured one, so the page's reference is simulated;
    # calibration still uses the measured run, judged against a measured reference.
    measured_attempt(dry_run, estimated, RECORDS)
    measured_attempt(dry_run, estimated, RECORDS, number=2)
    measured_attempt(plan, estimated, RECORDS)
    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    assert [entry.mode for entry in evidence.candidates] == ["simulated", "measured"]
    (fit,) = evidence.calibration.fits
    assert (fit.engine, fit.measurements) == ("vllm", 2)
    (error,) = evidence.calibration.errors
    assert "simulated" not in error.label


def test_the_evidence_page_and_api_label_simulated_runs(
    alice_client, selection, dry_run, plan, candidates
):
    measured_attempt(dry_run, candidates[0], RECORDS)
    measured_attempt(plan, candidates[1], RECORDS)
    page = alice_client.get(f"/evidence/selections/{selection.pk}/").content.decode()
    assert 'id="simulated-banner"' in page and "1 of 2 candidate(s) are simulated" in page
    assert page.count('data-mode="simulated"') == 1 + len(RATES)  # candidates and metrics rows
    # Each chart names the dry run's line as simulated (plotly figures are JSON in the page).
    assert "(simulated) P50" in page and "(simulated) P99" in page
    body = alice_client.get(f"/api/v1/selections/{selection.pk}/evidence/").json()
    assert sorted(entry["mode"] for entry in body["candidates"]) == ["measured", "simulated"]
    modes = sorted(RunOut(run).data["mode"] for run in EvidenceRun.objects.all())
    assert modes == ["measured", "simulated"]


def test_repeated_runs_of_one_stack_on_two_runners_pool_despite_ports_and_paths(
    acme, selection, plan, candidates
):
    first = _run_with_engine(plan, candidates[0], _engine(40001, "/tmp/runner-a"))
    second = _run_with_engine(plan, candidates[0], _engine(51234, "/srv/runner-b"), number=2)
    assert first.identity_fingerprint == second.identity_fingerprint
    command = first.identity["engine_config"]["command"]
    assert "--port" not in command and "--host" not in command
    assert command[0] == "python3"
    assert "--log-file=<temporary path>" in command
    (entry,) = selection_evidence(team=acme, selection_id=selection.pk).candidates
    assert entry.run_ids == [first.pk, second.pk]
    point = entry.points[0]
    assert point.runs == 2 and point.cells["ttft_mean_ms"].interval is not None


def _stored_model_engine(checkpoint: str) -> dict:
    """A real engine launched on the checkpoint this runner's model store maps the model to."""
    command = ["vllm", "serve", checkpoint, "--port", "8100", "--max-num-seqs", "128"]
    return {
        "version": "0.8.5",
        "effective_config": {
            "adapter": "vllm",
            "command": command,
            "settings": {"model_path": checkpoint, "tp": 1},
        },
        "model_store": {"model_key": "llama-3.1-8b", "path": checkpoint},
    }


def test_runners_keeping_the_checkpoint_in_different_places_still_pool(
    acme, selection, plan, candidates
):
    first = _run_with_engine(plan, candidates[0], _stored_model_engine("/models/llama-8b"))
    second = _run_with_engine(
        plan, candidates[0], _stored_model_engine("/data/hf/Llama-3.1-8B"), number=2
    )
    assert first.identity_fingerprint == second.identity_fingerprint
    config = first.identity["engine_config"]
    assert config["command"][2] == "<model store: llama-3.1-8b>"
    assert config["settings"]["model_path"] == "<model store: llama-3.1-8b>"


def test_a_different_engine_setting_is_still_a_different_identity(plan, candidates):
    engine = _engine(40001, "/tmp/runner-a")
    other = _engine(40001, "/tmp/runner-a")
    other["effective_config"]["command"][-1] = "64"
    first = _run_with_engine(plan, candidates[0], engine)
    second = _run_with_engine(plan, candidates[0], other, number=2)
    assert first.identity_fingerprint != second.identity_fingerprint


def test_a_lost_attempts_partial_upload_is_kept_apart_and_never_counted(
    acme, alice_client, selection, plan, candidates
):
    lost = attempt_for(plan, candidates[0])
    with transaction.atomic():
        ingest_upload(upload=result_upload(lost, RECORDS, load_point=plan.load_points[0]))
    reason = "Lease expired: sim-1 stopped sending heartbeats."
    JobAttempt.objects.filter(pk=lost.pk).update(state="lost", reason=reason)
    retry = JobAttempt.objects.create(job=lost.job, number=2, queue="q")
    for point in plan.load_points:
        with transaction.atomic():
            ingest_upload(upload=result_upload(retry, RECORDS, load_point=point))
    evidence = selection_evidence(team=acme, selection_id=selection.pk)
    (entry,) = evidence.candidates
    assert entry.run_ids == [retry.evidence_run.pk]
    assert all(point.runs == 1 for point in entry.points)
    (superseded,) = evidence.superseded
    assert (superseded.run_id, superseded.attempt_number) == (lost.evidence_run.pk, 1)
    assert (superseded.attempt_state, superseded.reason) == ("lost", reason)
    page = alice_client.get(f"/evidence/selections/{selection.pk}/").content.decode()
    assert 'id="superseded"' in page and reason in page
    body = alice_client.get(f"/api/v1/selections/{selection.pk}/evidence/").json()
    assert [run["run_id"] for run in body["superseded"]] == [lost.evidence_run.pk]
    download = alice_client.get(f"/evidence/selections/{selection.pk}/samples.csv")
    rows = list(csv.reader(b"".join(download.streaming_content).decode().splitlines()))
    assert {row[0] for row in rows[1:]} == {str(retry.evidence_run.pk)}
