"""Stack composition: an orchestrator or KV layer on top of a kept engine stack, where the goal
needs what the layer provides and the catalog records the pair as working.

A layer release lists the engines it runs on (EngineRelease.serves_engines, sourced); what it
provides is its own capability cell for the need (P/D disaggregation, KV offload, prefix-aware
routing across replicas, autoscaling). The composed candidate sits right after the stack it
builds on, so the list compares the two, each with its reason; its figures are the base
stack's, since the estimator does not model the layer.
"""

from __future__ import annotations

from dataclasses import replace

from apps.catalog.choices import EngineKind, Maturity
from apps.catalog.models import EngineRelease
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.stack import Reason, Verdict
from apps.selections.catalog_adapter import hardware_feature

LAYER_KINDS = (EngineKind.ORCHESTRATOR, EngineKind.KV_RUNTIME)
PREFIX_ROUTING_SHARE = 0.3
_REFUSING = (Maturity.UNSUPPORTED, Maturity.DEPRECATED)
_NEED_NAMES = {
    "pd_disaggregation": "P/D disaggregation",
    "kv_offload": "KV offload and tiering",
    "kv_aware_routing": "prefix-aware routing across replicas",
    "autoscaling": "autoscaling",
}


def goal_needs(verdict: Verdict, judge: Judge) -> dict[str, str]:
    """{feature: why this stack needs it}, from the goal's requirements and the hints."""
    goal, stack = judge.goal, verdict.stack
    hints = {hint.code for hint in verdict.hints}
    required = {feature for feature, _ in goal.required_features}
    needs: dict[str, str] = {}
    for feature in required & set(_NEED_NAMES):
        needs[feature] = "the goal requires it"
    if "pd_disaggregation" in hints:
        needs.setdefault("pd_disaggregation", "long prompts and outputs with conflicting tails")
    if "kv_capacity_short" in hints:
        needs.setdefault("kv_offload", "the KV cache holds fewer sequences than the load")
    if goal.workload.prefix_share >= PREFIX_ROUTING_SHARE and stack.layout.dp > 1:
        share = f"{goal.workload.prefix_share:.0%}"
        needs.setdefault(
            "kv_aware_routing",
            f"{share} of requests share a prefix over {stack.layout.dp} replicas",
        )
    if goal.peak_factor > 1:
        needs.setdefault("autoscaling", f"the peak is {goal.peak_factor:g}x the mean rate")
    return needs


def _layers(judge: Judge) -> list[EngineRelease]:
    return [r for r in judge.snapshot.releases if r.engine.kind in LAYER_KINDS]


def _composed(base: Verdict, layer: EngineRelease, needs: dict[str, str], judge: Judge):
    stack = base.stack
    if stack.release.engine.slug not in (layer.serves_engines or []):
        return None
    hardware = judge.snapshot.cell(layer, hardware_feature(stack.accelerator))
    if hardware is not None and hardware.maturity in _REFUSING:
        return None
    provided = []
    for feature, why in needs.items():
        cell = judge.snapshot.cell(layer, feature, accelerator=stack.accelerator)
        if cell is not None and cell.maturity not in _REFUSING:
            provided.append((feature, why, cell))
    if not provided:
        return None
    what = "; ".join(
        f"{_NEED_NAMES[feature]} ({cell.maturity}) because {why}" for feature, why, cell in provided
    )
    reach = "" if hardware is not None else " Its hardware reach is not recorded."
    hint = Reason(
        "layer_composed",
        f"{layer.engine.name} {layer.version} on {stack.release.engine.name} adds {what}. "
        f"It runs on {', '.join(layer.serves_engines)} ({layer.serves_source}).{reach} The "
        "figures are those of the stack below: the estimate does not model the layer.",
    )
    return replace(
        base,
        stack=stack.with_layers((layer,)),
        hints=[*base.hints, hint],
        capability_ids=[*base.capability_ids, *(cell.id for _, _, cell in provided)],
        # the layer row repeats the figures of the stack below, so it ties with the row above
        estimate={**(base.estimate or {}), "tied_with_above": True},
    )


def compose(kept: list[Verdict], judge: Judge) -> list[Verdict]:
    """The kept list with each layered candidate right after the stack it builds on, ranks
    renumbered so that a base stack wins its tie with the same stack plus a layer."""
    layers = _layers(judge)
    out: list[Verdict] = []
    for verdict in kept:
        out.append(verdict)
        needs = goal_needs(verdict, judge)
        if not needs:
            continue
        for layer in layers:
            composed = _composed(verdict, layer, needs, judge)
            if composed is not None:
                out.append(composed)
    for position, verdict in enumerate(out, start=1):
        verdict.rank = position
    return out
