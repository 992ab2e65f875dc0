"""The prompt compute a published fixed-concurrency row's own figures imply, and the peak of the
tier a precision runs on."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from stackselect_domain.precision import COMPUTE_BF16, COMPUTE_FP4, COMPUTE_FP8, peak_of_tier
from stackselect_domain.prompt_load import ROOFLINE_GEMM_SHARE, TierPeaks, implied_prompt_load


@dataclass(frozen=True)
class Run:
    """Ten clients on two GPUs, each request 100 ms to the first token and ten more tokens
    10 ms apart: 0.2 s a request, so 50 requests a second of 1,000 prompt tokens."""

    mode: str = "agg"
    concurrency: int | None = 10
    isl: int = 1000
    osl: int = 11
    ttft_ms: float | None = 100.0
    tpot_ms: float | None = 10.0
    precision: str = "bf16"
    tp: int | None = 2
    pp: int | None = None
    dp: int | None = None


PEAKS = TierPeaks(bf16=1000.0, fp8=2000.0)
TEN_B = 10.0  # on a model of 10B active parameters: 1 PFLOP/s of prompt work


def _load(run: Run, peaks: TierPeaks = PEAKS):
    return implied_prompt_load(run, active_params_b=TEN_B, peaks=peaks)


def test_a_closed_loop_row_implies_its_request_rate_times_its_prompt_flops_over_its_peak() -> None:
    load = _load(Run())

    assert load is not None
    assert load.share_of_peak == pytest.approx(0.5)
    assert load.beyond_assumed is False
    assert "at least 50% of its GPUs' dense peak" in load.note()


def test_a_row_faster_than_the_roofline_assumes_any_engine_computes_is_flagged() -> None:
    load = _load(Run(tpot_ms=5.0))  # 0.15 s a request

    assert load is not None
    assert load.share_of_peak == pytest.approx(2 / 3)
    assert load.share_of_peak > ROOFLINE_GEMM_SHARE and load.beyond_assumed
    assert "prompt-cache hits, fewer clients in flight than stated or more replicas" in load.note()


def test_every_gpu_of_the_layout_shares_the_prompts_at_the_precisions_own_peak() -> None:
    one = _load(Run(tp=1))
    eight = _load(Run(tp=2, pp=2, dp=2))
    fp8 = _load(Run(precision="fp8"))

    assert one is not None and eight is not None and fp8 is not None
    assert one.share_of_peak == pytest.approx(8 * eight.share_of_peak) == pytest.approx(1.0)
    assert fp8.share_of_peak == pytest.approx(0.25)


@pytest.mark.parametrize(
    "missing",
    [
        {"mode": "disagg"},
        {"concurrency": None},
        {"ttft_ms": None},
        {"tpot_ms": None},
        {"isl": 0},
        {"precision": "int2"},
    ],
)
def test_a_row_that_states_too_little_implies_nothing(missing: dict) -> None:
    assert _load(replace(Run(), **missing)) is None


def test_an_accelerator_without_a_16_bit_peak_implies_nothing() -> None:
    assert _load(Run(), TierPeaks(bf16=None)) is None


def test_a_low_precision_tier_without_its_own_rate_falls_back_one_tier() -> None:
    assert peak_of_tier(COMPUTE_FP4, bf16=989, fp8=1979, fp4=None) == 1979
    assert peak_of_tier(COMPUTE_FP4, bf16=2250, fp8=4500, fp4=9000) == 9000
    assert peak_of_tier(COMPUTE_FP8, bf16=312, fp8=None) == 312
    assert peak_of_tier(COMPUTE_BF16, bf16=989, fp8=1979) == 989


def test_an_unknown_compute_tier_is_refused() -> None:
    with pytest.raises(ValueError, match="compute: unknown tier 'int2'"):
        peak_of_tier("int2", bf16=989)
