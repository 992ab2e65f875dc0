"""Calibration on published rows: factors come from rows outside the held-out split only."""

from __future__ import annotations

from dataclasses import replace

import pytest
from stackselect_domain.steptime import METHOD_CALIBRATED, METHOD_ROOFLINE, StepBatch

from apps.catalog.loading import fixture_instances
from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.published_calibration import (
    CalibratedStepTime,
    Calibration,
    Sample,
    StepFactors,
    calibrated_step_time,
    fit_calibration,
    stored_calibration,
)
from apps.selections.published_predict import (
    RowContext,
    predict_row,
    roofline_for,
    simulate_row,
)
from tests.catalog.published_rows import sample_row

MODELS = fixture_instances(ModelSpec, "models")
ACCELERATORS = fixture_instances(Accelerator, "accelerators")
FITTED = "meta-llama/Llama-3.1-8B-Instruct"  # sha256 of its h100_sxm|vllm group is not 0 mod 5
HELD = "Qwen/Qwen3-32B"  # ...and of this one it is


def _sample(index: int, model_path: str, ttft: float, tpot: float) -> Sample:
    row = sample_row(
        id=f"{model_path}-{index}",
        model_path=model_path,
        isl=str(512 * (1 + index % 3)),
        silicon_data_source=f"test; silicon_concurrency={2 ** (index % 5)}",
        silicon_ttft_ms=str(ttft),
        silicon_tpot_ms=str(tpot),
    )
    context = RowContext(row, MODELS[row.model_slug], ACCELERATORS[row.accelerator_slug])
    return Sample(context, roofline_for(context))


def _samples() -> list[Sample]:
    fitted = [_sample(i, FITTED, 60 + 9 * i, 6 + 0.4 * i) for i in range(10)]
    held = [_sample(i, HELD, 150 + 20 * i, 20 + i) for i in range(3)]
    return fitted + held


def _perturbed(samples: list[Sample], model_path: str) -> list[Sample]:
    """The same samples with every row of model_path measured ten times slower."""
    changed = []
    for sample in samples:
        row = sample.context.row
        if row.model_path == model_path:
            row = replace(row, ttft_ms=row.ttft_ms * 10, tpot_ms=row.tpot_ms * 10)
            sample = Sample(replace(sample.context, row=row), sample.provider)
        changed.append(sample)
    return changed


def test_the_fixture_rows_fall_on_the_intended_sides_of_the_split() -> None:
    samples = _samples()
    assert not any(s.context.row.held_out for s in samples if s.context.row.model_path == FITTED)
    assert all(s.context.row.held_out for s in samples if s.context.row.model_path == HELD)


def test_no_held_out_row_influences_any_fitted_factor() -> None:
    samples = _samples()
    before = fit_calibration(METHOD_ROOFLINE, samples).factors
    after = fit_calibration(METHOD_ROOFLINE, _perturbed(samples, HELD)).factors
    assert before == after
    assert set(before) == {("vllm",), ()}
    control = fit_calibration(METHOD_ROOFLINE, _perturbed(samples, FITTED)).factors
    assert control != before  # a row that is fitted on does move the factors


def test_fitting_only_on_held_out_rows_is_refused() -> None:
    held = [s for s in _samples() if s.context.row.held_out]
    with pytest.raises(ValueError, match="held-out"):
        fit_calibration(METHOD_ROOFLINE, held)


def test_calibration_scales_prompt_steps_and_leaves_decode_steps_to_the_base() -> None:
    base = _samples()[0].provider
    calibrated = CalibratedStepTime(base, StepFactors(prefill=2.0))
    decode = StepBatch(0, 8, 8000, 8000)
    prompt = StepBatch(1000, 8, 9000, 8000 + 500_500)
    assert calibrated.method == METHOD_CALIBRATED
    assert calibrated.step_seconds(decode) == base.step_seconds(decode)
    assert calibrated.step_seconds(prompt) == pytest.approx(2.0 * base.step_seconds(prompt))


def test_the_stored_factors_calibrate_an_engine_the_sample_measured_and_no_other() -> None:
    base = _samples()[0].provider
    calibrated = calibrated_step_time(base, engine_slug="vllm", accelerator_slug="h100-sxm")
    assert calibrated is not None, "run bench/bench_accuracy.py --write-bands"
    assert calibrated.method == METHOD_CALIBRATED
    assert calibrated.factors == stored_calibration(METHOD_ROOFLINE).factors_for("vllm", "h100_sxm")
    assert calibrated_step_time(base, engine_slug="llama-cpp", accelerator_slug="h100-sxm") is None


def test_a_calibrated_row_adds_the_overhead_to_its_ttft_and_keeps_the_base_tpot() -> None:
    sample = _samples()[0]
    factors = StepFactors(prefill=2.0, rounds=5, ttft_overhead_ms=40.0)
    calibration = Calibration(METHOD_ROOFLINE, {("vllm",): factors})
    predicted = calibration.predict(sample)
    scaled = CalibratedStepTime(sample.provider, StepFactors(prefill=2.0))
    expected_ttft = simulate_row(scaled, sample.context).over_rounds(5).ttft_ms + 40.0
    assert predicted.ttft_ms == pytest.approx(expected_ttft)
    assert predicted.tpot_ms == predict_row(sample.provider, sample.context).tpot_ms
    assert predicted.method == METHOD_CALIBRATED
