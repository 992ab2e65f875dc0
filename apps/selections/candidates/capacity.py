"""KV capacity against concurrency, by each engine's own memory rule.

A release records its default memory fraction and what it is a share of (EngineRelease
memory_fraction / memory_fraction_basis, sourced in fixtures/catalog/engines.json). A stack whose
KV cache holds fewer sequences of the workload's context than the load keeps in flight (by the
stack's own predicted time in the system) is flagged with both numbers, and the cheaper fixes
(an FP8 KV cache, a wider tensor-parallel layout, more replicas) are priced with the same
estimator.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stackselect_domain.slo import request_ms, requests_in_flight
from stackselect_domain.words import grouped

from apps.catalog.choices import Maturity, MemoryBasis
from apps.catalog.models import EngineRelease
from apps.selections.candidates.enumeration import powers_of_two, tp_suits
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Reason, Stack, Verdict
from apps.selections.catalog_adapter import engine_config
from apps.selections.estimator import MemoryEstimate, Parallelism
from apps.selections.operating_point import in_flight
from apps.selections.steady_state import sequences_held, shared_prefix_tokens

if TYPE_CHECKING:  # the Judge imports this module
    from apps.selections.candidates.filters import Judge

# The share assumed where a release records none (llama.cpp, Ollama, TGI, SGLang's run-time
# value): vLLM's long-standing 0.9 of device memory. Said so in every estimate that uses it.
FALLBACK_FRACTION = 0.9
KV_CAPACITY_SHORT = "kv_capacity_short"
FP8_KV = "fp8"
# Tensor parallelism is suggested up to one scale-up node of eight GPUs.
NODE_GPUS = 8
_REFUSING = (Maturity.UNSUPPORTED, Maturity.DEPRECATED)


@dataclass(frozen=True)
class MemoryRule:
    fraction: float
    basis: str
    recorded: bool

    def describe(self) -> str:
        if not self.recorded:
            return f"{self.fraction:g} of device memory (assumed: the release records no default)"
        return f"{self.fraction:g}: {MemoryBasis(self.basis).label}"


def memory_rule(release: EngineRelease) -> MemoryRule:
    if release.memory_fraction and release.memory_fraction_basis:
        return MemoryRule(release.memory_fraction, release.memory_fraction_basis, True)
    return MemoryRule(FALLBACK_FRACTION, MemoryBasis.TOTAL, False)


def needed_sequences(
    goal: Goal, latency: Mapping[str, Any] | None, *, replicas: int
) -> tuple[int, str] | None:
    """Sequences the load keeps in flight, and how that number was reached.

    A closed-loop goal states it. An open-loop goal holds rate x peak x time in the system
    (Little's law). The time is the stack's own predicted one (`latency`, its analytic TTFT plus
    TPOT for every further token at its operating point, one of the `replicas`' requests in
    flight) where it has one: what the SLO allows a request is only a bound, and a generous
    end-to-end target (minutes, for long outputs) would ask for many times the replicas the
    stack needs. Without a prediction it is that bound. A time predicted at another load than
    the count it gives bounds that count from one side, and the words say which.
    """
    if goal.concurrency:
        return goal.concurrency, f"{goal.concurrency} concurrent clients"
    rate = goal.target_rate_rps
    if rate is None:
        return None
    load = rate * goal.peak_factor
    if latency:
        seconds = request_ms(latency["ttft_ms"], latency["tpot_ms"], goal.osl) / 1e3
        needed = requests_in_flight(load, seconds)
        point = in_flight(latency["concurrency"], replicas)
        bound = _bound(needed, latency["concurrency"] * replicas)
        return needed, (
            f"{load:g} req/s x {seconds:.3g} s predicted per request ({latency['label']}, "
            f"at {point}){bound}"
        )
    allowed = _allowed_seconds(goal)
    if allowed is None:
        return None
    return (
        requests_in_flight(load, allowed),
        f"{load:g} req/s x {allowed:.3g} s allowed per request by the SLO",
    )


def _bound(needed: int, predicted_at: int) -> str:
    """A request's time grows with the requests in flight beside it, so a count from a time
    predicted at another load bounds the load's own count from one side."""
    if needed > predicted_at:
        return "; more are in flight than that and each takes longer, so at least this many"
    if needed < predicted_at:
        return "; fewer are in flight than that and each takes less, so at most this many"
    return ""


def _allowed_seconds(goal: Goal) -> float | None:
    """The longest time in the system the SLO allows a request: its end-to-end target, or TTFT
    plus TPOT for every further token."""
    slo = goal.slo
    if slo.e2e_ms is not None:
        return slo.e2e_ms / 1e3
    if slo.ttft_ms is not None and slo.tpot_ms is not None:
        return request_ms(slo.ttft_ms, slo.tpot_ms, goal.osl) / 1e3
    return None


def held_sequences(goal: Goal, stack: Stack, memory: MemoryEstimate) -> int:
    """Sequences one replica's KV cache holds: the memory estimate's, or, where the engine
    caches the goal's shared prefix, as many as fit with each prefix held once per group (the
    simulator's rule)."""
    if goal.workload.prefix_share <= 0 or not memory.fits:
        return memory.max_concurrent_sequences
    config = engine_config(
        stack.release, stack.accelerator, kv_capacity_tokens=memory.kv_capacity_tokens
    )
    if shared_prefix_tokens(goal.workload, config):
        return sequences_held(goal.workload, config)
    return memory.max_concurrent_sequences


def _fits(memory: MemoryEstimate | Reason) -> MemoryEstimate | None:
    return memory if isinstance(memory, MemoryEstimate) and memory.fits else None


def _suggestions(verdict: Verdict, judge: Judge, needed: int) -> list[str]:
    stack, goal = verdict.stack, judge.goal
    layout, found = stack.layout, []
    if goal.kv_is_sixteen_bit:
        cell = judge.snapshot.cell(
            stack.release,
            "kv_fp8",
            backend_id=stack.backend.pk if stack.backend else None,
            accelerator=stack.accelerator,
        )
        fp8 = _fits(
            judge.memory(stack.release, stack.accelerator, stack.precision, layout, kv_dtype=FP8_KV)
        )
        if cell is not None and cell.maturity not in _REFUSING and fp8 is not None:
            held = held_sequences(goal, stack, fp8) * layout.dp
            enough = "enough" if held >= needed else "still short"
            found.append(
                f"an FP8 KV cache (kv_fp8 {cell.maturity} in {stack.release.engine.name}) "
                f"would hold {grouped(held)} ({enough})"
            )
    tensor = judge.snapshot.cell(stack.release, "tensor_parallel", accelerator=stack.accelerator)
    wider_tp = tensor is not None and tensor.maturity not in _REFUSING
    for tp in powers_of_two(NODE_GPUS)[layout.tp.bit_length() :] if wider_tp else []:
        wider = Parallelism(tp=tp, pp=layout.pp, ep=layout.ep, dp=layout.dp)
        if not tp_suits(goal.arch, tp):
            continue
        memory = _fits(judge.memory(stack.release, stack.accelerator, stack.precision, wider))
        held = held_sequences(goal, stack, memory) * layout.dp if memory is not None else 0
        if held >= needed:
            past = (
                f", past the goal's {goal.max_gpus}-GPU limit" if wider.gpus > goal.max_gpus else ""
            )
            found.append(f"tp{tp} ({wider.gpus} GPUs{past}) would hold {grouped(held)}")
            break
    memory = judge.memory_of(stack)
    per_replica = held_sequences(goal, stack, memory) if isinstance(memory, MemoryEstimate) else 0
    if per_replica > 0:
        # whole deployable units: an expert group holds unit_gpus / replica_gpus replicas
        per_unit = per_replica * (layout.unit_gpus // layout.replica_gpus)
        units = math.ceil(needed / per_unit)
        gpus = units * layout.unit_gpus
        what = "replicas" if layout.replicas_run_alone else "expert groups"
        found.append(
            f"{units} {what} of this layout ({gpus} GPUs) would hold {grouped(needed)}"
            + _sized_beyond(verdict.estimate or {}, gpus)
        )
    return found


def _sized_beyond(estimate: Mapping[str, Any], gpus: int) -> str:
    """Where the load needs more GPUs than memory does, say so beside the memory fix: the row
    states both counts, and the smaller one holds the sequences without serving them in time."""
    for key, what in (
        ("gpus_for_peak", "the peak rate"),
        ("gpus_for_clients", "the goal's clients"),
    ):
        sized = estimate.get(key)
        if sized and sized > gpus:
            method = estimate.get("label") or "method not recorded"
            return f", but {what} needs {sized} GPUs within the SLO ({method})"
    return ""


def kv_capacity_hint(verdict: Verdict, judge: Judge) -> Reason | None:
    """Flags a kept stack whose KV cache cannot hold the load's sequences, with both numbers."""
    latency, replicas = (verdict.estimate or {}).get("latency"), verdict.stack.layout.dp
    need = needed_sequences(judge.goal, latency, replicas=replicas)
    memory = judge.memory_of(verdict.stack)
    if need is None or not isinstance(memory, MemoryEstimate):
        return None
    needed, how = need
    layout, goal = verdict.stack.layout, judge.goal
    held = held_sequences(goal, verdict.stack, memory) * layout.dp
    if held >= needed:
        return None
    rule = memory_rule(verdict.stack.release)
    shared = (
        ", each shared prefix held once"
        if held != memory.max_concurrent_sequences * layout.dp
        else ""
    )
    message = (
        f"By the estimator's memory model (predicted, not measured), the KV cache holds "
        f"{grouped(memory.kv_capacity_tokens)} tokens per replica, so {grouped(held)} "
        f"sequences of {grouped(goal.isl + goal.osl)} tokens fit at once{shared} (memory rule "
        f"{rule.describe()}); the load keeps {grouped(needed)} in flight ({how})."
    )
    fixes = _suggestions(verdict, judge, needed)
    if fixes:
        message += " Cheaper fixes: " + "; ".join(fixes) + "."
    return Reason(KV_CAPACITY_SHORT, message)
