"""Hints for kept stacks, each with the workload facts that trigger it (docs/domain.md sections
3 and 4)."""

from __future__ import annotations

from apps.catalog.choices import Maturity, ProjectStatus
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import PREFIX_REUSE_KINDS, hardware_feature

# Thresholds of our own choosing (docs/domain.md section 3 names the conditions, not numbers):
# a prompt this long makes prefill interfere with decode, an output this long keeps decode
# pools busy, and a
# percentile this high makes the tail SLO the binding one.
LONG_PROMPT_TOKENS = 2048
LONG_OUTPUT_TOKENS = 256
TAIL_PERCENTILE = 90.0
PREFIX_HEAVY_SHARE = 0.3


def _disaggregation(goal: Goal, verdict: Verdict, judge: Judge) -> Reason | None:
    """P/D pays only with long prompts, long outputs and TTFT and TPOT tail targets that
    conflict: one prompt's prefill takes longer than the TPOT target, so every prefill that
    shares a step with decodes pushes their token time over it."""
    slo = goal.slo
    if goal.isl < LONG_PROMPT_TOKENS or goal.osl < LONG_OUTPUT_TOKENS:
        return None
    if slo.ttft_ms is None or slo.tpot_ms is None or slo.percentile < TAIL_PERCENTILE:
        return None
    prefill_ms = (verdict.estimate or {}).get("latency", {}).get("prefill_ms")
    if prefill_ms is None or prefill_ms <= slo.tpot_ms:
        return None
    stack = verdict.stack
    cell = judge.snapshot.cell(stack.release, "pd_disaggregation", accelerator=stack.accelerator)
    maturity = cell.maturity if cell else "not recorded"
    return Reason(
        "pd_disaggregation",
        f"Prompts average {goal.isl} tokens and outputs {goal.osl}; one prefill takes about "
        f"{prefill_ms:.0f} ms, above the p{slo.percentile:g} TPOT target of {slo.tpot_ms:g} ms, "
        "so separate prefill and decode pools are worth an experiment. "
        f"P/D disaggregation in {stack.release.engine.name}: {maturity}.",
    )


def _prefix_reuse(goal: Goal, stack: Stack) -> Reason | None:
    workload = goal.workload
    if workload.prefix_share < PREFIX_HEAVY_SHARE or workload.prefix_tokens < 1:
        return None
    release, share = stack.release, f"{workload.prefix_share:.0%}"
    if release.prefix_cache_kind in PREFIX_REUSE_KINDS:
        kind = release.get_prefix_cache_kind_display()
        message = (
            f"{share} of requests share a {workload.prefix_tokens}-token prefix; "
            f"{release.engine.name} reuses cached prefixes ({kind}), which cuts their prefill."
        )
        if goal.model.attention_kind == "sliding":
            message += (
                f" {goal.model.name} uses sliding-window attention, so reuse across the window "
                "boundary gains little."
            )
        return Reason("prefix_reuse", message)
    return Reason(
        "no_prefix_reuse",
        f"{share} of requests share a {workload.prefix_tokens}-token prefix, but the catalog "
        f"records no prefix-cache structure for {release.engine.name}: each prefill repeats it.",
    )


def _expert_parallel(goal: Goal, stack: Stack) -> Reason | None:
    if not goal.arch.is_moe:
        return None
    experts = f"{goal.arch.experts_active} of {goal.arch.experts_total} experts"
    if stack.layout.ep > 1:
        return Reason(
            "expert_parallel",
            f"{goal.model.name} routes each token to {experts}; this stack spreads the experts "
            f"over {stack.layout.ep} GPUs, so check the all-to-all backend and load balance.",
        )
    if stack.gpu_count > 1:
        return Reason(
            "consider_expert_parallel",
            f"{goal.model.name} is a mixture of experts ({experts} per token); the same GPUs "
            "with expert parallelism keep whole experts per GPU instead of slicing each one.",
        )
    return None


def _project_status(stack: Stack) -> Reason | None:
    engine = stack.release.engine
    if engine.status == ProjectStatus.ACTIVE:
        return None
    source = f" ({engine.status_source})" if engine.status_source else ""
    return Reason(
        "project_status",
        f"{engine.name} is in {engine.get_status_display().lower()}{source}: expect few fixes "
        "and plan for a migration.",
    )


def _unlabelled(verdict: Verdict, judge: Judge) -> Reason | None:
    stack = verdict.stack
    backend_id = stack.backend.pk if stack.backend else None
    unknown = [
        key
        for key in (hardware_feature(stack.accelerator), judge.goal.model.architecture)
        if (
            cell := judge.snapshot.cell(
                stack.release, key, backend_id=backend_id, accelerator=stack.accelerator
            )
        )
        and cell.maturity == Maturity.UNKNOWN
    ]
    if not unknown:
        return None
    return Reason(
        "unlabelled_support",
        f"{stack.release.engine.name} lists {', '.join(unknown)} without a maturity label: "
        "verify it with a functional check first.",
    )


def hints_for(goal: Goal, verdict: Verdict, judge: Judge) -> list[Reason]:
    stack = verdict.stack
    found = (
        _disaggregation(goal, verdict, judge),
        _prefix_reuse(goal, stack),
        _expert_parallel(goal, stack),
        _project_status(stack),
        _unlabelled(verdict, judge),
    )
    return [hint for hint in found if hint is not None]
