"""Predicted against measured per candidate, refitted factors, and the selections hook."""

from __future__ import annotations

import pytest

from apps.evidence.selectors import measured_by_candidate, selection_evidence
from tests.evidence.factories import measured_attempt
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
