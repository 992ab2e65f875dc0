"""Rank kept stacks, one method per comparison, by SLO goodput per GPU (or per dollar).

Two comparisons, each with one method, listed one after the other:

1. The leading `SIMULATE_TOP` distinct replicas (by the analytic order below), and the leading
   replica of every other accelerator that can meet the SLO, are ranked by the continuous-
   batching simulator on the step-time provider `steptime_providers` picks for the stack
   (AIConfigurator's measured kernels where they cover it, else the roofline), searched for the
   highest stationary rate meeting the SLO (steady_state.py): their max rate, goodput per GPU,
   GPUs for the peak and score are all "simulated".
2. Every other kept stack is ranked after them by the analytic estimate on the roofline (one
   typical request at the largest concurrency meeting the SLO, no queueing): "analytic". The
   roofline answers for every stack alike here: AIConfigurator's milliseconds per step over
   a thousand stacks would take minutes.

Simulating every distinct replica of a whole-catalog goal (hundreds) takes minutes, so only the
leaders are simulated; a row says which comparison it is in and the method of every figure.
The score is the ranked figure scaled by feature maturity, operational fit and project status,
each kept in `score_components`. Ties are broken by a stated rule: fewer GPUs, then higher
maturity, then lower cost per hour (when prices are given); rows equal on every one of these
(two engines whose figures the model cannot tell apart) are marked `tied_with_above` and listed
by name, so a tie is shown, never hidden behind an arbitrary order. Replicas the catalog cannot tell
apart (backends of one engine, dp copies) share one simulation, and searches are cached by
their inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackselect_domain.slo import judge, request_ms
from stackselect_domain.steptime import NATURE_ANALYTIC, NATURE_SIMULATED, StepTimeProvider

from apps.catalog.choices import ProjectStatus
from apps.selections.candidates.capacity import held_sequences
from apps.selections.candidates.filters import Judge
from apps.selections.candidates.goal import Goal
from apps.selections.candidates.stack import Stack, Verdict
from apps.selections.catalog_adapter import (
    accelerator_spec,
    engine_config,
    scheduler_budgets,
    scheduler_record,
)
from apps.selections.efficiency_fit import TeamFit
from apps.selections.error_bands import error_bands
from apps.selections.estimator import (
    Efficiency,
    LatencyEstimate,
    MemoryEstimate,
    estimate_latency,
    largest_meeting,
)
from apps.selections.simulator import EngineConfig
from apps.selections.steady_state import (
    MIN_STEADY_REQUESTS,
    expected_hit_tokens,
    micro_batch_config,
    steady_max_rate,
    steady_run,
)
from apps.selections.steptime_providers import (
    StackInputs,
    method_note,
    method_record,
    step_time_factory,
    step_time_provider,
)

SIMULATE_TOP = 8
CURVE_TOP = 3
SIM_REQUESTS = MIN_STEADY_REQUESTS
SIM_SEED = 20_260_101
SEARCH_TOLERANCE = 0.05
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
# How much a project's status weighs on its score: our judgement, stated on the page. A
# maintenance-mode project still ships fixes but not new features; an archived one neither.
STATUS_FACTORS = {
    ProjectStatus.ACTIVE: 1.0,
    ProjectStatus.MAINTENANCE: 0.8,
    ProjectStatus.ARCHIVED: 0.5,
}
TIE_BREAK_RULE = (
    "fewer GPUs, then higher maturity, then lower cost per hour; rows equal on all of these are "
    "marked as tied and listed by name"
)

# (accelerator slug, engine slug) -> factors fitted on the team's runs of that engine there
TeamFits = Mapping[tuple[str, str], TeamFit]


@dataclass(frozen=True)
class Throughput:
    """The analytic view of one replica at the largest concurrency meeting the SLO: `batch`
    sequences in each of its `stages` micro-batches (steady_state.micro_batch_config)."""

    batch: int
    latency: LatencyEstimate | None
    replica_rps: float
    stages: int = 1

    @property
    def concurrency(self) -> int:
        """Requests in flight in the whole replica."""
        return self.batch * self.stages


class Ranker:
    def __init__(
        self,
        goal: Goal,
        judge: Judge,
        *,
        team_fits: TeamFits | None = None,
        simulate_top: int = SIMULATE_TOP,
        sim_requests: int = SIM_REQUESTS,
    ) -> None:
        self.goal = goal
        self.judge = judge
        self.team_fits = team_fits or {}
        self.simulate_top = simulate_top
        self.sim_requests = sim_requests
        self._throughput: dict[tuple, Throughput] = {}
        self._simulated: dict[tuple, dict] = {}
        self._hits: dict[int, float] = {}  # by release: its prefix cache and block size

    def team_fit(self, stack: Stack) -> TeamFit | None:
        """The fit of the team's runs of this engine on this accelerator, if any."""
        return self.team_fits.get((stack.accelerator.slug, stack.release.engine.slug))

    def efficiency(self, stack: Stack) -> Efficiency | None:
        """Factors fitted on the team's runs for this accelerator and engine, if any."""
        fit = self.team_fit(stack)
        return fit.efficiency if fit else None

    def inputs(self, stack: Stack) -> StackInputs:
        goal = self.goal
        return StackInputs(
            model=goal.arch,
            accel=accelerator_spec(stack.accelerator),
            precision=stack.precision,
            kv_dtype=goal.kv_dtype_or_default,
            parallelism=stack.layout,
            engine=stack.release.engine.slug,
            engine_version=stack.release.version,
            backend=stack.backend.slug if stack.backend else None,
            catalog_model=goal.model,
            accelerator_slug=stack.accelerator.slug,
        )

    def _memory(self, stack: Stack) -> MemoryEstimate:
        memory = self.judge.memory_of(stack)
        assert isinstance(memory, MemoryEstimate), "kept stacks always have a memory estimate"
        return memory

    def _latency(self, stack: Stack, concurrency: int) -> LatencyEstimate:
        inputs = self.inputs(stack)
        return estimate_latency(
            **inputs.replica(),
            isl=self.goal.isl,
            osl=self.goal.osl,
            concurrency=concurrency,
            step_time=step_time_factory(inputs, self.efficiency(stack), measured_kernels=False),
            cached_tokens=self._cached_tokens(stack),
        )

    def _cached_tokens(self, stack: Stack) -> float:
        """A typical prompt's tokens the engine's prefix cache serves (none without sharing)."""
        workload = self.goal.workload
        if workload.prefix_share <= 0:
            return 0.0
        release = stack.release.pk
        if release not in self._hits:  # the bisection asks a dozen times per stack
            config = self._replica_config(stack)
            self._hits[release] = expected_hit_tokens(workload, config, self.goal.isl)
        return self._hits[release]

    def _meets_slo(self, latency: LatencyEstimate) -> bool:
        """The steady state as one typical request, judged by the domain's one SLO rule."""
        verdict = judge(
            self.goal.slo,
            ok=[True],
            ttft_ms=[latency.ttft_ms],
            tpot_ms=[latency.tpot_ms],
            e2e_ms=[request_ms(latency.ttft_ms, latency.tpot_ms, self.goal.osl)],
        )
        return bool(verdict.passed)

    def _replica_key(self, stack: Stack) -> tuple:
        """Stacks that differ only in backend or dp share one replica's figures."""
        layout = stack.layout
        return (
            stack.release.pk,
            stack.accelerator.pk,
            stack.precision,
            layout.tp,
            layout.pp,
            layout.ep,
        )

    def throughput(self, stack: Stack) -> Throughput:
        """Largest micro-batch whose analytic latencies meet the SLO, and the replica's request
        rate there by Little's law (requests in flight / end-to-end time)."""
        key = self._replica_key(stack)
        if key not in self._throughput:
            stages = stack.layout.pp
            max_seqs = scheduler_budgets(stack.release, stack.accelerator).max_num_seqs
            held = held_sequences(self.goal, stack, self._memory(stack))
            upper = min(held, max_seqs) // stages
            best = largest_meeting(lambda c: self._meets_slo(self._latency(stack, c)), upper)
            latency = self._latency(stack, best) if best else None
            rps = (
                best * stages / (request_ms(latency.ttft_ms, latency.tpot_ms, self.goal.osl) / 1e3)
                if latency
                else 0.0
            )
            self._throughput[key] = Throughput(best, latency, rps, stages)
        return self._throughput[key]

    def _provider(self, stack: Stack, *, measured_kernels: bool) -> StepTimeProvider:
        """The analytic order asks without measured kernels (too slow over every stack); the
        simulated comparison of the leaders asks with them."""
        goal = self.goal
        return step_time_provider(
            self.inputs(stack),
            decode_batch=max(self.throughput(stack).batch, 1),
            context=goal.isl + goal.osl / 2,
            efficiency=self.efficiency(stack),
            measured_kernels=measured_kernels,
        )

    def _note(self, stack: Stack, *, measured_kernels: bool) -> str:
        return method_note(
            self.inputs(stack),
            efficiency=self.efficiency(stack),
            measured_kernels=measured_kernels,
        )

    # ------------------------------------------------------------ figures

    def analytic(self, verdict: Verdict) -> None:
        """The analytic figures: latency at the largest SLO-meeting concurrency, and the goodput
        per GPU that follows by Little's law; these are the ranked figures until simulated."""
        stack = verdict.stack
        figures = self.throughput(stack)
        estimate = dict(verdict.estimate or {})
        provider = self._provider(stack, measured_kernels=False)
        method = method_record(provider, NATURE_ANALYTIC, self._note(stack, measured_kernels=False))
        if figures.latency is not None:
            latency = figures.latency
            estimate["latency"] = {
                "concurrency": figures.concurrency,
                "ttft_ms": round(latency.ttft_ms, 2),
                "tpot_ms": round(latency.tpot_ms, 3),
                "prefill_ms": round(latency.prefill_ms, 2),
                "bandwidth_floor_tpot_ms": round(latency.bandwidth_floor_tpot_ms, 3),
                **method,
            }
            if cached := self._cached_tokens(stack):  # said beside the TTFT it shortens
                estimate["latency"]["cached_tokens"] = round(cached, 1)
        per_gpu = self._per_gpu(stack, figures.replica_rps)
        estimate.update(method)
        estimate["replica_clients_in_slo"] = figures.concurrency if figures.latency else 0
        estimate["comparison"] = NATURE_ANALYTIC
        estimate["goodput_per_gpu_rps"] = per_gpu
        estimate["analytic_goodput_per_gpu_rps"] = per_gpu
        estimate["error_band"] = self._bands(stack, method["method"])
        verdict.estimate = estimate

    def simulated(self, verdict: Verdict) -> dict:
        """The ranked figures of this stack's replica: the stationary max rate meeting the SLO,
        the goodput per GPU that follows, and the tail latencies there."""
        stack = verdict.stack
        key = self._replica_key(stack)
        if key not in self._simulated:
            self._simulated[key] = self._search(stack)
        figures = dict(self._simulated[key])
        figures["goodput_per_gpu_rps"] = self._per_gpu(stack, figures["replica_max_rate_rps"])
        return figures

    def _search(self, stack: Stack) -> dict:
        goal, provider = self.goal, self._provider(stack, measured_kernels=True)
        stages = stack.layout.pp  # the search runs one micro-batch's scheduler
        search = steady_max_rate(
            goal.workload,
            n=self.sim_requests,
            seed=SIM_SEED,
            step_time=provider,
            config=self._config(stack),
            slo=goal.slo,
            tolerance=SEARCH_TOLERANCE,
            guess_rps=self.throughput(stack).replica_rps / stages or None,
        )
        method = method_record(provider, NATURE_SIMULATED, self._note(stack, measured_kernels=True))
        figures = {
            **method,
            "comparison": NATURE_SIMULATED,
            "replica_max_rate_rps": round(search.rate_rps * stages, 4),
            "replica_capacity_rps": round(search.capacity_rps * stages, 4),
            "stationary": search.stationary,
            "stationarity": (search.run or search.capacity_run).stationarity.reason,
            "simulated_requests": self.sim_requests,
            "scheduler": scheduler_record(stack.release, stack.accelerator),
            "error_band": self._bands(stack, method["method"]),
        }
        summary = search.run.summary if search.run is not None else None
        if summary is not None and summary.ttft_ms is not None and summary.tpot_ms is not None:
            figures["simulated_ttft_p99_ms"] = round(summary.ttft_ms.p99, 2)
            figures["simulated_tpot_p99_ms"] = round(summary.tpot_ms.p99, 3)
        # Little's law at the max rate: the requests in flight there, so the clients of a closed
        # loop (each sending its next request when the last ends) the replica serves in the SLO
        in_system_s = summary.e2e_ms.mean / 1e3 if summary is not None and summary.e2e_ms else 0
        figures["replica_clients_in_slo"] = math.floor(search.rate_rps * stages * in_system_s)
        return figures

    def _replica_config(self, stack: Stack) -> EngineConfig:
        return engine_config(
            stack.release,
            stack.accelerator,
            kv_capacity_tokens=self._memory(stack).kv_capacity_tokens,
        )

    def _config(self, stack: Stack) -> EngineConfig:
        """One micro-batch scheduler's budgets (the replica's own when pp is 1)."""
        return micro_batch_config(self._replica_config(stack), stack.layout.pp)

    def _bands(self, stack: Stack, method: str) -> dict:
        """The method's error bands, each saying whether it was measured on this engine and
        vendor (none for the team-fitted roofline, with the reason and what its fit saw)."""
        return error_bands(
            method,
            engine=stack.release.engine.slug,
            vendor=stack.accelerator.vendor,
            team_fit=self.team_fit(stack),
        )

    def _per_gpu(self, stack: Stack, replica_rps: float) -> float:
        return round(replica_rps / stack.layout.replica_gpus, 4)

    def curve(self, verdict: Verdict) -> None:
        """Goodput of the whole stack (all dp replicas, each of pp micro-batch schedulers) at
        fractions of its max rate."""
        stack, goal = verdict.stack, self.goal
        replica_rate = verdict.estimate.get("replica_max_rate_rps") or 0.0
        if replica_rate <= 0:
            return
        schedulers, points = stack.layout.schedulers, []
        provider, config = self._provider(stack, measured_kernels=True), self._config(stack)
        for fraction in CURVE_FRACTIONS:
            # one micro-batch scheduler is simulated; every one of the stack's serves alike
            scheduler_rate = replica_rate * fraction / stack.layout.pp
            run = steady_run(
                goal.workload,
                n=self.sim_requests,
                seed=SIM_SEED,
                step_time=provider,
                config=config,
                slo=goal.slo,
                rate_rps=scheduler_rate,
            )
            points.append(
                {
                    "rate_rps": round(scheduler_rate * schedulers, 4),
                    "goodput_rps": round((run.summary.goodput_rps or 0.0) * schedulers, 4),
                    "attainment": round(run.summary.attainment or 0.0, 4),
                    "stationary": run.stationarity.stationary,
                }
            )
        verdict.estimate["curve"] = points

    # ------------------------------------------------------------ score

    def _size_for_target(self, verdict: Verdict) -> None:
        """GPUs this stack needs for the target rate at its peak, or for a closed-loop goal's
        clients, in whole deployable units (a replica, or an expert-parallel group of
        attention-data-parallel replicas)."""
        goal, estimate, layout = self.goal, verdict.estimate, verdict.stack.layout
        per_gpu, unit = estimate["goodput_per_gpu_rps"], layout.unit_gpus
        estimate.pop("gpus_for_peak", None)
        estimate.pop("gpus_for_clients", None)
        if goal.target_rate_rps is not None and per_gpu > 0:
            units = math.ceil(goal.target_rate_rps * goal.peak_factor / (per_gpu * unit))
            estimate["gpus_for_peak"] = units * unit
        clients = estimate.get("replica_clients_in_slo") or 0
        if goal.concurrency and clients > 0:
            per_unit = clients * (unit // layout.replica_gpus)
            estimate["gpus_for_clients"] = math.ceil(goal.concurrency / per_unit) * unit

    def _priced(self, kept: Sequence[Verdict]) -> bool:
        return bool(kept) and all(v.stack.accelerator.slug in self.goal.prices for v in kept)

    def cost_per_hour(self, stack: Stack) -> float | None:
        price = self.goal.prices.get(stack.accelerator.slug)
        return None if price is None else round(price * stack.gpu_count, 4)

    def score(self, verdict: Verdict, *, per_dollar: bool) -> float:
        """The ranked figure x (0.5 + 0.25 maturity + 0.25 operational fit) x project status;
        the components are kept in the estimate so the page can show the sum."""
        estimate, stack = verdict.estimate, verdict.stack
        figure_name, figure = "goodput_per_gpu_rps", estimate["goodput_per_gpu_rps"]
        if per_dollar:
            price = self.goal.prices[stack.accelerator.slug]
            figure_name, figure = "requests_per_dollar", round(figure * 3600 / price, 2)
            estimate["requests_per_dollar"] = figure
        self._size_for_target(verdict)
        status = stack.release.engine.status
        status_factor = STATUS_FACTORS.get(status, STATUS_FACTORS[ProjectStatus.ACTIVE])
        fit = 0.5 + 0.25 * verdict.maturity + 0.25 * verdict.operational_fit
        score = round(figure * fit * status_factor, 6)
        estimate["score_components"] = {
            "figure": figure_name,
            "value": figure,
            "method": estimate.get("label"),
            "maturity": round(verdict.maturity, 4),
            "operational_fit": round(verdict.operational_fit, 4),
            "fit": round(fit, 4),
            "project_status": status,
            "status_factor": status_factor,
            "score": score,
        }
        return score

    def order_key(self, verdict: Verdict) -> tuple:
        """Score first; ties by the stated rule: fewer GPUs, higher maturity, lower cost."""
        return (*self._tie_keys(verdict), verdict.stack.label())

    def _tie_keys(self, verdict: Verdict) -> tuple:
        cost = self.cost_per_hour(verdict.stack)
        return (
            -(verdict.score or 0.0),
            verdict.stack.gpu_count,
            -round(verdict.maturity, 4),
            cost if cost is not None else 0.0,
        )

    def rank(self, kept: list[Verdict]) -> None:
        """Order every stack analytically, simulate the leading replicas, then list the
        simulated comparison first and the analytic one after, each by the stated rule."""
        per_dollar = self._priced(kept)
        for verdict in kept:
            self.analytic(verdict)
            verdict.score = self.score(verdict, per_dollar=per_dollar)
        kept.sort(key=self.order_key)
        leaders = self._leading_keys(kept)
        for verdict in kept:
            if self._replica_key(verdict.stack) in leaders:
                verdict.estimate.update(self.simulated(verdict))
                verdict.score = self.score(verdict, per_dollar=per_dollar)
        kept.sort(key=lambda v: (v.estimate["comparison"] != NATURE_SIMULATED, *self.order_key(v)))
        drawn: set[tuple] = set()  # one curve per distinct replica: backends share figures
        previous: tuple | None = None
        for position, verdict in enumerate(kept, start=1):
            verdict.rank = position
            keys = (verdict.estimate["comparison"], *self._tie_keys(verdict))
            verdict.estimate["tied_with_above"] = keys == previous
            previous = keys
            verdict.estimate["ranked_by"] = (
                "requests_per_dollar" if per_dollar else "goodput_per_gpu_rps"
            )
            verdict.estimate["tie_break"] = TIE_BREAK_RULE
            cost = self.cost_per_hour(verdict.stack)
            if cost is not None:
                verdict.estimate["cost_per_hour"] = cost
            key = self._replica_key(verdict.stack)
            simulated = verdict.estimate["comparison"] == NATURE_SIMULATED
            if len(drawn) < CURVE_TOP and simulated and key not in drawn:
                self.curve(verdict)
                drawn.add(key)

    def _leading_keys(self, kept: list[Verdict]) -> set[tuple]:
        """The first `simulate_top` distinct replicas with a positive analytic score, and the
        leading replica of every accelerator not among them: a GPU the roofline's order puts
        lower (often one whose measured kernels would time it) still gets a simulated row."""
        keys: list[tuple] = []
        accelerators: set[int] = set()
        for verdict in kept:
            if (verdict.score or 0.0) <= 0:
                break
            key = self._replica_key(verdict.stack)
            accelerator = verdict.stack.accelerator.pk
            if key in keys or (len(keys) >= self.simulate_top and accelerator in accelerators):
                continue
            keys.append(key)
            accelerators.add(accelerator)
        return set(keys)
