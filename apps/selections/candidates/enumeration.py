"""Enumerate stacks: release x backend x accelerator x GPU count x parallelism x precision."""

from __future__ import annotations

from collections.abc import Iterator

from apps.catalog.models import Accelerator, EngineRelease, KernelBackend
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Stack
from apps.selections.catalog_adapter import CatalogSnapshot
from apps.selections.estimator import ModelArch, Parallelism


def powers_of_two(limit: int) -> list[int]:
    values, value = [], 1
    while value <= limit:
        values.append(value)
        value *= 2
    return values


def tp_suits(model: ModelArch, tp: int) -> bool:
    """TP must split the attention heads evenly, and the KV heads either split evenly or
    replicate a whole number of times (tp a multiple of kv_heads); MLA has one shared latent."""
    if model.attention_heads % tp:
        return False
    if model.attention_kind == "mla":
        return True
    return model.kv_heads % tp == 0 or tp % model.kv_heads == 0


def layouts(model: ModelArch, max_gpus: int) -> list[Parallelism]:
    """Every power-of-two TP x PP x DP split of 1..max_gpus GPUs that can shard the model.

    Expert parallelism is offered only for MoE models, spanning all tp * dp GPUs of a stage
    (vLLM's --enable-expert-parallel), and only when it divides the routed experts.
    """
    found = []
    for gpus in powers_of_two(max_gpus):
        for tp in powers_of_two(gpus):
            for pp in powers_of_two(gpus // tp):
                dp = gpus // (tp * pp)
                if not tp_suits(model, tp) or pp > model.layers:
                    continue
                found.append(Parallelism(tp=tp, pp=pp, dp=dp))
                ep = tp * dp
                if model.is_moe and ep > 1 and model.experts_total % ep == 0:
                    found.append(Parallelism(tp=tp, pp=pp, ep=ep, dp=dp))
    return found


def backends_for(release: EngineRelease, accelerator: Accelerator) -> list[KernelBackend | None]:
    """The release's backends that serve this vendor; [None] (the engine's own path) if none."""
    matching = [
        row.backend for row in release.backends.all() if accelerator.vendor in (row.vendors or [])
    ]
    return matching or [None]


def serving_stacks(snapshot: CatalogSnapshot, goal: Goal) -> Iterator[Stack]:
    """Stacks of serving engines on the allowed accelerators, in a stable order."""
    model_layouts = layouts(goal.arch, goal.max_gpus)
    for release in snapshot.serving_releases():
        for accelerator in snapshot.accelerators:
            for backend in backends_for(release, accelerator):
                for layout in model_layouts:
                    for precision in goal.precisions:
                        yield Stack(release, backend, accelerator, layout, precision)


def non_serving_stacks(snapshot: CatalogSnapshot, goal: Goal) -> Iterator[Stack]:
    """Orchestrators, KV runtimes and kernel libraries, once per accelerator on one GPU: they are
    layers around an engine, not serving stacks, and are listed so the drop is explained."""
    serving = set(map(id, snapshot.serving_releases()))
    for release in snapshot.releases:
        if id(release) in serving:
            continue
        for accelerator in snapshot.accelerators:
            yield Stack(release, None, accelerator, Parallelism(), goal.precisions[0])
