"""The job spec's engine section, from a candidate, the catalog and the plan's run mode.

A measured plan sends the adapter of the stack's own engine (runner/stackselect_runner/engines/,
registered under the catalog's engine slug), never the simulator: dispatch then routes the job
only to runners whose probe reports that engine. The runner launches it on the checkpoint its
own model store maps `model_key` (the catalog model slug) to, so no path of this host reaches
another machine. A simulated plan (a dry run) sends every job to
the simulated engine. The simulated engine times its tokens with the estimator's StepCost
for the candidate's model, accelerator, precision and parallel layout (a wire contract with
runner/stackselect_runner/simengine). The cost is frozen for a typical decode batch at the
workload's mean context. With dp > 1 the engine still serves one replica, so its capacity is
one replica's. A plan's speculative decoding goes to a measured job as
`engine.options.speculative` {method, draft_model, num_tokens}, the shape the runner's
StackSettings parses (stackselect_domain.speculative); the simulator does not model it. The
runner launches the draft model from its own store too (the entry declared a draft of the job's
model), and for llama.cpp the job names the frontend that speculates with its method
(`engine.options.frontend`), so routing finds a runner that has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from stackselect_domain.speculative import Speculative, speculative_frontend

from apps.benchmarks.choices import RunMode
from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections.catalog_adapter import accelerator_spec, model_arch, scheduler_budgets
from apps.selections.estimator import LAYOUT_DEGREES, ModelArch, Parallelism, build_step_cost

SIMULATED_ADAPTER = "simulated"
# Our assumption for the MoE expert reads frozen into the step cost: a moderately loaded engine.
TYPICAL_DECODE_BATCH = 16


def custom_model_arch(custom: Mapping[str, Any]) -> ModelArch:
    """A selection's custom architecture, given with the estimator's field names."""
    names = {item.name for item in fields(ModelArch)}
    try:
        return ModelArch(**{key: value for key, value in custom.items() if key in names})
    except TypeError as error:
        raise ValueError(f"custom_model: {error}") from error


def model_identity(model: ModelSpec | None, custom: Mapping[str, Any] | None) -> dict[str, Any]:
    """Checkpoint and tokenizer of the plan's model (the tokenizer is the checkpoint's own)."""
    if model is not None:
        checkpoint = model.checkpoint or model.slug
        return {
            "slug": model.slug,
            "name": model.name,
            "checkpoint": checkpoint,
            "tokenizer": checkpoint,
        }
    custom = dict(custom or {})
    name = str(custom.get("name") or "custom model")
    checkpoint = str(custom.get("checkpoint") or name)
    return {
        "slug": None,
        "name": name,
        "checkpoint": checkpoint,
        "tokenizer": str(custom.get("tokenizer") or checkpoint),
    }


def simulated_engine(
    *,
    stack: Mapping[str, Any],
    arch: ModelArch,
    accelerator: Accelerator,
    release: EngineRelease,
    served_model_name: str,
    kv_dtype: str | None,
    mean_context: float,
) -> dict[str, Any]:
    """Adapter, model and options (step cost and scheduler budgets) for the simulated engine."""
    cost = build_step_cost(
        model=arch,
        accel=accelerator_spec(accelerator),
        precision=str(stack["precision"]),
        kv_dtype=kv_dtype,
        parallelism=Parallelism.of_stack(stack),
        decode_batch=TYPICAL_DECODE_BATCH,
        context=max(mean_context, 1.0),
    )
    budgets = scheduler_budgets(release, accelerator)
    return {
        "adapter": SIMULATED_ADAPTER,
        "model": served_model_name,
        "served_model_name": served_model_name,
        "options": {
            "step_cost": cost.as_dict(),
            "max_num_seqs": budgets.max_num_seqs,
            "max_num_batched_tokens": budgets.max_num_batched_tokens,
            "time_scale": 1.0,
        },
    }


def real_engine(
    *,
    stack: Mapping[str, Any],
    served_model_name: str,
    model_key: str,
    kv_dtype: str | None,
    speculative: Speculative | None = None,
) -> dict[str, Any]:
    """The stack's own engine adapter with the stack's settings (runner engines/stack.py words).
    The layout is read as the estimate read it: a missing or empty degree is 1."""
    engine = str(stack.get("engine") or "")
    if not engine:
        raise ValueError("the stack names no engine")
    layout = Parallelism.of_stack(stack)
    options: dict[str, Any] = {
        "precision": str(stack["precision"]),
        "kv_dtype": kv_dtype,
        **{key: getattr(layout, key) for key in LAYOUT_DEGREES},
    }
    if speculative is not None:
        options["speculative"] = speculative.as_dict()
        frontend = speculative_frontend(engine, speculative.method)
        if frontend:
            options["frontend"] = frontend
    return {
        "adapter": engine,
        "model": served_model_name,
        "model_key": model_key,
        "served_model_name": served_model_name,
        "options": options,
    }


def job_engine(
    *,
    run_mode: str,
    stack: Mapping[str, Any],
    served_model_name: str,
    model_key: str,
    speculative: Speculative | None = None,
    **simulated: Any,
) -> dict:
    """The simulated engine for a dry run, else the stack's own engine: never a fallback.
    A dry run never speculates: PlanOptions refuses speculative decoding with it."""
    if run_mode == RunMode.SIMULATED:
        return simulated_engine(stack=stack, served_model_name=served_model_name, **simulated)
    return real_engine(
        stack=stack,
        served_model_name=served_model_name,
        model_key=model_key,
        kv_dtype=simulated["kv_dtype"],
        speculative=speculative,
    )


def model_store_key(model: Mapping[str, Any]) -> str:
    """What a runner's model store is keyed by: the catalog slug, or a custom model's checkpoint."""
    return str(model.get("slug") or model["checkpoint"])


def arch_for(model: ModelSpec | None, custom: Mapping[str, Any] | None) -> ModelArch:
    if model is not None:
        return model_arch(model)
    if not custom:
        raise ValueError("model: the selection names no model")
    return custom_model_arch(custom)
