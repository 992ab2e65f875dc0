"""Calibration on published rows: forms and factors come from rows outside the held-out split
only, and cross validation on those rows picks the form that predicts left-out groups best."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from stackselect_domain.closedloop import LATER_ROUNDS_REPEAT, LATER_ROUNDS_SPREAD
from stackselect_domain.steptime import METHOD_CALIBRATED, METHOD_ROOFLINE, StepBatch

from apps.catalog.loading import fixture_instances
from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.published_calibration import (
    OVERHEAD_FORMS,
    TPOT_SOURCE_BASE,
    TPOT_SOURCE_BLEND,
    TPOT_SOURCE_NATIVE,
    TTFT_SOURCE_BASE,
    TTFT_SOURCE_BLEND,
    TTFT_SOURCE_NATIVE,
    CalibratedStepTime,
    Calibration,
    Sample,
    StepFactors,
    TpotFactors,
    fit_calibration,
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
OTHER = "meta-llama/Llama-3.1-70B"  # nor of this one's: a second group to cross-validate on
HELD = "Qwen/Qwen3-32B"  # ...and of this one it is


def _sample(index: int, model_path: str, ttft: float, tpot: float, tp: int = 1) -> Sample:
    row = sample_row(
        id=f"{model_path}-{index}",
        model_path=model_path,
        isl=str(512 * (1 + index % 3)),
        tp_size=str(tp),
        silicon_data_source=f"test; silicon_concurrency={2 ** (index % 5)}",
        silicon_ttft_ms=str(ttft),
        silicon_tpot_ms=str(tpot),
    )
    context = RowContext(row, MODELS[row.model_slug], ACCELERATORS[row.accelerator_slug])
    return Sample(context, roofline_for(context))


def _samples() -> list[Sample]:
    fitted = [_sample(i, FITTED, 60 + 9 * i, 6 + 0.4 * i) for i in range(10)]
    fitted += [_sample(i, OTHER, 200 + 30 * i, 14 + i, tp=4) for i in range(10)]
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
    assert not any(s.context.row.held_out for s in samples if s.context.row.model_path != HELD)
    assert all(s.context.row.held_out for s in samples if s.context.row.model_path == HELD)


def test_no_held_out_row_influences_any_fitted_factor() -> None:
    samples = _samples()
    before = fit_calibration(METHOD_ROOFLINE, samples)
    after = fit_calibration(METHOD_ROOFLINE, _perturbed(samples, HELD))
    assert before == after  # forms, factors and cross-validation scores alike
    assert set(before.ttft) == {("vllm",), ()}
    control = fit_calibration(METHOD_ROOFLINE, _perturbed(samples, FITTED))
    # a row that is fitted on does move the factors and the cross-validation scores
    assert control.ttft != before.ttft
    assert control.cross_validation != before.cross_validation


def _too_fast(ttft: float, tpot: float) -> Sample:
    """A fitted-side row of 64 clients with 1,536-token prompts: at 5 ms and 0.5 ms its prompts
    alone would need about twelve times the H100's peak; at 800 ms and 40 ms, a seventh of it.
    Its engine batch holds its clients."""
    sample = _sample(99, FITTED, ttft, tpot)
    row = replace(sample.context.row, concurrency=64, isl=1536, batch_size=64)
    return Sample(replace(sample.context, row=row), sample.provider)


def test_a_row_whose_own_figures_do_not_add_up_influences_no_fitted_factor() -> None:
    samples = _samples()
    impossible, plausible = _too_fast(5, 0.5), _too_fast(800, 40)
    assert not impossible.context.adds_up and plausible.context.adds_up

    before = fit_calibration(METHOD_ROOFLINE, samples)

    assert fit_calibration(METHOD_ROOFLINE, [*samples, impossible]) == before
    assert fit_calibration(METHOD_ROOFLINE, [*samples, plausible]) != before


def _batched(batch_size: int) -> Sample:
    """A fitted-side row of 64 clients whose figures add up, run with an engine batch of
    batch_size sequences."""
    sample = _too_fast(800, 40)
    row = replace(sample.context.row, batch_size=batch_size)
    return Sample(replace(sample.context, row=row), sample.provider)


def test_a_row_whose_engine_batch_was_smaller_than_its_clients_influences_no_fitted_factor():
    samples = _samples()
    capped, holding = _batched(16), _batched(64)
    assert not capped.context.batch_holds_clients and not capped.context.fits_on
    assert holding.context.batch_holds_clients and holding.context.fits_on

    before = fit_calibration(METHOD_ROOFLINE, samples)

    assert fit_calibration(METHOD_ROOFLINE, [*samples, capped]) == before
    assert fit_calibration(METHOD_ROOFLINE, [*samples, holding]) != before


def _copied(samples: list[Sample], of: str, mark: str = "+", **changes) -> list[Sample]:
    """Another record of each run of model path `of`: the same figures, its key marked."""
    return [
        Sample(
            replace(s.context, row=replace(s.context.row, key=s.context.row.key + mark, **changes)),
            s.provider,
        )
        for s in samples
        if s.context.row.model_path == of
    ]


def test_a_run_the_sample_repeats_weighs_once_in_the_fit() -> None:
    samples = _samples()
    before = fit_calibration(METHOD_ROOFLINE, samples)

    twice = [
        *samples,
        *_copied(samples, OTHER),
        *_copied(samples, OTHER, "++", model_path="exported/Llama-3.1-70B"),
    ]

    assert fit_calibration(METHOD_ROOFLINE, twice) == before
    assert before.ttft[()].rows == 20


def test_copies_of_a_run_that_state_different_layouts_are_all_left_out_of_the_fit() -> None:
    samples = _samples()
    without = [s for s in samples if s.context.row.model_path != OTHER]

    relabelled = [*samples, *_copied(samples, OTHER, tp=2)]  # the 70B's runs were at tp 4

    assert fit_calibration(METHOD_ROOFLINE, relabelled) == fit_calibration(METHOD_ROOFLINE, without)


def test_fitting_only_on_held_out_rows_is_refused() -> None:
    held = [s for s in _samples() if s.context.row.held_out]
    with pytest.raises(ValueError, match="held-out"):
        fit_calibration(METHOD_ROOFLINE, held)


def test_calibration_scales_prompt_steps_and_leaves_decode_steps_to_the_base() -> None:
    base = _samples()[0].provider
    calibrated = CalibratedStepTime(base, 2.0)
    decode = StepBatch(0, 8, 8000, 8000)
    prompt = StepBatch(1000, 8, 9000, 8000 + 500_500)
    assert calibrated.method == METHOD_CALIBRATED
    assert calibrated.step_seconds(decode) == base.step_seconds(decode)
    assert calibrated.step_seconds(prompt) == pytest.approx(2.0 * base.step_seconds(prompt))


def test_a_calibrated_row_adds_the_scaled_overhead_and_corrects_the_base_tpot() -> None:
    sample = _samples()[0]
    calibration = Calibration(
        METHOD_ROOFLINE,
        ttft_form="active_params",
        tpot_form="engine",
        ttft={("vllm",): StepFactors(prefill=2.0, rounds=5, ttft_overhead_ms=40.0)},
        tpot={("vllm",): TpotFactors(log_factor=math.log(0.8))},
    )
    base = predict_row(sample.provider, sample.context)
    predicted = calibration.predict(sample, base)
    scaled = CalibratedStepTime(sample.provider, 2.0)
    overhead = 40.0 * sample.context.model.params_active_b / 10
    expected_ttft = simulate_row(scaled, sample.context).over_rounds(5).ttft_ms + overhead
    assert predicted.ttft_ms == pytest.approx(expected_ttft)
    assert predicted.tpot_ms == pytest.approx(0.8 * base.tpot_ms)
    assert predicted.method == METHOD_CALIBRATED


# Three fitted (model, h100_sxm, vllm) groups in three different cross-validation folds.
SYNTHETIC = (("meta-llama/Llama-3.1-8B-Instruct", 1), ("meta-llama/Llama-3.1-70B", 4))
SYNTHETIC += (("openai/gpt-oss-120b", 2),)


def _synthetic(
    overhead_form: str = "active_params",
    per_client_ms: float = 0.0,
    later: str = LATER_ROUNDS_REPEAT,
) -> list[Sample]:
    """Rows measured exactly as the roofline with prompt steps x0.5 over 3 rounds (the later
    ones in the `later` pattern), plus 40 ms at the overhead form's scale (per 10 B active
    parameters by default) and per_client_ms per benchmark client, and TPOT 0.8 x the
    roofline's."""
    scale = OVERHEAD_FORMS[overhead_form].scale
    samples = []
    for model_path, tp in SYNTHETIC:
        for index in range(8):
            sample = _sample(index, model_path, 1.0, 1.0, tp=tp)
            context = sample.context
            steps = CalibratedStepTime(sample.provider, 0.5)
            ttft = simulate_row(steps, context, later_rounds=later).over_rounds(3).ttft_ms
            ttft += 40.0 * scale(context) + per_client_ms * context.row.concurrency
            tpot = 0.8 * predict_row(sample.provider, context).tpot_ms
            row = replace(context.row, ttft_ms=ttft, tpot_ms=tpot)
            samples.append(Sample(replace(context, row=row), sample.provider))
    return samples


def test_cross_validation_on_the_fitted_groups_picks_the_forms_the_rows_follow() -> None:
    calibration = fit_calibration(METHOD_ROOFLINE, _synthetic())
    assert calibration.later_rounds == LATER_ROUNDS_REPEAT
    assert calibration.ttft_form == "active_params"
    assert calibration.cross_validation["ttft"]["active_params"] == pytest.approx(0, abs=0.01)
    assert calibration.cross_validation["ttft"]["constant"] > 1
    assert calibration.ttft[("vllm",)] == StepFactors(0.5, 3, 40.0, rows=24)
    assert calibration.tpot_form == "engine"  # the simplest form with no error left
    assert calibration.cross_validation["tpot"]["base"] == pytest.approx(25.0, abs=0.01)
    assert math.exp(calibration.tpot[("vllm",)].log_factor) == pytest.approx(0.8)


def test_an_overhead_that_grows_with_the_clients_is_told_apart_from_a_constant_one() -> None:
    calibration = fit_calibration(METHOD_ROOFLINE, _synthetic("concurrency"))

    # The rows' clients run from 1 to 16: 4 to 64 ms of overhead, which no constant matches.
    assert calibration.ttft_form == "concurrency"
    assert calibration.cross_validation["ttft"]["concurrency"] == pytest.approx(0, abs=0.01)
    assert calibration.cross_validation["ttft"]["constant"] > 1
    assert calibration.ttft[("vllm",)].ttft_overhead_ms == 40.0


def test_rows_whose_clients_spread_out_after_the_first_round_are_told_apart() -> None:
    samples = _synthetic("constant", later=LATER_ROUNDS_SPREAD)
    calibration = fit_calibration(METHOD_ROOFLINE, samples)

    scores = calibration.cross_validation["later_rounds"]
    assert calibration.later_rounds == LATER_ROUNDS_SPREAD
    assert scores[LATER_ROUNDS_SPREAD] == pytest.approx(0, abs=0.01)
    assert scores[LATER_ROUNDS_REPEAT] > 1
    sample = samples[4]  # 16 clients, whose prompts share steps only in the first round
    predicted = calibration.predict(sample, predict_row(sample.provider, sample.context))
    assert predicted.ttft_ms == pytest.approx(sample.context.row.ttft_ms)


def test_a_fixed_overhead_plus_one_per_client_is_fitted_as_two_terms() -> None:
    calibration = fit_calibration(METHOD_ROOFLINE, _synthetic("constant", per_client_ms=2.0))

    # 42 ms at one client to 72 ms at sixteen: neither a constant nor a share per client alone
    scores = calibration.cross_validation["ttft"]
    assert calibration.ttft_form == "constant_and_clients"
    assert scores["constant_and_clients"] == pytest.approx(0, abs=0.01)
    assert min(scores["constant"], scores["concurrency"]) > 1
    factors = calibration.ttft[("vllm",)]
    assert (factors.ttft_overhead_ms, factors.ttft_overhead_per_client_ms) == (40.0, 2.0)
    sample = _synthetic("constant", per_client_ms=2.0)[4]  # 16 clients
    predicted = calibration.predict(sample, predict_row(sample.provider, sample.context))
    assert predicted.ttft_ms == pytest.approx(sample.context.row.ttft_ms)


def test_a_fixed_overhead_growing_with_the_model_s_layers_is_told_apart() -> None:
    samples = _synthetic("layers_and_clients", per_client_ms=1.0)
    calibration = fit_calibration(METHOD_ROOFLINE, samples)

    # 40 ms for Llama 3.1 8B's 32 layers, 100 ms for the 70B's 80: no one fixed cost fits both
    scores = calibration.cross_validation["ttft"]
    assert calibration.ttft_form == "layers_and_clients"
    assert scores["layers_and_clients"] == pytest.approx(0, abs=0.01)
    assert scores["constant_and_clients"] > 1
    factors = calibration.ttft[("vllm",)]
    assert (factors.ttft_overhead_ms, factors.ttft_overhead_per_client_ms) == (40.0, 1.0)


def test_factors_per_engine_and_family_apply_only_when_the_fit_chose_those_keys() -> None:
    sample = _samples()[0]  # vllm on h100_sxm, a hopper
    table = {("vllm", "hopper"): StepFactors(prefill=0.5), ("vllm",): StepFactors(prefill=0.25)}
    per_family = Calibration(METHOD_ROOFLINE, ttft_keys="engine_family", ttft=table)
    per_engine = Calibration(METHOD_ROOFLINE, ttft_keys="engine", ttft=table)
    assert per_family.ttft_factors(sample).prefill == 0.5
    assert per_engine.ttft_factors(sample).prefill == 0.25
    tpot = {("vllm", "hopper"): TpotFactors(log_factor=0.1), (): TpotFactors(log_factor=0.2)}
    assert Calibration(METHOD_ROOFLINE, tpot=tpot).tpot_factors(sample).log_factor == 0.1


def _measured_at_native_tpot(weight: float = 1.0) -> list[Sample]:
    """The synthetic rows with each TPOT measured as AIConfigurator's own estimate of it (or,
    with a weight below 1, between it and the row's TPOT: native^w x row^(1-w))."""
    samples = []
    for sample in _synthetic():
        native = sample.native_tpot_ms
        assert native is not None  # AIConfigurator answers these Hopper vLLM rows
        tpot = native**weight * sample.context.row.tpot_ms ** (1 - weight)
        row = replace(sample.context.row, tpot_ms=tpot)
        samples.append(Sample(replace(sample.context, row=row), sample.provider))
    return samples


def test_cross_validation_takes_aiconfigurators_own_tpot_only_when_it_predicts_better() -> None:
    follows_roofline = fit_calibration(METHOD_ROOFLINE, _synthetic())
    assert follows_roofline.tpot_source == TPOT_SOURCE_BASE
    follows_native = fit_calibration(METHOD_ROOFLINE, _measured_at_native_tpot())
    assert follows_native.tpot_source == TPOT_SOURCE_NATIVE
    scores = follows_native.cross_validation["tpot_source"]
    assert scores[TPOT_SOURCE_NATIVE] == pytest.approx(0, abs=0.01)
    assert scores[TPOT_SOURCE_BASE] > 1


def test_cross_validation_takes_the_mean_of_both_tpots_when_rows_lie_between_them() -> None:
    between = fit_calibration(METHOD_ROOFLINE, _measured_at_native_tpot(weight=0.5))
    scores = between.cross_validation["tpot_source"]
    assert between.tpot_source == TPOT_SOURCE_BLEND
    assert scores[TPOT_SOURCE_BLEND] < min(scores[TPOT_SOURCE_BASE], scores[TPOT_SOURCE_NATIVE])


def test_native_and_mean_tpot_sources_fall_back_to_the_corrected_base_where_none_answers() -> None:
    calibration = Calibration(
        METHOD_ROOFLINE,
        tpot_form="engine",
        tpot_source=TPOT_SOURCE_NATIVE,
        tpot={("vllm",): TpotFactors(log_factor=math.log(0.8))},
    )
    answered = _samples()[0]  # Llama 8B on one H100
    unanswered = _sample(0, OTHER, 200.0, 14.0, tp=1)  # 70B in 16 bits does not fit one H100
    assert answered.native_tpot_ms is not None and unanswered.native_tpot_ms is None
    for sample, expected in ((answered, answered.native_tpot_ms), (unanswered, None)):
        base = predict_row(sample.provider, sample.context)
        predicted = calibration.predict(sample, base)
        assert predicted.tpot_ms == pytest.approx(expected or 0.8 * base.tpot_ms)
    blend = replace(calibration, tpot_source=TPOT_SOURCE_BLEND)
    for sample in (answered, unanswered):
        base = predict_row(sample.provider, sample.context)
        native, corrected = sample.native_tpot_ms, 0.8 * base.tpot_ms
        expected = corrected if native is None else math.sqrt(native * corrected)
        assert blend.predict(sample, base).tpot_ms == pytest.approx(expected)


def _measured_at_native_ttft() -> list[Sample]:
    """The synthetic rows with each TTFT measured as twice AIConfigurator's own estimate of it."""
    samples = []
    for sample in _synthetic():
        native = sample.native_ttft_ms
        assert native  # AIConfigurator answers these Hopper vLLM rows
        row = replace(sample.context.row, ttft_ms=2 * native)
        samples.append(Sample(replace(sample.context, row=row), sample.provider))
    return samples


def test_cross_validation_takes_aiconfigurators_own_ttft_only_when_it_predicts_better() -> None:
    follows_loop = fit_calibration(METHOD_ROOFLINE, _synthetic())
    assert follows_loop.ttft_source == TTFT_SOURCE_BASE
    assert follows_loop.cross_validation["ttft_source"][TTFT_SOURCE_BASE] == pytest.approx(
        0, abs=0.01
    )

    follows_native = fit_calibration(METHOD_ROOFLINE, _measured_at_native_ttft())
    scores = follows_native.cross_validation["ttft_source"]

    assert follows_native.ttft_source == TTFT_SOURCE_NATIVE
    assert math.exp(follows_native.native_ttft[("vllm",)]) == pytest.approx(2.0)
    assert scores[TTFT_SOURCE_NATIVE] == pytest.approx(0, abs=0.01)
    assert scores[TTFT_SOURCE_BASE] > scores[TTFT_SOURCE_BLEND] > scores[TTFT_SOURCE_NATIVE]


def test_ttft_sources_scale_aiconfigurators_own_per_engine_or_keep_the_loops_where_it_is_silent():
    calibration = Calibration(
        METHOD_ROOFLINE,
        ttft_source=TTFT_SOURCE_BLEND,
        ttft={("vllm",): StepFactors(prefill=0.5, rounds=3, ttft_overhead_ms=40.0)},
        native_ttft={("vllm",): math.log(2.0), (): 0.0},
    )
    answered = _samples()[0]  # Llama 8B on one H100
    unanswered = _sample(0, OTHER, 200.0, 14.0, tp=1)  # 70B in 16 bits does not fit one H100
    assert answered.native_ttft_ms and unanswered.native_ttft_ms is None
    for sample in (answered, unanswered):
        base = predict_row(sample.provider, sample.context)
        loop = replace(calibration, ttft_source=TTFT_SOURCE_BASE).predict(sample, base).ttft_ms
        native = sample.native_ttft_ms
        expected = loop if native is None else math.sqrt(loop * 2.0 * native)
        assert calibration.predict(sample, base).ttft_ms == pytest.approx(expected)
        alone = replace(calibration, ttft_source=TTFT_SOURCE_NATIVE).predict(sample, base)
        assert alone.ttft_ms == pytest.approx(loop if native is None else 2.0 * native)
