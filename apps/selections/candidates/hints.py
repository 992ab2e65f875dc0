"""Hints for kept stacks, each with the workload facts that trigger it (docs/domain.md sections
3 and 4)."""

from __future__ import annotations

from stackselect_domain.words import grouped

from apps.catalog.choices import Maturity, PrefixCacheKind, ProjectStatus, UnchunkedLimit
from apps.selections.candidates.capacity import kv_capacity_hint
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import hardware_feature, scheduler_budgets
from apps.selections.operating_point import in_flight

# Thresholds of our own choosing (docs/domain.md section 3 names the conditions, not numbers):
# a prompt this long makes prefill interfere with decode, an output this long keeps decode pools
# busy, a percentile this high makes the tail SLO the binding one, and below this share of time
# spent prefilling, prefills rarely land on a decode step at all.
LONG_PROMPT_TOKENS = 2048
LONG_OUTPUT_TOKENS = 256
TAIL_PERCENTILE = 90.0
LOW_PREFILL_DUTY = 0.1
PREFIX_HEAVY_SHARE = 0.3
# TPOT "binds" when the operating point spends at least this share of its TPOT budget and more
# of it than of its TTFT budget.
TPOT_BINDING_SHARE = 0.7


def hint_features(goal: Goal) -> tuple[str, ...]:
    """Capability features the hints read for this goal beyond the filters' cells, so stacks
    whose backends differ in them are not collapsed into one candidate."""
    workload = goal.workload
    prefix_heavy = workload.prefix_share >= PREFIX_HEAVY_SHARE and workload.prefix_tokens >= 1
    return ("prefix_caching",) if prefix_heavy else ()


def _latency(verdict: Verdict) -> dict:
    return (verdict.estimate or {}).get("latency") or {}


def _maturity(judge: Judge, stack: Stack, feature: str) -> str:
    cell = judge.snapshot.cell(
        stack.release,
        feature,
        backend_id=stack.backend.pk if stack.backend else None,
        accelerator=stack.accelerator,
    )
    return cell.maturity if cell else "not recorded"


def _method(latency: dict) -> str:
    """The method of the latency a hint quotes, in brackets, as every figure carries one."""
    return f"({latency.get('label') or 'method not recorded'})"


def _prefill_duty(goal: Goal, stack: Stack, prefill_ms: float) -> float | None:
    """Share of a replica's time spent prefilling at the goal's peak rate (open loop only)."""
    if goal.target_rate_rps is None:
        return None
    per_replica = goal.target_rate_rps * goal.peak_factor / stack.layout.dp
    return per_replica * prefill_ms / 1e3


def _disaggregation(goal: Goal, verdict: Verdict, judge: Judge) -> Reason | None:
    """P/D pays only with long prompts, long outputs, enough load that prefills keep landing on
    decode steps, and TTFT and TPOT tail targets that conflict (one prefill takes longer than
    the TPOT target). It needs separate GPUs for each pool, so one GPU never gets the hint."""
    stack, slo, latency = verdict.stack, goal.slo, _latency(verdict)
    prefill_ms = latency.get("prefill_ms")
    if stack.gpu_count < 2 or prefill_ms is None:
        return None
    duty = _prefill_duty(goal, stack, prefill_ms)
    lengths = f"{grouped(goal.isl)}-token prompts and {grouped(goal.osl)}-token outputs on average"
    method = _method(latency)
    load = (
        f"at {goal.target_rate_rps * goal.peak_factor:g} req/s prefills of {prefill_ms:.0f} ms "
        f"{method} take {duty:.0%} of one replica's time"
        if duty is not None
        else f"one prefill takes about {prefill_ms:.0f} ms {method}"
    )
    short = goal.isl < LONG_PROMPT_TOKENS or goal.osl < LONG_OUTPUT_TOKENS
    quiet = duty is not None and duty < LOW_PREFILL_DUTY
    no_conflict = slo.tpot_ms is not None and prefill_ms <= slo.tpot_ms
    if short or quiet or no_conflict:
        why = []
        if short:
            why.append(f"{lengths} (it pays from about {LONG_PROMPT_TOKENS}/{LONG_OUTPUT_TOKENS})")
        why.append(load)
        if no_conflict:
            why.append(f"that prefill fits inside the {slo.tpot_ms:g} ms TPOT target")
        return Reason(
            "pd_will_not_pay",
            f"P/D disaggregation will not pay on these {stack.gpu_count} GPUs: "
            + "; ".join(why)
            + ". Keep prefill and decode together and let chunked prefill interleave them.",
        )
    if slo.ttft_ms is None or slo.tpot_ms is None or slo.percentile < TAIL_PERCENTILE:
        return None
    maturity = _maturity(judge, stack, "pd_disaggregation")
    return Reason(
        "pd_disaggregation",
        f"With {lengths}, {load}; that prefill is longer than the p{slo.percentile:g} TPOT "
        f"target of {slo.tpot_ms:g} ms (TTFT target {slo.ttft_ms:g} ms), so every prefill that "
        f"shares a step with decodes pushes their token time over it. Separate prefill and "
        f"decode pools over these {stack.gpu_count} GPUs are worth an experiment. "
        f"P/D disaggregation in {stack.release.engine.name}: {maturity}.",
    )


def _prefix_reuse(goal: Goal, stack: Stack, judge: Judge) -> Reason | None:
    """What each engine really does with a shared prefix: vLLM hashes whole KV blocks, SGLang
    and TensorRT-LLM match a radix tree, llama.cpp reuses one slot's last prompt, LMDeploy only
    when switched on; TGI only on its flashinfer backend."""
    workload = goal.workload
    if workload.prefix_share < PREFIX_HEAVY_SHARE or workload.prefix_tokens < 1:
        return None
    release, engine = stack.release, stack.release.engine.name
    tokens = workload.prefix_tokens
    shared = f"{workload.prefix_share:.0%} of requests share a {grouped(tokens)}-token prefix"
    window = ""
    if goal.model.attention_kind == "sliding" and goal.model.sliding_window:
        window = (
            f" {goal.model.name} slides a {goal.model.sliding_window}-token window on some "
            "layers, so only its full-attention layers keep the reused prefix."
        )
    if judge.snapshot.cells.get((release.pk, "prefix_caching")) and (
        _maturity(judge, stack, "prefix_caching") == "not recorded"
    ):
        return Reason(
            "no_prefix_reuse",
            f"{shared}, but {engine} reuses prefixes only with another kernel backend, not "
            f"{stack.backend.name if stack.backend else 'its default path'}: each prefill "
            "repeats it.",
        )
    kind = release.prefix_cache_kind
    if release.prefix_cache_default_on is False:
        return Reason(
            "prefix_reuse_opt_in",
            f"{shared}; {engine} can reuse it, but prefix caching is off by default "
            "(enable_prefix_caching=False): start it with --enable-prefix-caching, or every "
            f"prefill repeats those {grouped(tokens)} tokens.{window}",
        )
    if kind == PrefixCacheKind.HASH_BLOCKS:
        block = release.kv_block_size or 16
        reused = tokens // block * block
        message = (
            f"{shared}; {engine} keys KV blocks of {block} tokens by a chained hash (on by "
            f"default) and reuses whole blocks only, so about {grouped(reused)} of the "
            f"{grouped(tokens)} tokens skip prefill."
        )
    elif kind == PrefixCacheKind.RADIX_TREE:
        message = (
            f"{shared}; {engine} finds it in a radix tree of cached prefixes (on by default) "
            f"and skips prefill for the matched {grouped(tokens)} tokens while they stay cached."
        )
    elif kind == PrefixCacheKind.PER_SLOT:
        message = (
            f"{shared}; {engine} keeps each slot's last prompt (--cache-prompt, on by default) "
            "and reuses its longest common prefix, so a request gains only when it lands on a "
            "slot that already holds that prefix."
        )
    else:
        return Reason(
            "no_prefix_reuse",
            f"{shared}, but the catalog records no prefix-cache behaviour for {engine}: assume "
            f"each prefill repeats those {grouped(tokens)} tokens until measured.",
        )
    return Reason("prefix_reuse", message + window)


def _speculative(goal: Goal, verdict: Verdict, judge: Judge) -> Reason | None:
    """Speculative decoding helps when token time, not time to first token, is the target
    that limits the stack at its operating point."""
    latency, slo = _latency(verdict), goal.slo
    if not latency or slo.tpot_ms is None:
        return None
    tpot_share = latency["tpot_ms"] / slo.tpot_ms
    ttft_share = latency["ttft_ms"] / slo.ttft_ms if slo.ttft_ms else 0.0
    if tpot_share < TPOT_BINDING_SHARE or tpot_share < ttft_share:
        return None
    stack = verdict.stack
    return Reason(
        "speculative_decoding",
        f"TPOT binds: at {in_flight(latency['concurrency'], stack.layout.dp)} the estimate is "
        f"{latency['tpot_ms']:.1f} ms per token {_method(latency)}, {tpot_share:.0%} of the "
        f"{slo.tpot_ms:g} ms target, while TTFT uses {ttft_share:.0%} of its budget. "
        f"Speculative decoding ({_maturity(judge, stack, 'speculative_decoding')} in "
        f"{stack.release.engine.name}) verifies several drafted tokens per step; the gain "
        "depends on how many drafts your traffic accepts, and at low acceptance or large "
        "batches it can cost more than it saves, so measure it on real prompts.",
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


def _refused_unchunked(stack: Stack, judge: Judge) -> Reason | None:
    """An engine that does not chunk prompts by default refuses a request longer than its token
    budget (the prompt alone, or the prompt and output, by its rule): say how many of the
    goal's requests that is, and what to change."""
    release = stack.release
    if release.chunked_prefill_default is not False:
        return None
    budget = scheduler_budgets(release, stack.accelerator).max_num_batched_tokens
    prompts, outputs = judge.sampled_lengths()
    prompt_only = release.unchunked_limit == UnchunkedLimit.PROMPT
    share = float(((prompts if prompt_only else prompts + outputs) > budget).mean())
    if share == 0:
        return None
    counted = "prompts" if prompt_only else "prompts with their outputs"
    over = "prompt exceeds" if prompt_only else "prompt and output together exceed"
    return Reason(
        "refused_unchunked",
        f"{release} does not chunk prompts by default and refuses a request whose {over} its "
        f"{grouped(budget)}-token step budget on the {stack.accelerator.name}: {share:.1%} of the "
        f"goal's {counted} do (of {grouped(len(prompts))} drawn from its workload). Enable chunked "
        "prefill or raise the budget before benchmarking it; the simulated figures count those "
        "requests as refused.",
    )


def hints_for(goal: Goal, verdict: Verdict, judge: Judge) -> list[Reason]:
    stack = verdict.stack
    found = (
        kv_capacity_hint(verdict, judge),
        _refused_unchunked(stack, judge),
        _disaggregation(goal, verdict, judge),
        _prefix_reuse(goal, stack, judge),
        _speculative(goal, verdict, judge),
        _expert_parallel(goal, stack),
        _project_status(stack),
        _unlabelled(verdict, judge),
    )
    return [hint for hint in found if hint is not None]
