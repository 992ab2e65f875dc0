"""The stateless estimate behind POST /api/v1/estimate/: catalog rows in, predictions out.

The analytic figures (one typical request at the given concurrency, no queueing) are always
answered. With a `concurrency` (closed loop) or a `rate_rps` (open loop, Poisson) the
continuous-batching simulator runs the replica to a steady state on the same step-time
provider, and its means and percentiles become the answer, with whether the run was
stationary. Where the factors the accuracy benchmark fitted on published rows cover the stack
(calibrated_method.py), the figures are the calibrated method's; otherwise the provider's, with
the reason. Every answer names its method and carries an error band per metric (null with the
reason until held-out accuracy is measured) and the nearest published measurements.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from stackselect_domain.steptime import NATURE_ANALYTIC, NATURE_SIMULATED, StepTimeProvider
from stackselect_domain.workload import FixedLength, OpenLoopArrivals, Workload

from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections.calibrated_method import (
    CalibratedChoice,
    calibrated_choice,
    calibrated_latency,
    calibrated_record,
    fallback_note,
)
from apps.selections.candidates.capacity import FALLBACK_FRACTION, memory_rule
from apps.selections.catalog_adapter import (
    FALLBACK_BATCHED_TOKENS,
    FALLBACK_BLOCK_SIZE,
    FALLBACK_MAX_SEQS,
    accelerator_spec,
    default_kv_dtype,
    engine_config,
    model_arch,
)
from apps.selections.engine_profiles import engine_profile
from apps.selections.error_bands import error_bands
from apps.selections.estimator import (
    MEMORY_BASIS_TOTAL,
    Parallelism,
    StepTimeFactory,
    estimate_latency,
    estimate_memory,
    kv_bytes_per_token,
    largest_meeting,
    max_concurrency_at_tpot,
)
from apps.selections.published_calibration import CalibratedStepTime
from apps.selections.published_nearest import estimate_published
from apps.selections.simulator import EngineConfig, Percentiles
from apps.selections.steady_state import MIN_STEADY_REQUESTS, SteadyRun, steady_run
from apps.selections.steptime_providers import (
    StackInputs,
    method_note,
    method_record,
    step_time_factory,
)

ESTIMATE_SEED = 20_260_101
# Decode steps one simulated answer may take at most (about 1.5 us each): beyond it the
# request is refused with a field error instead of holding a worker for minutes.
MAX_SIMULATED_STEPS = 4_000_000
METRICS = ("ttft_ms", "tpot_ms", "e2e_ms")
MEMORY_METHOD = (
    "predicted by the estimator's memory model: the catalog's weights per GPU for the layout "
    "and the engine release's memory rule"
)


def stateless_estimate(
    *,
    model: str,
    precision: str,
    accelerator: str,
    gpu_count: int,
    tp: int,
    isl: int,
    osl: int,
    concurrency: int | None = None,
    rate_rps: float | None = None,
    kv_dtype: str = "",
    tpot_ms: float | None = None,
    engine: str = "",
    engine_version: str = "",
    backend: str = "",
    ep: int = 1,
    dp: int | None = None,
) -> dict[str, Any]:
    """One replica of tp GPUs (dp = gpu_count / tp replicas side by side share nothing).

    Figures are per GPU of a replica; kv_capacity_tokens is per replica; ValueErrors name the
    field that makes the layout impossible (tp that does not divide the heads, ...).
    """
    spec = ModelSpec.objects.get(slug=model)
    arch = model_arch(spec)
    accelerator_row = Accelerator.objects.get(slug=accelerator)
    accel = accelerator_spec(accelerator_row)
    kv_dtype = kv_dtype or default_kv_dtype(spec)
    if dp is not None and dp * tp != gpu_count:
        raise ValueError("dp: tp x dp must equal gpu_count")
    layout = Parallelism(tp=tp, ep=ep, dp=gpu_count // tp)
    release = _release(engine, engine_version)
    stack = StackInputs(
        model=arch,
        accel=accel,
        precision=precision,
        kv_dtype=kv_dtype,
        parallelism=layout,
        engine=engine,
        engine_version=release.version if release else "",
        backend=backend or None,
        catalog_model=spec,
        accelerator_slug=accelerator,
        accelerator_family=accelerator_row.family,
    )
    rule = memory_rule(release) if release else None
    shared = {**stack.replica(), "isl": isl, "osl": osl}
    memory = estimate_memory(
        **shared,
        gpu_memory_utilization=rule.fraction if rule else FALLBACK_FRACTION,
        memory_basis=rule.basis if rule else MEMORY_BASIS_TOTAL,
    )
    factory = step_time_factory(stack)
    provider = factory(concurrency or 1, isl + osl / 2)
    # The calibrated method where the stored factors cover the stack over its provider's method
    choice = calibrated_choice(stack, provider.method)
    note = method_note(stack)
    load = concurrency or 1
    if choice.applies:
        latency, correction = calibrated_latency(
            stack, choice, isl=isl, osl=osl, concurrency=load, step_time=factory
        )
        analytic_record = calibrated_record(
            choice, correction, NATURE_ANALYTIC, concurrency=load, base=provider
        )
    else:
        latency = estimate_latency(**shared, concurrency=load, step_time=factory)
        note = fallback_note(note, choice)
        analytic_record = method_record(provider, NATURE_ANALYTIC, note)
    analytic = {
        "ttft_ms": latency.ttft_ms,
        "tpot_ms": latency.tpot_ms,
        "e2e_ms": latency.ttft_ms + latency.tpot_ms * max(osl - 1, 0),
    }
    max_concurrency = None
    if tpot_ms is not None:
        max_concurrency = _max_concurrency(stack, choice, shared, tpot_ms, factory)
    analytic["method_label"] = analytic_record["label"]
    answer: dict[str, Any] = {
        "memory_method": MEMORY_METHOD,
        "weights_gb_per_gpu": memory.weights_gb_per_gpu,
        "kv_bytes_per_token": kv_bytes_per_token(model=arch, kv_dtype=kv_dtype),
        "kv_capacity_tokens": memory.kv_capacity_tokens,
        "fits": memory.fits,
        "fit_reason": memory.reason,
        "max_concurrency_at_tpot_slo": max_concurrency,
        "max_concurrency_method": analytic["method_label"],
        "engine": engine or None,
        "engine_version": release.version if release else None,
        "backend": backend or None,
        "step_time_basis": engine_profile(engine).basis,
        "analytic": analytic,
        **{metric: analytic[metric] for metric in METRICS},
        **_method(analytic_record),
        "percentiles": None,
        "stationary": None,
        "stationarity": None,
        **estimate_published(
            model=model,
            accelerator=accelerator,
            engine=engine,
            engine_version=release.version if release else "",
            precision=precision,
            layout=layout,
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            rate_rps=rate_rps,
        ),
    }
    wants_simulation = concurrency is not None or rate_rps is not None
    if wants_simulation and memory.fits:
        _check_simulation_size(osl, concurrency)
        config = _config(release, memory.kv_capacity_tokens)
        workload = Workload(FixedLength(isl), FixedLength(osl), OpenLoopArrivals("poisson", 1.0))
        run = steady_run(
            workload,
            n=MIN_STEADY_REQUESTS,
            seed=ESTIMATE_SEED,
            step_time=provider,
            config=config,
            slo=None,
            rate_rps=rate_rps,
            concurrency=concurrency,
        )
        summary = run.summary
        percentiles = {
            metric: asdict(getattr(summary, metric)) if getattr(summary, metric) else None
            for metric in METRICS
        }
        answer.update(
            {
                metric: figures["mean"] if figures else None
                for metric, figures in percentiles.items()
            }
        )
        answer.update(_method(method_record(provider, NATURE_SIMULATED, note)))
        answer["percentiles"] = percentiles
        answer["throughput_rps"] = summary.throughput_rps
        answer["stationary"] = run.stationarity.stationary
        answer["stationarity"] = run.stationarity.reason
        if choice.applies:
            scaled = steady_run(
                workload,
                n=MIN_STEADY_REQUESTS,
                seed=ESTIMATE_SEED,
                step_time=CalibratedStepTime(provider, correction.prefill),
                config=config,
                slo=None,
                rate_rps=rate_rps,
                concurrency=concurrency,
            )
            answer.update(
                _calibrated_simulation(stack, choice, run, scaled, provider, isl=isl, osl=osl)
            )
    elif wants_simulation:
        answer["stationarity"] = f"not simulated: {memory.reason}"
    answer["error_band"] = error_bands(answer["method"], METRICS)
    return answer


def _max_concurrency(
    stack: StackInputs,
    choice: CalibratedChoice,
    shared: dict[str, Any],
    target_tpot_ms: float,
    factory: StepTimeFactory,
) -> int:
    """The largest concurrency whose analytic TPOT meets the target, by the estimate's method
    (the calibrated TPOT grows with the fitted concurrency slope)."""
    if not choice.applies:
        return max_concurrency_at_tpot(target_tpot_ms=target_tpot_ms, **shared, step_time=factory)
    upper = estimate_memory(**shared).max_concurrent_sequences

    def meets(concurrency: int) -> bool:
        latency, _ = calibrated_latency(
            stack,
            choice,
            isl=shared["isl"],
            osl=shared["osl"],
            concurrency=concurrency,
            step_time=factory,
        )
        return latency.tpot_ms <= target_tpot_ms

    return largest_meeting(meets, upper)


def _shifted(figures: Percentiles | None, *, add: float = 0.0, times: float = 1.0):
    if figures is None:
        return None
    return {name: value * times + add for name, value in asdict(figures).items()}


def _calibrated_simulation(
    stack: StackInputs,
    choice: CalibratedChoice,
    base: SteadyRun,
    scaled: SteadyRun,
    provider: StepTimeProvider,
    *,
    isl: int,
    osl: int,
) -> dict[str, Any]:
    """The simulated answer corrected as the bench corrects a row: TTFT from the run on
    prompt steps x prefill, plus the overhead; TPOT from the base provider's run x the TPOT
    correction at the base run's load (its clients, or by Little's law its mean in flight);
    E2E is TTFT + (osl - 1) x TPOT (two runs: no per-request E2E, so no E2E percentiles);
    throughput_rps stays the base run's (the factors correct latencies, not capacity)."""
    summary = base.summary
    in_flight = (summary.throughput_rps or 0.0) * (summary.e2e_ms.mean if summary.e2e_ms else 0.0)
    load = base.concurrency or max(1, round(in_flight / 1e3))
    correction = choice.correction(stack, isl=isl, concurrency=load)
    ttft = _shifted(scaled.summary.ttft_ms, add=correction.ttft_overhead_ms)
    tpot = _shifted(summary.tpot_ms, times=correction.tpot_scale)
    e2e = ttft["mean"] + tpot["mean"] * max(osl - 1, 0) if ttft and tpot else None
    unsettled = next((r for r in (base, scaled) if not r.stationarity.stationary), None)
    return {
        **_method(
            calibrated_record(choice, correction, NATURE_SIMULATED, concurrency=load, base=provider)
        ),
        "ttft_ms": ttft["mean"] if ttft else None,
        "tpot_ms": tpot["mean"] if tpot else None,
        "e2e_ms": e2e,
        "percentiles": {"ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": None},
        "stationary": unsettled is None,
        "stationarity": (unsettled or base).stationarity.reason,
    }


def _method(record: dict[str, str]) -> dict[str, str]:
    return {
        "method": record["method"],
        "nature": record["nature"],
        "method_label": record["label"],
        "method_note": record["method_note"],
    }


def _release(engine: str, version: str) -> EngineRelease | None:
    """The named release of the engine, or its newest in the catalog; None without an engine."""
    if not engine:
        if version:
            raise ValueError("engine_version: give the engine it belongs to")
        return None
    releases = EngineRelease.objects.filter(engine__slug=engine).select_related("engine")
    if version:
        release = releases.filter(version=version).first()
        if release is None:
            raise ValueError(f"engine_version: the catalog has no {engine} release {version!r}")
        return release
    release = releases.order_by("-release_date", "-as_of", "-pk").first()
    if release is None:
        raise ValueError(f"engine: the catalog has no release of {engine}")
    return release


def _config(release: EngineRelease | None, kv_capacity_tokens: int) -> EngineConfig:
    """The release's scheduler; without an engine, the fallback budgets catalog_adapter names."""
    if release is not None:
        return engine_config(release, kv_capacity_tokens=kv_capacity_tokens)
    return EngineConfig(
        max_num_batched_tokens=FALLBACK_BATCHED_TOKENS,
        max_num_seqs=FALLBACK_MAX_SEQS,
        kv_capacity_tokens=kv_capacity_tokens,
        kv_block_size=FALLBACK_BLOCK_SIZE,
    )


def _check_simulation_size(osl: int, concurrency: int | None) -> None:
    steps = MIN_STEADY_REQUESTS * osl / (concurrency or 1)
    if steps > MAX_SIMULATED_STEPS:
        raise ValueError(
            f"osl: {MIN_STEADY_REQUESTS} requests of {osl} output tokens at this load take too "
            "long to simulate here; leave out concurrency and rate_rps for the analytic estimate"
        )
