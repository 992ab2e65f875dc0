"""The stateless estimate behind POST /api/v1/estimate/: catalog rows in, predictions out.

The analytic figures (one typical request at the given concurrency, no queueing) are always
answered. With a `concurrency` (closed loop) or a `rate_rps` (open loop, Poisson) the
continuous-batching simulator runs the replica to a steady state on the same step-time
provider, and its means and percentiles become the answer, with whether the run was
stationary. Every answer names its method and carries an error band per metric (null with the
reason until held-out accuracy is measured) and the nearest published measurements.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from stackselect_domain.slo import request_ms
from stackselect_domain.steptime import NATURE_ANALYTIC, NATURE_SIMULATED
from stackselect_domain.words import grouped
from stackselect_domain.workload import FixedLength, OpenLoopArrivals, Workload

from apps.catalog.models import Accelerator, EngineRelease, ModelSpec
from apps.selections.candidates.capacity import FALLBACK_FRACTION, memory_rule
from apps.selections.catalog_adapter import (
    FALLBACK_BLOCK_SIZE,
    FALLBACK_BUDGETS,
    PREFIX_REUSE_KINDS,
    accelerator_spec,
    default_kv_dtype,
    engine_config,
    interconnect_unknown,
    model_arch,
    scheduler_record,
)
from apps.selections.engine_profiles import engine_profile
from apps.selections.error_bands import error_bands
from apps.selections.estimator import (
    MEMORY_BASIS_TOTAL,
    Parallelism,
    estimate_latency,
    estimate_memory,
    kv_bytes_per_token,
    max_concurrency_at_tpot,
)
from apps.selections.published_nearest import estimate_published
from apps.selections.simulator import EngineConfig, SimulationTooLong
from apps.selections.stack_capability import stack_capability
from apps.selections.steady_state import (
    MIN_STEADY_REQUESTS,
    SteadyRun,
    expected_hit_tokens,
    micro_batch_config,
    run_requests,
    sequences_held,
    shared_prefix_tokens,
    steady_run,
)
from apps.selections.steptime_providers import (
    StackInputs,
    method_note,
    method_record,
    step_time_factory,
)

ESTIMATE_SEED = 20_260_101
# Engine steps one simulated answer may take at most (about 1.5 us each): a run that needs more
# stops there and the request is refused with a field error instead of holding a worker for
# minutes. Counted as the run goes, not guessed beforehand: how many sequences share a step
# depends on the load, and a guess of one per step refused every rate past 4,000 output tokens.
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
    pp: int = 1,
    prefix_share: float = 0.0,
    prefix_tokens: int = 0,
) -> dict[str, Any]:
    """The load (`concurrency` clients or `rate_rps`) is the whole deployment's, as a goal's
    and a published row's are: it splits evenly over the dp = gpu_count / (tp x pp) replicas
    (attention-data-parallel ranks included), and one replica of tp x pp GPUs is simulated with
    its share. A pp-stage replica keeps pp micro-batches in flight
    (steady_state.micro_batch_config): its share, the arrival rate and the sequence limit split
    among them, and each step carries one micro-batch through every stage. `throughput_rps` and
    `max_concurrency_at_tpot_slo` count every replica; `per_replica` states the share.

    `prefix_share` of the prompts open with one shared prefix of `prefix_tokens` tokens, as a
    goal's do: an engine caching prefixes computes a typical prompt less (the analytic figures
    count its expected cache hits, the simulator each request's) and holds the prefix once, so
    its KV cache holds more sequences (`prefix_cache` says how many tokens).

    Memory figures are per GPU of a replica; kv_capacity_tokens is per replica; ValueErrors name the
    field that makes the layout impossible (tp that does not divide the heads, ...), and
    stack_capability.StackCannotRun the fields of a stack the catalog records as unable to run.
    """
    spec = ModelSpec.objects.get(slug=model)
    arch = model_arch(spec)
    hardware = Accelerator.objects.get(slug=accelerator)
    try:
        accel = accelerator_spec(hardware)
    except ValueError as error:  # a figure of the accelerator the catalog lacks, not an input
        raise ValueError(f"accelerator: {error}") from error
    kv_dtype = kv_dtype or default_kv_dtype(spec)
    if dp is not None and dp * tp * pp != gpu_count:
        raise ValueError("dp: tp x pp x dp must equal gpu_count")
    layout = Parallelism(tp=tp, pp=pp, ep=ep, dp=gpu_count // (tp * pp))
    if unlinked := interconnect_unknown(hardware, layout):
        sharded = next(name for name in ("tp", "pp", "ep") if getattr(layout, name) > 1)
        raise ValueError(
            f"{sharded}: {unlinked} Ask for tp, pp and ep of 1 (dp replicas need no link "
            "between them)."
        )
    release = _release(engine, engine_version)
    capability = None
    if release is not None:
        capability = stack_capability(
            release=release,
            backend=backend,
            accelerator=hardware,
            layout=layout,
            precision=precision,
            model=spec,
            kv_dtype=kv_dtype,
        )
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
    )
    rule = memory_rule(release) if release else None
    shared = {**stack.replica(), "isl": isl, "osl": osl}
    memory = estimate_memory(
        **shared,
        gpu_memory_utilization=rule.fraction if rule else FALLBACK_FRACTION,
        memory_basis=rule.basis if rule else MEMORY_BASIS_TOTAL,
    )
    factory = step_time_factory(stack)
    batch = -(-(concurrency or 1) // layout.schedulers)  # one micro-batch's share of the clients
    workload = Workload(
        FixedLength(isl),
        FixedLength(osl),
        OpenLoopArrivals("poisson", 1.0),
        prefix_share=prefix_share,
        prefix_tokens=prefix_tokens,
    )
    config = None
    if memory.fits:  # a scheduler needs a KV cache to hold at least one block
        config = micro_batch_config(_config(release, hardware, memory.kv_capacity_tokens), pp)
    cached = expected_hit_tokens(workload, config, isl) if config else 0.0
    latency = estimate_latency(**shared, concurrency=batch, step_time=factory, cached_tokens=cached)
    analytic = {
        "ttft_ms": latency.ttft_ms,
        "tpot_ms": latency.tpot_ms,
        "e2e_ms": request_ms(latency.ttft_ms, latency.tpot_ms, osl),
    }
    max_concurrency = None
    if tpot_ms is not None:
        per_batch = max_concurrency_at_tpot(
            target_tpot_ms=tpot_ms,
            **shared,
            step_time=factory,
            cached_tokens=cached,
            # what one micro-batch's KV cache holds by the engine's own memory rule
            upper_bound=sequences_held(workload, config) if config else 0,
        )
        max_concurrency = per_batch * layout.schedulers
    provider = factory(batch, isl + osl / 2)
    note = method_note(stack)
    analytic["method_label"] = method_record(provider, NATURE_ANALYTIC)["label"]
    answer: dict[str, Any] = {
        "memory_method": MEMORY_METHOD,
        "weights_gb_per_gpu": memory.weights_gb_per_gpu,
        "kv_bytes_per_token": kv_bytes_per_token(model=arch, kv_dtype=kv_dtype),
        "kv_capacity_tokens": memory.kv_capacity_tokens,
        "fits": memory.fits,
        "fit_reason": memory.reason,
        "max_concurrency_at_tpot_slo": max_concurrency,
        "max_concurrency_method": analytic["method_label"],
        "per_replica": _per_replica(layout, concurrency, rate_rps),
        "engine": engine or None,
        "engine_version": release.version if release else None,
        "backend": backend or None,
        "step_time_basis": engine_profile(engine).basis,
        "capability": capability,
        "analytic": analytic,
        **{metric: analytic[metric] for metric in METRICS},
        **_method(method_record(provider, NATURE_ANALYTIC, note)),
        "percentiles": None,
        "stationary": None,
        "stationarity": None,
        "spread_start": None,
        "prefix_cache": _prefix_cache(workload, config, release, cached, memory.reason),
    }
    wants_simulation = concurrency is not None or rate_rps is not None
    if wants_simulation and config is not None:
        clients = batch if concurrency is not None else None  # one scheduler's closed loop

        def simulated(spread_start_s: float | None = None) -> dict[str, Any]:
            try:
                run = steady_run(
                    workload,
                    n=MIN_STEADY_REQUESTS,
                    seed=ESTIMATE_SEED,
                    step_time=provider,
                    config=config,
                    slo=None,
                    rate_rps=rate_rps / layout.schedulers if rate_rps is not None else None,
                    concurrency=clients,
                    max_steps=MAX_SIMULATED_STEPS,
                    spread_start_s=spread_start_s,
                )
            except SimulationTooLong as error:
                raise ValueError(_too_long(osl, clients, error)) from error
            # every micro-batch serves as the simulated one: an uneven split of the clients
            # counts each client once, not the rounded-up share on every scheduler
            served = layout.schedulers if clients is None else (concurrency or 1) / clients
            return _figures(run, served)

        answer.update(simulated())
        answer.update(_method(method_record(provider, NATURE_SIMULATED, note)))
        answer["scheduler"] = scheduler_record(release, hardware)
        if clients is not None and clients > 1 and answer["e2e_ms"]:
            span_s = answer["e2e_ms"] / 1e3
            answer["spread_start"] = {**simulated(span_s), **_spread_words(clients, span_s)}
    elif wants_simulation:
        answer["stationarity"] = f"not simulated: {memory.reason}"
    answer.update(
        estimate_published(
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
            e2e_ms=answer["e2e_ms"],
            prefix_share=prefix_share,
            prefix_tokens=prefix_tokens,
        )
    )
    banded = METRICS + (("throughput_rps",) if "throughput_rps" in answer else ())
    answer["error_band"] = error_bands(
        answer["method"], banded, engine=engine or None, vendor=hardware.vendor
    )
    if answer["spread_start"]:  # the same method's figures, so the same bands
        answer["spread_start"].update(
            method_label=answer["method_label"], error_band=answer["error_band"]
        )
    return answer


def _figures(run: SteadyRun, served: float) -> dict[str, Any]:
    """A steady run's means, percentiles, throughput over every scheduler and stationarity."""
    summary = run.summary
    percentiles = {
        metric: asdict(getattr(summary, metric)) if getattr(summary, metric) else None
        for metric in METRICS
    }
    return {
        **{metric: figures["mean"] if figures else None for metric, figures in percentiles.items()},
        "percentiles": percentiles,
        "throughput_rps": summary.throughput_rps * served,
        "stationary": run.stationarity.stationary,
        "stationarity": run.stationarity.reason,
    }


def _spread_words(clients: int, span_s: float) -> dict[str, Any]:
    return {
        "span_s": span_s,
        "note": (
            f"The answer's own figures start each scheduler's {clients} clients together: with "
            "every prompt and output the same length they stay in step, and each round's "
            "prompts share steps. These start the same clients one after another over one "
            f"request's time in the system ({span_s:.3g} s), so their prompts mostly arrive "
            "apart. A real benchmark's clients start together and drift apart by its own "
            "jitter, by how much is not known here: expect its TTFT between the two."
        ),
    }


_UNBANDED_SAVING = (
    " The error bands were measured on published rows whose prompts share no prefix, so they do "
    "not measure this saving."
)


def _prefix_reuse_words(config: EngineConfig, held: int, share: float) -> str:
    """How the engine reads a shared prefix: to the token (a radix tree, a partly filled last
    block copied) or in whole blocks, and what its cache holds of it once."""
    block = f"{config.kv_block_size}-token blocks"
    if config.partial_prefix_reuse:
        holds = f"its whole {block} ({held:,} tokens) once" if held else "no whole block of it"
        return (
            f"matches the prefix to the token (a partly filled last block is copied) and holds "
            f"{holds}; {share:.0%} of the prompts read it from there"
        )
    return (
        f"caches the prefix's whole {block} ({held:,} tokens) once, and {share:.0%} of the "
        "prompts read them from there"
    )


def _prefix_cache(
    workload: Workload,
    config: EngineConfig | None,
    release: EngineRelease | None,
    cached: float,
    fit_reason: str,
) -> dict[str, Any] | None:
    """What the engine's prefix cache saves a typical prompt, or why it saves nothing; None
    when no prompt shares a prefix."""
    if workload.prefix_share <= 0:
        return None
    held = shared_prefix_tokens(workload, config) if config else 0
    if config is None:
        why = f"the layout does not fit ({fit_reason})"
    elif release is None:
        why = "no engine is named, so no prefix cache is assumed"
    elif not cached:
        name = f"{release.engine.name} {release.version}"
        if config.prefix_caching:
            why = f"the prefix is shorter than one of {name}'s {config.kv_block_size}-token blocks"
        elif release.prefix_cache_kind in PREFIX_REUSE_KINDS:  # but off by default
            why = (
                f"{name} reuses prefixes only when started with prefix caching on (off by default)"
            )
        else:
            why = f"the catalog records no prefix cache of {name} that reuses one across requests"
    else:
        why = f"{release.engine.name} {release.version} " + _prefix_reuse_words(
            config, held, workload.prefix_share
        )
    return {
        "cached_tokens_per_prompt": round(cached, 1),
        "held_prefix_tokens": held,
        "note": f"A typical prompt reads {cached:,.0f} of its tokens from the cache: {why}."
        + (_UNBANDED_SAVING if cached else ""),
    }


def _per_replica(
    layout: Parallelism, concurrency: int | None, rate_rps: float | None
) -> dict[str, Any]:
    """One replica's GPUs and its share of the load (clients rounded up)."""
    return {
        "replicas": layout.dp,
        "gpus": layout.replica_gpus,
        "concurrency": -(-concurrency // layout.dp) if concurrency is not None else None,
        "rate_rps": rate_rps / layout.dp if rate_rps is not None else None,
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


def _config(
    release: EngineRelease | None, accelerator: Accelerator, kv_capacity_tokens: int
) -> EngineConfig:
    """The release's scheduler on this accelerator; without an engine, the fallback budgets
    catalog_adapter names, caching no prefix (no engine says it would)."""
    if release is not None:
        return engine_config(release, accelerator, kv_capacity_tokens=kv_capacity_tokens)
    return EngineConfig(
        max_num_batched_tokens=FALLBACK_BUDGETS.max_num_batched_tokens,
        max_num_seqs=FALLBACK_BUDGETS.max_num_seqs,
        kv_capacity_tokens=kv_capacity_tokens,
        kv_block_size=FALLBACK_BLOCK_SIZE,
        prefix_caching=False,
    )


def _too_long(osl: int, clients: int | None, error: SimulationTooLong) -> str:
    requests = run_requests(MIN_STEADY_REQUESTS, clients)
    return (
        f"osl: {grouped(requests)} requests of {grouped(osl)} output tokens at this load need "
        f"more than {grouped(error.max_steps)} engine steps, too many to simulate here; more "
        "clients or a higher rate share the steps, or leave out concurrency and rate_rps for the "
        "analytic estimate"
    )
