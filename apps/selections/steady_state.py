"""Capacity and the max rate under the SLO from simulated runs long enough to be stationary.

A short burst says little about capacity: 150 requests arriving within a fraction of a second
are all admitted into one big batch and finish before any queue can build, so a rate far above
what the replica sustains looks fine. Here every run has at least `MIN_STEADY_REQUESTS`
requests, the first `WARMUP_FRACTION` of them (by arrival) are discarded, and the run counts as
stationary only when the measured arrivals span at least `SPAN_MULTIPLE` mean end-to-end times
(a burst spans none) and the time in the system is not growing: the mean end-to-end latency of the
last quarter of the measured requests is not above `GROWTH_LIMIT` times (and `GROWTH_FLOOR_MS`
more than) that of the first quarter. End-to-end, not TTFT: an engine with a large sequence
budget admits an overload into its running batch, where it shows as slower decoding, not as a
waiting queue. The SLO is judged on the measured requests only, and a rate whose run is
not stationary does not meet the SLO, whatever its percentiles say: the queue would keep
growing in a longer run.

Both arrival kinds are served: open loop at a rate (`steady_run(rate_rps=...)`) and closed
loop at a fixed concurrency (`steady_run(concurrency=...)`). The capacity is the throughput of
a closed-loop run with as many clients as the engine admits sequences; the max rate is
bisected between zero and that capacity.

A replica of pp > 1 pipeline stages keeps pp micro-batches in flight, each stage working on one
while the others work on the rest (vLLM's `max_concurrent_batches` is the pipeline depth, "PP
requires PP-size concurrent batches to fill the pipeline", vllm/config/vllm.py; the TensorRT-LLM
performance overview publishes more output tokens/s per GPU at PP2 than at PP1 on one RTX PRO
6000 for Llama-3.3-70B, which one batch at a time could not give). The simulator models one
micro-batch's scheduler (`micro_batch_config`): a 1/pp share of the replica's KV cache and
sequence limit, each step taking the whole pipeline's latency (the step cost sums the stages).
The replica serves pp times that scheduler's rate; bubbles between micro-batches are not
modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from stackselect_domain.slo import SLO
from stackselect_domain.words import grouped
from stackselect_domain.workload import ClosedLoop, Workload, generate_requests

from apps.selections.simulator import (
    FINISHED,
    EngineConfig,
    RequestOutcome,
    SimSummary,
    StepTimes,
    as_provider,
    reusable_tokens,
    simulate,
    summarize_outcomes,
)

MIN_STEADY_REQUESTS = 1000
WARMUP_FRACTION = 0.2
WINDOWS = 4
GROWTH_LIMIT = 1.5
GROWTH_FLOOR_MS = 50.0
# The search gives up (max rate 0) once the bracket's top is below this share of capacity.
MIN_CAPACITY_SHARE = 0.01
MAX_PROBES = 16
# A capacity run lets each client send this many requests, so the warm-up wave is a small part.
CLIENT_TURNS = 8
# A stationary run's measured arrivals span at least this many mean times in the system.
SPAN_MULTIPLE = 5
# A short run whose time in the system grows by more than this many seconds per second of
# arrivals is an overload (its queue grows), not a burst.
GROWTH_SLOPE = 0.1


@dataclass(frozen=True)
class Stationarity:
    """Whether a run's queue settled, with the figures the check compared."""

    stationary: bool
    reason: str
    measured_requests: int
    first_window_e2e_ms: float | None
    last_window_e2e_ms: float | None


def measured_rows(rows: Sequence[RequestOutcome]) -> list[RequestOutcome]:
    """The rows after the warm-up, in arrival order (rejected rows stay: they count as misses)."""
    arrived = sorted((row for row in rows if row.arrival_s is not None), key=_arrival_order)
    return arrived[int(len(arrived) * WARMUP_FRACTION) :]


def _arrival_order(row: RequestOutcome) -> tuple[float, int]:
    return (row.arrival_s or 0.0, row.index)


def stationarity(rows: Sequence[RequestOutcome]) -> Stationarity:
    """Is the time in the system of this run's measured requests flat, or growing?"""
    total = len(rows)
    measured = measured_rows(rows)
    if total < MIN_STEADY_REQUESTS:
        return Stationarity(
            False,
            f"only {grouped(total)} requests: a steady state needs at least "
            f"{grouped(MIN_STEADY_REQUESTS)}",
            len(measured),
            None,
            None,
        )
    unfinished = sum(row.status not in (FINISHED, "rejected") for row in measured)
    if unfinished:
        return Stationarity(
            False, f"{unfinished} measured requests never finished", len(measured), None, None
        )
    e2e = [row.e2e_ms for row in measured if row.e2e_ms is not None]
    window = len(e2e) // WINDOWS
    if window < 1:
        return Stationarity(False, "no measured request finished", len(measured), None, None)
    span_s = (measured[-1].arrival_s or 0.0) - (measured[0].arrival_s or 0.0)
    mean_s = float(np.mean(e2e)) / 1e3
    first = float(np.mean(e2e[:window]))
    last = float(np.mean(e2e[-window:]))
    growing = last > GROWTH_LIMIT * first and last - first > GROWTH_FLOOR_MS
    if span_s < SPAN_MULTIPLE * mean_s:
        # Arrivals spread over time whose wait keeps growing, or that are served much slower
        # than they arrive, are an overload; arrivals within one request's time are a burst.
        slope = _growth_slope(measured) if span_s > 0 else 0.0
        if span_s > 0 and (growing or slope > GROWTH_SLOPE):
            cause = _overload(first, last, len(measured) / span_s, slope)
        elif span_s < mean_s:
            cause = "a burst, not a steady load"
        else:
            cause = "too few requests for how long each takes"
        return Stationarity(
            False,
            f"not stationary: the measured arrivals span {span_s:.1f} s, under {SPAN_MULTIPLE}x "
            f"the mean time in the system ({mean_s:.1f} s): {cause}",
            len(measured),
            None,
            None,
        )
    # The slope is fitted only for a run already found growing: every probe of a search ends here.
    reason = (
        f"not stationary: {_overload(first, last, len(measured) / span_s, _growth_slope(measured))}"
        if growing
        else f"stationary: mean end-to-end {first:.0f} ms, then {last:.0f} ms"
    )
    return Stationarity(not growing, reason, len(measured), first, last)


def _growth_slope(measured: Sequence[RequestOutcome]) -> float:
    """Seconds the time in the system grows per second of arrivals (least squares): about 0
    where the replica keeps up, positive where a queue builds."""
    rows = [row for row in measured if row.e2e_ms is not None and row.arrival_s is not None]
    arrivals = np.array([row.arrival_s for row in rows])
    if len(rows) < 2 or np.ptp(arrivals) <= 0:
        return 0.0
    return float(np.polyfit(arrivals, np.array([row.e2e_ms for row in rows]) / 1e3, 1)[0])


def _overload(first_ms: float, last_ms: float, arrived_rps: float, slope: float) -> str:
    return (
        f"more arrives than the replica serves, so its queue keeps growing (mean end-to-end "
        f"{first_ms:.0f} ms in the first quarter of the measured requests, {last_ms:.0f} ms in the "
        f"last; {arrived_rps:.3g} req/s arrived, and the time in the system grew about "
        f"{slope:.2g} s per second of arrivals)"
    )


@dataclass(frozen=True)
class SteadyRun:
    """One stationary-checked run: the summary covers the measured requests only."""

    rate_rps: float | None
    concurrency: int | None
    requests: int
    summary: SimSummary
    stationarity: Stationarity

    @property
    def passed(self) -> bool:
        return self.stationarity.stationary and bool(self.summary.slo_met)


def run_requests(n: int, concurrency: int | None) -> int:
    """Requests a steady run simulates: at least `n`, and in a closed loop CLIENT_TURNS per
    client, so the wave that starts the clients together is a small part of the run (n requests
    from as many clients or more would be one burst)."""
    return max(n, CLIENT_TURNS * concurrency) if concurrency is not None else n


def steady_run(
    workload: Workload,
    *,
    n: int,
    seed: int,
    step_time: StepTimes,
    config: EngineConfig,
    slo: SLO | None,
    rate_rps: float | None = None,
    concurrency: int | None = None,
    max_steps: int | None = None,
    spread_start_s: float | None = None,
) -> SteadyRun:
    """Open loop at `rate_rps` (default: the workload's own rate), or closed loop at
    `concurrency` (default: the workload's own, when it is closed-loop), of `run_requests`
    requests; past `max_steps` engine steps the simulator raises SimulationTooLong. A closed
    loop's clients start together, or evenly over `spread_start_s`."""
    if rate_rps is not None and concurrency is not None:
        raise ValueError("rate_rps: give a rate or a concurrency, not both")
    if concurrency is None and rate_rps is None and isinstance(workload.arrival, ClosedLoop):
        concurrency = workload.arrival.concurrency
    n = run_requests(n, concurrency)
    if concurrency is not None:
        closed = Workload(
            workload.input_length,
            workload.output_length,
            ClosedLoop(concurrency),
            workload.prefix_share,
            workload.prefix_tokens,
            workload.prefix_groups,
        )
        requests = generate_requests(closed, n, seed)
    else:
        requests = generate_requests(workload, n, seed, rate_rps=rate_rps)
    result = simulate(
        requests,
        step_time,
        config,
        slo=slo,
        concurrency=concurrency,
        max_steps=max_steps,
        spread_start_s=spread_start_s,
    )
    measured = measured_rows(result.rows)
    summary = summarize_outcomes(
        measured,
        slo=slo,
        prefix_hit_tokens=result.summary.prefix_hit_tokens,
        steps=result.summary.steps,
        batch_tokens=round(result.summary.mean_batch_tokens * result.summary.steps),
    )
    return SteadyRun(rate_rps, concurrency, n, summary, stationarity(result.rows))


def micro_batch_config(config: EngineConfig, stages: int) -> EngineConfig:
    """The scheduler of one of a `stages`-deep pipeline's micro-batches: the replica's KV cache
    and sequence limit shared among the micro-batches in flight (the replica itself when
    stages is 1)."""
    if stages < 1:
        raise ValueError(f"stages: must be at least 1, got {stages}")
    if stages == 1:
        return config
    return replace(
        config,
        kv_capacity_tokens=config.kv_capacity_tokens // stages,
        max_num_seqs=max(1, config.max_num_seqs // stages),
    )


def shared_prefix_tokens(workload: Workload, config: EngineConfig) -> int:
    """Tokens of the workload's shared prefix an engine caching prefixes holds once per group
    and serves from there: its whole blocks (0 when the engine does not cache prefixes)."""
    if not config.prefix_caching or workload.prefix_share <= 0:
        return 0
    return workload.prefix_tokens - workload.prefix_tokens % config.kv_block_size


def expected_hit_tokens(workload: Workload, config: EngineConfig, isl: int) -> float:
    """A typical prompt's tokens served from the prefix cache: the shared prefix (its whole
    blocks, or every token where the engine reuses to the token), leaving one token of an
    `isl`-token prompt to compute, times the share of prompts that carry it (the first of
    each group computes it: one request in a long run)."""
    if not config.prefix_caching or workload.prefix_share <= 0:
        return 0.0
    return workload.prefix_share * reusable_tokens(config, min(workload.prefix_tokens, isl - 1))


def sequences_held(workload: Workload, config: EngineConfig) -> int:
    """Sequences the KV cache holds at the workload's mean context, each shared prefix held
    once per group where the engine caches prefixes (as the simulator holds them)."""
    context = workload.input_length.mean() + workload.output_length.mean()
    held = int(config.kv_capacity_tokens // max(context, 1.0))
    prefix = shared_prefix_tokens(workload, config)
    if prefix:
        own = context - workload.prefix_share * prefix
        free = config.kv_capacity_tokens - workload.prefix_groups * prefix
        held = max(held, int(free // max(own, 1.0)))
    return held


def saturating_clients(workload: Workload, config: EngineConfig) -> int:
    """Clients that keep the replica full: as many sequences as it admits (max_num_seqs) or its
    KV cache holds, whichever is fewer; more would only wait."""
    return max(1, min(config.max_num_seqs, sequences_held(workload, config)))


def capacity_run(
    workload: Workload,
    *,
    seed: int,
    step_time: StepTimes,
    config: EngineConfig,
    slo: SLO | None = None,
    n: int = 0,
    clients: int | None = None,
) -> SteadyRun:
    """The replica saturated: a closed loop of `clients` (default: `saturating_clients`), each
    sending CLIENT_TURNS requests or more (run_requests)."""
    clients = clients or saturating_clients(workload, config)
    return steady_run(
        workload,
        n=n,
        seed=seed,
        step_time=step_time,
        config=config,
        slo=slo,
        concurrency=clients,
    )


@dataclass(frozen=True)
class SteadyRate:
    """The highest stationary rate meeting the SLO (0 when none does), the capacity it was
    searched under, and the run at the answer."""

    rate_rps: float
    capacity_rps: float
    run: SteadyRun | None
    capacity_run: SteadyRun
    probes: int

    @property
    def stationary(self) -> bool:
        return self.run is not None and self.run.stationarity.stationary


def steady_max_rate(
    workload: Workload,
    *,
    n: int,
    seed: int,
    step_time: StepTimes,
    config: EngineConfig,
    slo: SLO,
    tolerance: float = 0.05,
    guess_rps: float | None = None,
) -> SteadyRate:
    """Bisect the open-loop rate in (0, capacity) until the bracket is within `tolerance`.

    Refuses a burst-sized run (n below MIN_STEADY_REQUESTS). `guess_rps` (the analytic
    estimate, say) is probed first when given; it only saves probes, never changes the rule.
    """
    if n < MIN_STEADY_REQUESTS:
        raise ValueError(
            f"n: a steady-state search needs at least {grouped(MIN_STEADY_REQUESTS)} requests per "
            f"run, got {grouped(n)} (a burst that short never builds a queue)"
        )
    if not 0 < tolerance < 1:
        raise ValueError("tolerance: must be in (0, 1)")
    inputs = (workload, n, seed, as_provider(step_time), config, slo, tolerance, guess_rps)
    try:
        hash(inputs)
    except TypeError:  # a replayed trace's lengths are not hashable: search without the cache
        return _search(*inputs)
    return _cached_search(*inputs)


def _search(workload, n, seed, step_time, config, slo, tolerance, guess_rps) -> SteadyRate:
    shared = {"seed": seed, "step_time": step_time, "config": config, "slo": slo}
    saturated = capacity_run(workload, n=n, **shared)
    capacity = saturated.summary.throughput_rps
    in_system_s = saturated.summary.e2e_ms.mean / 1e3 if saturated.summary.e2e_ms else 0.0
    low, high, best, probes = 0.0, capacity, None, 0
    rate = guess_rps if guess_rps and 0 < guess_rps < capacity else capacity / 2
    while capacity > 0 and probes < MAX_PROBES:
        # Long enough for the span rule at this rate, with the saturated time in the system.
        span = rate * SPAN_MULTIPLE * in_system_s / (1 - WARMUP_FRACTION)
        run = steady_run(workload, n=max(n, math.ceil(span) + 1), rate_rps=rate, **shared)
        probes += 1
        if run.passed:
            low, best = rate, run
        else:
            high = rate
        if high - low <= tolerance * high or high < MIN_CAPACITY_SHARE * capacity:
            break
        rate = (low + high) / 2
    return SteadyRate(low if best else 0.0, capacity, best, saturated, probes + 1)


# Cached by every input: the same replica, workload and SLO are searched once per process.
_cached_search = lru_cache(maxsize=4096)(_search)
