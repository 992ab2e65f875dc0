"""Which step-time provider applies to a stack: the one place a prediction's method is chosen.

`step_time_provider` picks, most specific first: the roofline with efficiency factors fitted on
the team's own measured runs, when there are any for the accelerator and engine; else
AIConfigurator's measured kernel data, when it covers the system, engine and precision
(aiconfigurator_provider.py); else the engine-aware roofline, which covers every accelerator in
the catalog. The candidate ranking, the stateless estimate and the simulator all get their step
times from here, so every figure carries the method of the provider that produced it, and
`method_note` says why that method and not the other. A comparison over hundreds of stacks (the
ranking's analytic order) asks with `measured_kernels=False`: AIConfigurator takes milliseconds
per step and a compile per stack, so there the roofline answers for every stack alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackselect_domain.steptime import (
    METHOD_ROOFLINE,
    METHOD_TEAM_FITTED,
    RooflineStepTime,
    StepTimeProvider,
)

from apps.catalog.models import ModelSpec
from apps.selections.aiconfigurator_provider import AicChoice, AicStack, aiconfigurator_step_time
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
    # The catalog rows behind `model` and `accel`, for providers keyed by them (AIConfigurator);
    # without them only the roofline answers.
    catalog_model: ModelSpec | None = field(default=None, compare=False)
    accelerator_slug: str = ""

    def replica(self) -> dict[str, Any]:
        """The estimator's keyword arguments that describe this replica."""
        return {
            "model": self.model,
            "accel": self.accel,
            "precision": self.precision,
            "kv_dtype": self.kv_dtype,
            "parallelism": self.parallelism,
        }


CUSTOM_MODEL_REASON = (
    "AIConfigurator is asked about catalog models only; a custom architecture gets the roofline"
)
TEAM_FACTORS_NOTE = "roofline with efficiency factors fitted on the team's own measured runs"
ROOFLINE_ONLY_NOTE = (
    "roofline: the analytic order over every kept stack uses it alike; AIConfigurator's measured "
    "kernels, where they cover a stack, time the simulated comparison"
)


def aiconfigurator_choice(stack: StackInputs) -> AicChoice:
    """AIConfigurator's provider for the stack, or None with the reason it does not apply."""
    model = stack.catalog_model
    if model is None or model.pk is None or not stack.accelerator_slug:
        return AicChoice(None, CUSTOM_MODEL_REASON)
    return aiconfigurator_step_time(
        AicStack.on_layout(
            stack.parallelism,
            model=model,
            accelerator_slug=stack.accelerator_slug,
            engine_slug=stack.engine,
            engine_version=stack.engine_version,
            precision=stack.precision,
            kv_dtype=stack.kv_dtype,
        )
    )


def _measured_kernels(
    stack: StackInputs, efficiency: Efficiency | None, measured_kernels: bool
) -> tuple[StepTimeProvider | None, str]:
    """AIConfigurator's provider when it is the one to use, else None; with the sentence saying
    why the stack has the method it gets. The one place the choice is made."""
    if efficiency is not None:
        return None, TEAM_FACTORS_NOTE
    if not measured_kernels:
        return None, ROOFLINE_ONLY_NOTE
    choice = aiconfigurator_choice(stack)
    if choice.provider is not None:
        return choice.provider, (
            choice.note or f"{choice.provider.label}: the stack's own engine version"
        )
    return None, f"roofline, because {choice.reason}"


def method_note(
    stack: StackInputs, *, efficiency: Efficiency | None = None, measured_kernels: bool = True
) -> str:
    """Why the stack's figures have the method they have, in a sentence."""
    return _measured_kernels(stack, efficiency, measured_kernels)[1]


def roofline_provider(
    stack: StackInputs,
    *,
    decode_batch: int,
    context: float,
    efficiency: Efficiency | None = None,
) -> RooflineStepTime:
    """The roofline with the engine's profile (engine_profiles.py): its eager step overhead and
    the saving of its CUDA-graph decode steps. Factors fitted on the team's own runs, when
    given, replace the default efficiency (the graph saving then stays within their overhead)
    and name the method METHOD_TEAM_FITTED."""
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
        method=METHOD_ROOFLINE if efficiency is None else METHOD_TEAM_FITTED,
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
    measured_kernels: bool = True,
) -> StepTimeProvider:
    """The team's fitted roofline, else AIConfigurator where it covers (unless
    `measured_kernels` is False), else the roofline."""
    provider, _ = _measured_kernels(stack, efficiency, measured_kernels)
    if provider is not None:
        return provider
    return roofline_provider(
        stack, decode_batch=decode_batch, context=context, efficiency=efficiency
    )


def method_record(provider: StepTimeProvider, nature: str, note: str = "") -> dict[str, str]:
    """The method fields every figure carries: provider, simulated or analytic, a label, and
    the note saying why this method (method_note)."""
    return {
        "method": provider.method,
        "nature": nature,
        "label": f"{provider.method}, {nature}",
        "engine_profile": getattr(provider, "engine", ""),
        "method_note": note,
    }


def step_time_factory(
    stack: StackInputs, efficiency: Efficiency | None = None, *, measured_kernels: bool = True
) -> StepTimeFactory:
    """The analytic estimate's view: a provider per (decode batch, mean context)."""

    def provider(decode_batch: int, context: float) -> StepTimeProvider:
        return step_time_provider(
            stack,
            decode_batch=decode_batch,
            context=context,
            efficiency=efficiency,
            measured_kernels=measured_kernels,
        )

    return provider
