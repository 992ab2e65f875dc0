"""Predicting a published row's TTFT and TPOT with a named method, under the row's conditions.

The accuracy benchmark and the calibration both ask: for this published measurement (model,
system, engine and version, precision, layout, ISL/OSL, concurrency), what does a method
predict? The answer runs the fixed-concurrency closed loop on the method's step times, with the
engine's scheduling policy and token budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

from stackselect_domain.closedloop import (
    LATER_ROUNDS_REPEAT,
    SCHEDULE_MIXED,
    SCHEDULE_PREFILL_FIRST,
    FixedConcurrencyPrediction,
    predict_fixed_concurrency,
)
from stackselect_domain.engine_batch import (
    EngineBatch,
    clients_per_rank,
    engine_batch,
    loop_reproduces,
)
from stackselect_domain.prompt_load import PromptLoad, TierPeaks, implied_prompt_load
from stackselect_domain.steptime import RooflineStepTime, StepTimeProvider

from apps.catalog.models import Accelerator, ModelSpec
from apps.catalog.published_sample import PublishedRow
from apps.selections.aiconfigurator_provider import (
    AicServingEstimate,
    AicStack,
    aiconfigurator_serving_estimate,
    aiconfigurator_step_time,
)
from apps.selections.catalog_adapter import accelerator_spec, model_arch
from apps.selections.estimator import Efficiency, Parallelism, build_step_cost

# Token budget per step of the releases the sample measured, which its runs did not override:
# vLLM 0.11-0.19 give the OpenAI server 8192 on a GPU of at least 70 GiB that is not an A100
# (every sample GPU), TensorRT-LLM's LLM API 8192 (fixtures/catalog/engines.json), and SGLang
# 0.5.6-0.5.10 resolve it from the GPU's memory: 8192 below 160 GiB, 16384 from there (B200,
# B300, GB200, GB300). Read in the vllm 0.19.0 and sglang 0.5.6 / 0.5.10.post1 wheels on
# 2026-12-05; vLLM's own 160 GiB tier came later than the sample's releases.
DEFAULT_BUDGET = 8192
LARGE_GPU_BUDGETS = {"sglang": (160, 16384)}  # engine: (from this many GB, budget)
SCHEDULES = {"sglang": SCHEDULE_PREFILL_FIRST}
# Rounds simulated per client: the synchronised first round and two later ones (repeating: the
# one its queue spreads out and one in the pattern every later round repeats, as fixed lengths
# keep the clients' spacing; spread: two rounds of clients spread over a request's lifetime).
SIMULATED_ROUNDS = 3
# Rounds per client an uncalibrated prediction assumes: the benchmark AIConfigurator generates
# runs concurrency x 20 requests after 2 x concurrency warm-up ones (its generator's
# benchmark/bench_run.sh.j2, BENCH_MULTI_ROUND); calibration fits the sample's own.
BENCHMARK_ROUNDS = 20


class StatedLayout(Protocol):
    """The degrees a published measurement states; None where it states none."""

    tp: int | None
    pp: int | None
    ep: int | None
    dp: int | None


def stated_parallelism(row: StatedLayout, model: ModelSpec) -> Parallelism:
    """The estimator's layout for a published row: expert parallelism only for a model with
    routed experts, and only where it divides tp x dp as the estimator draws it."""
    tp, dp = row.tp or 1, row.dp or 1
    ep = (row.ep or 1) if model.experts_total else 1
    if (tp * dp) % ep:
        ep = 1  # the row's experts split otherwise than the roofline can say
    return Parallelism(tp=tp, pp=row.pp or 1, ep=ep, dp=dp)


@dataclass(frozen=True)
class RowContext:
    """A published row with the catalog rows it names."""

    row: PublishedRow
    model: ModelSpec
    accelerator: Accelerator

    @property
    def per_rank_concurrency(self) -> int:
        """Attention-DP ranks split the clients; each rank batches its own share."""
        return clients_per_rank(self.row.concurrency, self.row.dp)

    def parallelism(self) -> Parallelism:
        return stated_parallelism(self.row, self.model)

    def prompt_load(self) -> PromptLoad | None:
        """The prompt compute the row's own figures imply (stackselect_domain.prompt_load)."""
        peaks = TierPeaks.of(self.accelerator)
        return implied_prompt_load(
            self.row, active_params_b=self.model.params_active_b, peaks=peaks
        )

    @property
    def adds_up(self) -> bool:
        """False when the row's own figures imply more prompt compute than the roofline assumes
        any engine reaches: no method reproduces it cold."""
        return loop_reproduces(self.prompt_load(), None)

    def engine_batch(self) -> EngineBatch | None:
        """The engine batch the row states beside its clients (stackselect_domain.engine_batch)."""
        row = self.row
        return engine_batch(batch_size=row.batch_size, concurrency=row.concurrency, dp=row.dp)

    @property
    def batch_holds_clients(self) -> bool:
        """False when the row states an engine batch per rank smaller than its clients per rank:
        a queue inside the engine the closed loop does not model."""
        return loop_reproduces(None, self.engine_batch())

    @cached_property
    def loop_reproduces(self) -> bool:
        """Whether the closed loop could reproduce the row: both checks above pass
        (engine_batch.loop_reproduces)."""
        return loop_reproduces(self.prompt_load(), self.engine_batch())

    @property
    def fits_on(self) -> bool:
        """Whether a calibration may fit on the row: outside the held-out split, and measured
        under conditions the closed loop could reproduce."""
        return not self.row.held_out and self.loop_reproduces

    @property
    def token_budget(self) -> int:
        """The engine's token budget per step on the row's GPU (DEFAULT_BUDGET above)."""
        large = LARGE_GPU_BUDGETS.get(self.row.engine_slug or "")
        if large and self.accelerator.memory_gb >= large[0]:
            return large[1]
        return DEFAULT_BUDGET


ProviderFor = Callable[[RowContext], StepTimeProvider | None]


def roofline_for(context: RowContext, efficiency: Efficiency | None = None) -> StepTimeProvider:
    """The roofline provider for the row, tuned at its per-rank batch and mean context."""
    row = context.row
    cost = build_step_cost(
        model=model_arch(context.model),
        accel=accelerator_spec(context.accelerator),
        precision=row.precision,
        kv_dtype=None,
        parallelism=context.parallelism(),
        efficiency=efficiency,
        decode_batch=context.per_rank_concurrency,
        context=row.isl + row.osl / 2,
    )
    return RooflineStepTime(cost)


def _aic_stack(context: RowContext) -> AicStack:
    row = context.row
    return AicStack.on_layout(
        context.parallelism(),
        model=context.model,
        accelerator_slug=context.accelerator.slug,
        engine_slug=row.engine_slug or row.backend,
        engine_version=row.backend_version,
        precision=row.precision,
    )


def aiconfigurator_for(context: RowContext) -> StepTimeProvider | None:
    """AIConfigurator's provider for the row (its nearest database version), or None."""
    return aiconfigurator_step_time(_aic_stack(context)).provider


def aiconfigurator_native_for(context: RowContext) -> AicServingEstimate:
    """AIConfigurator's own TTFT and TPOT for the row, given what the row states in its terms,
    as AIConfigurator's own regression over its sample does: the quantisation modes the run
    used and the batch its engine ran (where the row states none, its clients per attention
    rank). The step-time method derives the modes from our precision word instead."""
    row = context.row
    modes = (row.gemm_quant_mode or None, row.moe_quant_mode or None)
    return aiconfigurator_serving_estimate(
        replace(_aic_stack(context), quant_modes=modes),
        isl=row.isl,
        osl=row.osl,
        batch_size=row.batch_size or context.per_rank_concurrency,
    )


def simulate_row(
    provider: StepTimeProvider, context: RowContext, *, later_rounds: str = LATER_ROUNDS_REPEAT
) -> FixedConcurrencyPrediction:
    """The row's clients by this provider, starting together, for SIMULATED_ROUNDS rounds, the
    later ones in the `later_rounds` pattern (stackselect_domain.closedloop); its
    `over_rounds(n)` is what a benchmark of n rounds per client measures."""
    row = context.row
    return predict_fixed_concurrency(
        provider,
        isl=row.isl,
        osl=row.osl,
        concurrency=context.per_rank_concurrency,
        max_batched_tokens=context.token_budget,
        schedule=SCHEDULES.get(row.engine_slug or "", SCHEDULE_MIXED),
        lifetimes=SIMULATED_ROUNDS,
        later_rounds=later_rounds,
    )


def predict_row(
    provider: StepTimeProvider, context: RowContext, *, rounds: int = BENCHMARK_ROUNDS
) -> FixedConcurrencyPrediction:
    """The row's mean TTFT and TPOT by this provider over `rounds` requests per client."""
    return simulate_row(provider, context).over_rounds(rounds)
