"""Which step-time provider applies to a stack: the one place a prediction's method is chosen.

`step_time_provider` asks each provider in `COVERING_PROVIDERS` in turn (functions that return
a provider for the stacks their data covers and None otherwise, such as measured kernel data
for a system, engine and version) and falls back to the engine-aware roofline, which covers
every accelerator in the catalog. The candidate ranking, the stateless estimate and the
simulator all get their step times from here, so every figure carries the method of the
provider that produced it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stackselect_domain.steptime import RooflineStepTime, StepTimeProvider

from apps.selections.engine_profiles import engine_profile
from apps.selections.estimator import (
    AcceleratorSpec,
    Efficiency,
    ModelArch,
    Parallelism,
    StepTimeFactory,
    build_step_cost,
)


@dataclass(frozen=True)
class StackInputs:
    """What a step-time provider may look at: the replica's model, hardware and engine."""

    model: ModelArch
    accel: AcceleratorSpec
    precision: str
    kv_dtype: str | None
    parallelism: Parallelism
    engine: str
    engine_version: str = ""
    backend: str | None = None

    def replica(self) -> dict[str, Any]:
        """The estimator's keyword arguments that describe this replica."""
        return {
            "model": self.model,
            "accel": self.accel,
            "precision": self.precision,
            "kv_dtype": self.kv_dtype,
            "parallelism": self.parallelism,
        }


# (stack, decode batch, mean context) -> a provider, or None when its data does not cover the
# stack. Empty until a measured provider is installed; the roofline below always answers.
CoveringProvider = Callable[[StackInputs, int, float], StepTimeProvider | None]
COVERING_PROVIDERS: tuple[CoveringProvider, ...] = ()


def roofline_provider(
    stack: StackInputs,
    *,
    decode_batch: int,
    context: float,
    efficiency: Efficiency | None = None,
) -> RooflineStepTime:
    """The roofline with the engine's profile (engine_profiles.py): its eager step overhead and
    the saving of its CUDA-graph decode steps. Factors fitted on the team's own runs, when
    given, replace the default efficiency (the graph saving then stays within their overhead)."""
    profile = engine_profile(stack.engine)
    cost = build_step_cost(
        model=stack.model,
        accel=stack.accel,
        precision=stack.precision,
        kv_dtype=stack.kv_dtype,
        parallelism=stack.parallelism,
        efficiency=efficiency or profile.efficiency(),
        decode_batch=decode_batch,
        context=context,
    )
    saving = min(profile.graph_saving_ms / 1e3, cost.step_overhead_s)
    return RooflineStepTime(
        cost,
        graph_max_batch=profile.graph_max_batch,
        graph_saving_s=saving,
        engine=profile.engine,
    )


def step_time_provider(
    stack: StackInputs,
    *,
    decode_batch: int,
    context: float,
    efficiency: Efficiency | None = None,
) -> StepTimeProvider:
    """The first covering provider's answer, else the engine-aware roofline."""
    for covering in COVERING_PROVIDERS:
        provider = covering(stack, decode_batch, context)
        if provider is not None:
            return provider
    return roofline_provider(
        stack, decode_batch=decode_batch, context=context, efficiency=efficiency
    )


def method_record(provider: StepTimeProvider, nature: str) -> dict[str, str]:
    """The method fields every figure carries: provider, simulated or analytic, and a label."""
    return {
        "method": provider.method,
        "nature": nature,
        "label": f"{provider.method}, {nature}",
        "engine_profile": getattr(provider, "engine", ""),
    }


def step_time_factory(stack: StackInputs, efficiency: Efficiency | None = None) -> StepTimeFactory:
    """The analytic estimate's view: a provider per (decode batch, mean context)."""

    def provider(decode_batch: int, context: float) -> StepTimeProvider:
        return step_time_provider(
            stack, decode_batch=decode_batch, context=context, efficiency=efficiency
        )

    return provider
