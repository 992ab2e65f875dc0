"""Predicted against measured per candidate, refitted factors, and the selections hook."""

from __future__ import annotations

import pytest
from django.db import transaction

from apps.catalog.choices import PrefixCacheKind
from apps.evidence.ingest import ingest_upload
from apps.evidence.selectors import measured_by_candidate, selection_evidence
from tests.evidence.factories import (
    attempt_for,
    measured_attempt,
    plan_for,
    result_upload,
    selection_with_candidates,
)
from tests.evidence.samples import streamed

ESTIMATE = {
    "latency": {"concurrency": 1, "ttft_ms": 50.0, "tpot_ms": 10.0},
    "goodput_per_gpu_rps": 4.0,
}


@pytest.fixture
def estimated(candidates):
    candidate = candidates[0]
    candidate.estimate = ESTIMATE
    candidate.save(update_fields=["estimate"])
    return candidate


def test_the_prediction_error_compares_the_estimate_with_the_measured_means(
    acme, selection, plan, estimated
):
    # TTFT 0.1 s and two 0.02 s gaps: TPOT = (0.14 - 0.1) / 2 = 20 ms.
    measured_attempt(
        plan, estimated, [streamed(i, ttft_s=0.1, gaps=[0.02, 0.02]) for i in range(4)]
    )

    report = selection_evidence(team=acme, selection_id=selection.pk).calibration

    (error,) = report.errors
    rows = {row["metric"]: row for row in error.rows}
    assert rows["ttft_ms"]["measured"] == pytest.approx(100.0)
    assert rows["ttft_ms"]["error"] == pytest.approx(1.0)  # measured twice the prediction
    assert rows["tpot_ms"]["measured"] == pytest.approx(20.0)
    assert rows["tpot_ms"]["error"] == pytest.approx(1.0)
    (fit,) = report.fits
    assert (fit.accelerator, fit.engine, fit.measurements) == ("h100-sxm", "vllm", 2)
    assert fit.bandwidth < fit.base_bandwidth  # slower than predicted: a lower efficiency
    assert rows["tpot_ms"]["calibrated"] > rows["tpot_ms"]["predicted"]


def test_the_selections_hook_gets_the_rows_of_measured_candidates_only(
    selection, plan, estimated, candidates
):
    measured_attempt(plan, estimated, [streamed(i, ttft_s=0.1, gaps=[0.02]) for i in range(4)])

    rows = measured_by_candidate(candidates=candidates)

    assert set(rows) == {estimated.pk}
    assert {row["metric"] for row in rows[estimated.pk]} >= {"ttft_ms", "tpot_ms"}


def _measured_at(acme, alice, rows, *, replicas: int, clients: tuple[int, int], **workload):
    """A candidate of `replicas` one-H100 replicas side by side, its estimate holding at 2
    requests in flight per replica, measured at two closed-loop loads: TTFT 0.1 s at the first,
    0.3 s at the second; `workload` updates the goal's. Returns the selection's calibration
    report."""
    layout = ("h100-sxm", replicas, "bf16")
    selection = selection_with_candidates(acme, alice, rows, layouts=[layout])
    selection.workload = {**selection.workload, **workload}
    selection.save(update_fields=["workload"])
    candidate = selection.candidates.get()
    candidate.stack = {**candidate.stack, "tp": 1, "dp": replicas}
    candidate.estimate = {
        **ESTIMATE,
        "latency": {**ESTIMATE["latency"], "concurrency": 2},
        "memory": {"kv_capacity_tokens": 400_000},
    }
    candidate.save(update_fields=["stack", "estimate"])
    plan = plan_for(selection, load_points=[{"concurrency": count} for count in clients])
    attempt = attempt_for(plan, candidate)
    for point, ttft_s in zip(plan.load_points, (0.1, 0.3), strict=True):
        records = [streamed(i, ttft_s=ttft_s, gaps=[0.02, 0.02]) for i in range(4)]
        with transaction.atomic():
            ingest_upload(upload=result_upload(attempt, records, load_point=point))
    return selection_evidence(team=acme, selection_id=selection.pk).calibration


def test_a_deployment_of_replicas_is_compared_at_its_whole_load_with_one_replicas_prediction(
    acme, alice, rows
):
    report = _measured_at(acme, alice, rows, replicas=2, clients=(2, 4))

    (error,) = report.errors
    ttft = {row["metric"]: row for row in error.rows}["ttft_ms"]
    # 2 in flight on each of 2 replicas is the run of 4 clients, not the run of 2
    assert ttft["measured"] == pytest.approx(300.0)


def test_replicas_measured_at_twice_the_clients_fit_as_one_replica_measured_at_its_share(
    acme, alice, rows
):
    one = _measured_at(acme, alice, rows, replicas=1, clients=(1, 2))
    two = _measured_at(acme, alice, rows, replicas=2, clients=(2, 4))

    (fit_one,), (fit_two,) = one.fits, two.fits
    assert fit_two.compute != fit_two.base_compute  # the fit moved: it read the measurements
    assert (fit_two.compute, fit_two.bandwidth) == pytest.approx(
        (fit_one.compute, fit_one.bandwidth)
    )


def test_a_prefix_heavy_goals_runs_are_fitted_with_the_prompt_tokens_the_cache_served(
    acme, alice, rows
):
    rows["release"].prefix_cache_kind = PrefixCacheKind.HASH_BLOCKS
    rows["release"].save(update_fields=["prefix_cache_kind"])
    cold = _measured_at(acme, alice, rows, replicas=1, clients=(1, 2))
    warm = _measured_at(
        acme, alice, rows, replicas=1, clients=(1, 2), prefix_share=1.0, prefix_tokens=448
    )

    (fit_cold,), (fit_warm,) = cold.fits, warm.fits
    # the same measured TTFT from fewer computed prompt tokens: a slower GPU than it read cold
    assert fit_warm.compute < fit_cold.compute
