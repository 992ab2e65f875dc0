"""The step-time interface: a batch is checked, and the roofline provider names its method."""

from dataclasses import dataclass

import pytest
from stackselect_domain.stepcost import StepCost
from stackselect_domain.steptime import (
    METHOD_ROOFLINE,
    PlainStepTime,
    RooflineStepTime,
    StepBatch,
    StepTimeProvider,
    step_function,
)

COST = StepCost(
    weight_bytes=16e9,
    kv_bytes_per_token=131_072.0,
    flops_per_token=16e9,
    attn_flops_per_token_ctx=0.0,
    hbm_bytes_per_s=2.0e12,
    flops_per_s=5.0e14,
    comm_s_per_token=0.0,
    step_overhead_s=0.002,
)


def test_a_roofline_provider_times_a_batch_as_its_step_cost_does_and_says_roofline():
    provider = RooflineStepTime(COST)
    batch = StepBatch(prefill_tokens=512, decode_seqs=8, kv_tokens_read=9_000, attn_token_ctx=9_000)
    assert isinstance(provider, StepTimeProvider)
    assert provider.method == METHOD_ROOFLINE
    assert provider.step_seconds(batch) == COST.step_seconds(520, 9_000, 9_000)


def test_a_bigger_prefill_chunk_takes_longer_once_compute_binds():
    provider = RooflineStepTime(COST)
    small = StepBatch(prefill_tokens=256, decode_seqs=0, kv_tokens_read=256, attn_token_ctx=256)
    large = StepBatch(prefill_tokens=8192, decode_seqs=0, kv_tokens_read=8192, attn_token_ctx=8192)
    assert provider.step_seconds(large) > provider.step_seconds(small)


@pytest.mark.parametrize("field", ["prefill_tokens", "decode_seqs", "kv_tokens_read"])
def test_a_negative_or_fractional_batch_count_is_refused_with_its_name(field):
    values = {"prefill_tokens": 1, "decode_seqs": 1, "kv_tokens_read": 1, "attn_token_ctx": 1}
    with pytest.raises(ValueError, match=f"batch.{field}"):
        StepBatch(**{**values, field: -1})
    with pytest.raises(ValueError, match=f"batch.{field}"):
        StepBatch(**{**values, field: 1.5})


@dataclass(frozen=True)
class BatchOnly:
    """A provider that answers StepBatch alone, as the calibrated one does: 1 ms a token."""

    method: str = "batch-only"

    def step_seconds(self, batch: StepBatch) -> float:
        return 1e-3 * (batch.batch_tokens + batch.kv_tokens_read + batch.attn_token_ctx)


def test_a_provider_of_plain_numbers_is_asked_directly_with_the_analytic_averages():
    provider = RooflineStepTime(COST)
    assert isinstance(provider, PlainStepTime)
    assert step_function(provider) == provider.seconds
    assert step_function(provider)(0, 7.5, 9_000.5, 9_000.5) == COST.step_seconds(
        7.5, 9_000.5, 9_000.5
    )


def test_a_provider_of_batches_alone_is_asked_with_the_numbers_rounded_to_a_batch():
    provider = BatchOnly()
    assert not isinstance(provider, PlainStepTime)

    seconds = step_function(provider)

    assert seconds(511.6, 8.4, 8_999.5, 9_000.4) == provider.step_seconds(
        StepBatch(512, 8, 9_000, 9_000)
    )
