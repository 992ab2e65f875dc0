"""Rank kept stacks by predicted SLO goodput per GPU (or per dollar), maturity and operations.

Two passes keep it fast: the analytic estimator scores every kept stack (cached per accelerator,
precision, layout and engine, since backends share figures), then the discrete-event simulator
re-scores only the leading few with a modest request count, and draws goodput curves for the
first of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackselect_domain.slo import judge

from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Stack, Verdict
from apps.selections.catalog_adapter import accelerator_spec, engine_config, scheduler_budgets
from apps.selections.estimator import (
    Efficiency,
    LatencyEstimate,
    MemoryEstimate,
    build_step_cost,
    estimate_latency,
    largest_meeting,
)
from apps.selections.simulator import goodput_curve, max_rate_meeting_slo

SIMULATE_TOP = 5
CURVE_TOP = 3
SIM_REQUESTS = 150
SIM_SEED = 20_260_101
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)

Efficiencies = Mapping[tuple[str, str], Efficiency]


@dataclass(frozen=True)
class Throughput:
    """The estimator's view of one replica at the largest concurrency meeting the SLO."""

    concurrency: int
    latency: LatencyEstimate | None
    replica_rps: float


def _e2e_ms(latency: LatencyEstimate, osl: int) -> float:
    return latency.ttft_ms + latency.tpot_ms * max(osl - 1, 0)


class Ranker:
    def __init__(
        self,
        goal: Goal,
        judge: Judge,
        *,
        efficiencies: Efficiencies | None = None,
        simulate_top: int = SIMULATE_TOP,
        sim_requests: int = SIM_REQUESTS,
    ) -> None:
        self.goal = goal
        self.judge = judge
        self.efficiencies = efficiencies or {}
        self.simulate_top = simulate_top
        self.sim_requests = sim_requests
        self._throughput: dict[tuple, Throughput] = {}

    def efficiency(self, stack: Stack) -> Efficiency:
        key = (stack.accelerator.slug, stack.release.engine.slug)
        return self.efficiencies.get(key) or Efficiency()

    def _memory(self, stack: Stack) -> MemoryEstimate:
        memory = self.judge.memory_of(stack)
        assert isinstance(memory, MemoryEstimate), "kept stacks always have a memory estimate"
        return memory

    def _latency(self, stack: Stack, concurrency: int) -> LatencyEstimate:
        goal = self.goal
        return estimate_latency(
            model=goal.arch,
            accel=accelerator_spec(stack.accelerator),
            precision=stack.precision,
            kv_dtype=goal.kv_dtype_or_default,
            parallelism=stack.layout,
            isl=goal.isl,
            osl=goal.osl,
            concurrency=concurrency,
            efficiency=self.efficiency(stack),
        )

    def _meets_slo(self, latency: LatencyEstimate) -> bool:
        """The steady state as one typical request, judged by the domain's one SLO rule."""
        verdict = judge(
            self.goal.slo,
            ok=[True],
            ttft_ms=[latency.ttft_ms],
            tpot_ms=[latency.tpot_ms],
            e2e_ms=[_e2e_ms(latency, self.goal.osl)],
        )
        return bool(verdict.passed)

    def throughput(self, stack: Stack) -> Throughput:
        """Largest in-flight count whose estimated latencies meet the SLO, and the replica's
        request rate there by Little's law (concurrency / end-to-end time)."""
        max_seqs = scheduler_budgets(stack.release).max_num_seqs
        key = (stack.accelerator.pk, stack.precision, stack.layout, stack.release.engine.slug)
        key += (max_seqs,)
        if key not in self._throughput:
            upper = min(self._memory(stack).max_concurrent_sequences, max_seqs)
            best = largest_meeting(lambda c: self._meets_slo(self._latency(stack, c)), upper)
            latency = self._latency(stack, best) if best else None
            rps = best / (_e2e_ms(latency, self.goal.osl) / 1e3) if latency else 0.0
            self._throughput[key] = Throughput(best, latency, rps)
        return self._throughput[key]

    # ------------------------------------------------------------ passes

    def estimate(self, verdict: Verdict) -> None:
        stack = verdict.stack
        figures = self.throughput(stack)
        estimate = dict(verdict.estimate or {})
        if figures.latency is not None:
            latency = figures.latency
            estimate["latency"] = {
                "concurrency": figures.concurrency,
                "ttft_ms": round(latency.ttft_ms, 2),
                "tpot_ms": round(latency.tpot_ms, 3),
                "prefill_ms": round(latency.prefill_ms, 2),
                "bandwidth_floor_tpot_ms": round(latency.bandwidth_floor_tpot_ms, 3),
            }
        estimate["goodput_per_gpu_rps"] = self._per_gpu(stack, figures.replica_rps)
        estimate["source"] = "estimator"
        verdict.estimate = estimate

    def _per_gpu(self, stack: Stack, replica_rps: float) -> float:
        """A replica spans tp * pp GPUs; dp replicas add rate and GPUs alike."""
        return round(replica_rps / (stack.layout.tp * stack.layout.pp), 4)

    def _simulation_inputs(self, stack: Stack):
        goal = self.goal
        memory = self._memory(stack)
        step_cost = build_step_cost(
            model=goal.arch,
            accel=accelerator_spec(stack.accelerator),
            precision=stack.precision,
            kv_dtype=goal.kv_dtype_or_default,
            parallelism=stack.layout,
            efficiency=self.efficiency(stack),
            decode_batch=max(self.throughput(stack).concurrency, 1),
            context=goal.isl + goal.osl / 2,
        )
        config = engine_config(stack.release, kv_capacity_tokens=memory.kv_capacity_tokens)
        return step_cost, config

    def simulate(self, verdict: Verdict) -> dict:
        """The simulator's figures for this stack's replica: max rate meeting the SLO and the
        goodput per GPU that follows, with the tail latencies there."""
        stack, goal = verdict.stack, self.goal
        step_cost, config = self._simulation_inputs(stack)
        search = max_rate_meeting_slo(
            goal.workload,
            n=self.sim_requests,
            seed=SIM_SEED,
            step_cost=step_cost,
            config=config,
            slo=goal.slo,
            tolerance=0.05,
        )
        figures = {
            "source": "simulator",
            "replica_max_rate_rps": round(search.rate_rps, 4),
            "goodput_per_gpu_rps": self._per_gpu(stack, search.rate_rps),
        }
        summary = search.summary
        if summary is not None and summary.ttft_ms is not None and summary.tpot_ms is not None:
            figures["simulated_ttft_p99_ms"] = round(summary.ttft_ms.p99, 2)
            figures["simulated_tpot_p99_ms"] = round(summary.tpot_ms.p99, 3)
        return figures

    def curve(self, verdict: Verdict) -> None:
        """Goodput of the whole stack (all dp replicas) at fractions of its max rate."""
        stack, goal = verdict.stack, self.goal
        replica_rate = verdict.estimate.get("replica_max_rate_rps") or 0.0
        if replica_rate <= 0:
            return
        step_cost, config = self._simulation_inputs(stack)
        points = goodput_curve(
            goal.workload,
            [replica_rate * fraction for fraction in CURVE_FRACTIONS],
            n=self.sim_requests,
            seed=SIM_SEED,
            step_cost=step_cost,
            config=config,
            slo=goal.slo,
        )
        dp = stack.layout.dp
        verdict.estimate["curve"] = [
            {
                "rate_rps": round(point.rate_rps * dp, 4),
                "goodput_rps": round((point.summary.goodput_rps or 0.0) * dp, 4),
                "attainment": round(point.summary.attainment or 0.0, 4),
            }
            for point in points
        ]

    # ------------------------------------------------------------ score

    def _size_for_target(self, verdict: Verdict) -> None:
        """GPUs this stack needs for the target rate at its peak, in whole replicas."""
        goal, per_gpu = self.goal, verdict.estimate["goodput_per_gpu_rps"]
        if goal.target_rate_rps is None or per_gpu <= 0:
            verdict.estimate.pop("gpus_for_peak", None)
            return
        layout = verdict.stack.layout
        replica_gpus = layout.tp * layout.pp
        replicas = math.ceil(goal.target_rate_rps * goal.peak_factor / (per_gpu * replica_gpus))
        verdict.estimate["gpus_for_peak"] = replicas * replica_gpus

    def _priced(self, kept: Sequence[Verdict]) -> bool:
        return bool(kept) and all(v.stack.accelerator.slug in self.goal.prices for v in kept)

    def score(self, verdict: Verdict, *, per_dollar: bool) -> float:
        """Goodput per GPU (or requests per dollar) scaled down by up to a quarter each for
        immature capability cells and for unmet operational needs."""
        goodput = verdict.estimate["goodput_per_gpu_rps"]
        if per_dollar:
            price = self.goal.prices[verdict.stack.accelerator.slug]
            goodput = goodput * 3600 / price
            verdict.estimate["requests_per_dollar"] = round(goodput, 2)
        self._size_for_target(verdict)
        fit = 0.5 + 0.25 * verdict.maturity + 0.25 * verdict.operational_fit
        return round(goodput * fit, 6)

    def _simulation_key(self, stack: Stack) -> tuple:
        """Stacks that differ only in backend or dp share one replica simulation."""
        layout = stack.layout
        return (stack.release.pk, stack.accelerator.pk, stack.precision, layout.tp, layout.pp)

    def rank(self, kept: list[Verdict]) -> None:
        """Estimate all, then simulate until the leading `simulate_top` replicas are simulated.

        The estimator ignores queueing, so it is usually the optimistic figure; re-simulating
        whatever rises into the lead (a few rounds at most) keeps simulated stacks from being
        outranked by mere estimates. Ties prefer fewer GPUs.
        """
        for verdict in kept:
            self.estimate(verdict)
        per_dollar = self._priced(kept)
        simulated: dict[tuple, dict] = {}
        for _ in range(4):
            for verdict in kept:
                key = self._simulation_key(verdict.stack)
                if key in simulated:
                    verdict.estimate.update(simulated[key])
                verdict.score = self.score(verdict, per_dollar=per_dollar)
            kept.sort(key=lambda v: (-v.score, v.stack.gpu_count))
            missing = self._leading_keys(kept) - simulated.keys()
            if not missing:
                break
            for verdict in kept:
                key = self._simulation_key(verdict.stack)
                if key in missing and key not in simulated:
                    simulated[key] = self.simulate(verdict)
        drawn: set[tuple] = set()  # one curve per distinct replica: backends share figures
        for position, verdict in enumerate(kept, start=1):
            verdict.rank = position
            verdict.estimate["ranked_by"] = (
                "requests_per_dollar" if per_dollar else "goodput_per_gpu_rps"
            )
            key = self._simulation_key(verdict.stack)
            simulated = verdict.estimate["source"] == "simulator"
            if len(drawn) < CURVE_TOP and simulated and key not in drawn:
                self.curve(verdict)
                drawn.add(key)

    def _leading_keys(self, kept: list[Verdict]) -> set[tuple]:
        keys: list[tuple] = []
        for verdict in kept:
            if verdict.score <= 0 or len(keys) >= self.simulate_top:
                break
            key = self._simulation_key(verdict.stack)
            if key not in keys:
                keys.append(key)
        return set(keys)
