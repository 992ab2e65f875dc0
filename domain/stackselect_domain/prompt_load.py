"""Whether a published fixed-concurrency measurement adds up: the prompt compute its own figures
imply, as a share of its GPUs' dense peak.

A closed loop of C clients, each finishing a request every TTFT + (OSL - 1) x TPOT, completes
C / that many requests a second (Little's law), and every request brings ISL prompt tokens of at
least 2 x active parameters FLOPs (attention left out, so the figure is a floor). Divided by the
dense peak of the row's GPUs at its precision, that is the least share of peak the engine must
have spent on prompt tokens alone. Above the share the roofline assumes large GEMMs reach, no
method here can reproduce the row from a cold cache: the source may have had prompt-cache hits,
fewer clients in flight than it states, or more replicas than it records (a deployment's clients
spread over several workers), so its figures are read with care.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from stackselect_domain.precision import PRECISIONS, peak_of_tier
from stackselect_domain.slo import request_ms
from stackselect_domain.vocabulary import MODE_AGGREGATED

# The roofline's starting assumption for the share of dense peak large GEMMs reach in practice
# (the estimator's default compute efficiency reads this constant).
ROOFLINE_GEMM_SHARE = 0.5


class RatedAccelerator(Protocol):
    """Anything carrying the catalog's dense peak TFLOPS columns (an accelerator, or a published
    row read with its accelerator's figures)."""

    bf16_tflops: float | None
    fp8_tflops: float | None
    fp4_tflops: float | None


@dataclass(frozen=True)
class TierPeaks:
    """An accelerator's dense peak TFLOPS per GPU by tier; None where it has no such units."""

    bf16: float | None
    fp8: float | None = None
    fp4: float | None = None

    @classmethod
    def of(cls, rated: RatedAccelerator) -> TierPeaks:
        return cls(rated.bf16_tflops, rated.fp8_tflops, rated.fp4_tflops)


@dataclass(frozen=True)
class PromptLoad:
    """The least share of dense peak a row's prompts needed, and whether it exceeds the
    roofline's assumption."""

    share_of_peak: float

    @property
    def beyond_assumed(self) -> bool:
        return self.share_of_peak > ROOFLINE_GEMM_SHARE

    def note(self) -> str:
        floor = f"its figures imply at least {self.share_of_peak:.0%} of its GPUs' dense peak on "
        floor += "prompt tokens alone (attention left out)"
        if not self.beyond_assumed:
            return floor
        return (
            f"{floor}, more than the {ROOFLINE_GEMM_SHARE:.0%} of peak the roofline assumes: "
            "no method here reproduces it from a cold cache; the source may have had prompt-cache "
            "hits, fewer clients in flight than stated or more replicas than it records, so read "
            "it with care"
        )


class StatedRun(Protocol):
    """What a published fixed-concurrency row states: its serving mode, clients, lengths,
    figures, precision word and layout (None where it states none; a disaggregated row's layout
    is its decode pool's)."""

    mode: str
    concurrency: int | None
    isl: int
    osl: int
    ttft_ms: float | None
    tpot_ms: float | None
    precision: str
    tp: int | None
    pp: int | None
    dp: int | None


def implied_prompt_load(
    run: StatedRun, *, active_params_b: float, peaks: TierPeaks
) -> PromptLoad | None:
    """The run's implied prompt load on its tp x pp x dp GPUs at its precision's tier, or None
    where it cannot tell: a disaggregated run (its prompts ran on a pool it does not lay out),
    no clients, no TTFT or TPOT, an empty request, a precision word we do not know, or no
    16-bit peak for its accelerator."""
    if run.mode != MODE_AGGREGATED or not run.concurrency:
        return None
    if run.ttft_ms is None or run.tpot_ms is None:
        return None
    if run.isl <= 0 or run.osl <= 0 or run.precision not in PRECISIONS or not peaks.bf16:
        return None
    request_s = request_ms(run.ttft_ms, run.tpot_ms, run.osl) / 1e3
    if request_s <= 0:
        return None
    compute = PRECISIONS[run.precision].compute
    peak = peak_of_tier(compute, bf16=peaks.bf16, fp8=peaks.fp8, fp4=peaks.fp4)
    gpus = (run.tp or 1) * (run.pp or 1) * (run.dp or 1)
    prompt_flops_per_s = run.concurrency / request_s * run.isl * 2 * active_params_b * 1e9
    return PromptLoad(share_of_peak=prompt_flops_per_s / (gpus * peak * 1e12))
