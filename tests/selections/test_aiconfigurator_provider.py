"""AIConfigurator's step times: which stacks it answers, with which database version, offline."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from stackselect_domain.steptime import (
    METHOD_AICONFIGURATOR,
    StepBatch,
    StepTimeProvider,
    step_function,
)

from apps.catalog import aiconfigurator_wheel
from apps.catalog.loading import fixture_instances
from apps.catalog.models import Accelerator, ModelSpec
from apps.selections.aiconfigurator_provider import (
    METHOD_AICONFIGURATOR_NATIVE,
    AicStack,
    aiconfigurator_serving_estimate,
    aiconfigurator_step_time,
    database_version,
    model_config_dir,
)
from apps.selections.published_predict import (
    RowContext,
    aiconfigurator_for,
    aiconfigurator_native_for,
    predict_row,
)
from tests.catalog.published_rows import sample_row

pytestmark = pytest.mark.skipif(
    not aiconfigurator_wheel.AVAILABLE, reason=aiconfigurator_wheel.UNAVAILABLE_REASON
)
MODELS = fixture_instances(ModelSpec, "models")
ACCELERATORS = fixture_instances(Accelerator, "accelerators")
DECODE_32 = StepBatch(
    prefill_tokens=0, decode_seqs=32, kv_tokens_read=48_000, attn_token_ctx=48_000
)
MIXED = StepBatch(1024, 31, 31 * 1500 + 1024, 31 * 1500 + 1024 * 1025 // 2)


def _stack(**changes) -> AicStack:
    values = {
        "model": MODELS["llama-3.1-8b"],
        "accelerator_slug": "h200-sxm",
        "engine_slug": "vllm",
        "engine_version": "0.19.0",
        "precision": "fp8",
        **changes,
    }
    return AicStack(**values)


def test_two_engines_on_the_same_layout_get_different_step_times_named_aiconfigurator() -> None:
    vllm = aiconfigurator_step_time(_stack()).provider
    sglang = aiconfigurator_step_time(_stack(engine_slug="sglang", engine_version="0.5.9")).provider
    assert isinstance(vllm, StepTimeProvider) and isinstance(sglang, StepTimeProvider)
    assert vllm.method == sglang.method == METHOD_AICONFIGURATOR
    assert vllm.step_seconds(DECODE_32) != sglang.step_seconds(DECODE_32)
    assert vllm.step_seconds(MIXED) > vllm.step_seconds(DECODE_32) > 0


def test_the_simulator_asks_with_plain_numbers_and_gets_the_batchs_own_step_time() -> None:
    provider = aiconfigurator_step_time(_stack()).provider
    seconds = step_function(provider)

    for batch in (DECODE_32, MIXED, StepBatch(8192, 0, 8192, 8192 * 8193 // 2)):
        numbers = (batch.prefill_tokens, batch.decode_seqs)
        numbers += (batch.kv_tokens_read, batch.attn_token_ctx)
        assert seconds(*numbers) == provider.step_seconds(batch)
    # fractional averages (the analytic estimate's) are rounded to whole tokens, as a batch is
    assert seconds(0, 31.6, 47_999.6, 48_000.4) == provider.step_seconds(DECODE_32)


def test_a_version_outside_the_database_is_answered_from_the_nearest_and_says_so() -> None:
    choice = aiconfigurator_step_time(_stack(engine_version="0.19.0"))
    assert choice.database_version not in (None, "0.19.0")
    assert "vllm 0.19.0 is not in AIConfigurator's database" in choice.note
    same, note = database_version("h200_sxm", "vllm", choice.database_version)
    assert (same, note) == (choice.database_version, "")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"accelerator_slug": "mi300x"}, "no measured kernel data for mi300x"),
        ({"engine_slug": "llama-cpp"}, "not llama-cpp"),
        ({"accelerator_slug": "h100-sxm", "precision": "fp4"}, "no FP4 kernels measured on h100"),
        ({"model": MODELS["gemma-3-27b"]}, "ships no configuration of Gemma-3-27B"),
    ],
)
def test_a_stack_it_does_not_cover_gets_no_provider_and_the_reason(changes, reason) -> None:
    choice = aiconfigurator_step_time(_stack(**changes))
    assert choice.provider is None
    assert reason in choice.reason


def test_a_dense_model_it_lacks_is_written_locally_from_the_catalog_shapes() -> None:
    model = MODELS["qwen2.5-7b"]
    directory, reason = model_config_dir(model)
    assert reason == ""
    written = json.loads((directory / "config.json").read_text())
    assert written["hidden_size"] == model.hidden_size
    assert written["num_key_value_heads"] == model.kv_heads
    assert directory.is_dir()  # a local path, so AIConfigurator never looks the model up online


def _unsaved(model: ModelSpec, **changes) -> ModelSpec:
    """A copy of a catalog model, unsaved and without a slug, as a custom architecture is."""
    copy = ModelSpec(**{f.attname: getattr(model, f.attname) for f in ModelSpec._meta.fields})
    copy.pk, copy.slug = None, ""
    for name, value in changes.items():
        setattr(copy, name, value)
    return copy


def test_two_custom_models_of_different_shapes_are_each_timed_by_their_own_configuration():
    small = aiconfigurator_step_time(_stack(model=_unsaved(MODELS["llama-3.1-8b"]))).provider
    large = aiconfigurator_step_time(_stack(model=_unsaved(MODELS["llama-3.1-70b"]))).provider
    again = aiconfigurator_step_time(_stack(model=_unsaved(MODELS["llama-3.1-8b"]))).provider

    assert large.step_seconds(DECODE_32) > 3 * small.step_seconds(DECODE_32)
    assert again.step_seconds(DECODE_32) == small.step_seconds(DECODE_32)


def test_a_catalog_model_whose_shapes_change_is_timed_anew_not_from_the_old_shapes():
    model = _unsaved(MODELS["qwen2.5-7b"], slug="qwen2.5-7b", pk=4242)
    before = aiconfigurator_step_time(_stack(model=model)).provider.step_seconds(DECODE_32)

    model.layers *= 2
    after = aiconfigurator_step_time(_stack(model=model)).provider.step_seconds(DECODE_32)

    assert after > 1.5 * before


def test_aiconfigurators_own_estimate_of_a_row_is_positive_and_not_our_loop_over_its_steps():
    row = sample_row()  # Llama 3.1 8B, one H100, vLLM, 1024/256 tokens, 16 clients
    context = RowContext(row, MODELS["llama-3.1-8b"], ACCELERATORS["h100-sxm"])
    native = aiconfigurator_native_for(context)
    simulated = predict_row(aiconfigurator_for(context), context)
    assert native.reason == "" and native.method == METHOD_AICONFIGURATOR_NATIVE
    assert native.ttft_ms > 0 and native.tpot_ms > 0
    assert "vllm 0.19.0 is not in AIConfigurator's database" in native.note
    # the same measured kernels, timed by its serving formula instead of our closed loop
    assert abs(native.ttft_ms - simulated.ttft_ms) > 0.05 * simulated.ttft_ms
    assert native.tpot_ms != pytest.approx(simulated.tpot_ms, rel=1e-3)


def test_fp8_without_per_tensor_moe_data_is_timed_with_block_scaled_experts_and_says_so():
    stack = _stack(
        model=MODELS["qwen3.5-397b-a17b"],
        accelerator_slug="b300",
        engine_slug="sglang",
        engine_version="0.5.10.post1",
        tp=4,
    )
    said = "timed with fp8/fp8_block kernels: AIConfigurator has no fp8/fp8 data"
    choice = aiconfigurator_step_time(stack)
    assert choice.provider is not None and said in choice.note
    assert choice.provider.step_seconds(DECODE_32) > 0
    derived = aiconfigurator_serving_estimate(stack, isl=1024, osl=1024, batch_size=8)
    assert derived.ttft_ms > 0 and said in derived.note
    # modes a stack states are the only ones tried: a published row's own, as it ran
    stated = replace(stack, quant_modes=("fp8", "fp8"))
    refused = aiconfigurator_serving_estimate(stated, isl=1024, osl=1024, batch_size=8)
    assert refused.ttft_ms is None and "MoE data missing" in refused.reason
    ran = aiconfigurator_serving_estimate(
        replace(stack, quant_modes=("fp8", "fp8_block")), isl=1024, osl=1024, batch_size=8
    )
    assert ran.reason == "" and ran.ttft_ms > 0 and "timed with" not in ran.note


def test_an_fp8_checkpoint_is_timed_per_tensor_first_and_in_its_own_format_only_after() -> None:
    stack = _stack(model=MODELS["minimax-m2.5"], accelerator_slug="b200", tp=2)
    assert stack.model.native_dtype == "fp8"
    per_tensor = aiconfigurator_step_time(stack)
    own_format = aiconfigurator_step_time(replace(stack, quant_modes=(None, None)))
    assert per_tensor.provider is not None and own_format.provider is not None
    assert "timed with" not in per_tensor.note
    # the order matters: the configuration's own format times MiniMax's decode steps slower
    assert per_tensor.provider.step_seconds(DECODE_32) < own_format.provider.step_seconds(DECODE_32)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"accelerator_slug": "mi300x"}, "no measured kernel data for mi300x"),
        ({"model": MODELS["llama-3.1-405b"], "precision": "bf16"}, "does not fit in h200_sxm"),
    ],
)
def test_its_own_estimate_is_refused_with_the_reason_where_it_cannot_answer(changes, reason):
    estimate = aiconfigurator_serving_estimate(_stack(**changes), isl=1024, osl=256, batch_size=4)
    assert (estimate.ttft_ms, estimate.tpot_ms) == (None, None)
    assert reason in estimate.reason
