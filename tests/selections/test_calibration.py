"""Calibration: fitted efficiency factors reproduce synthetic measurements."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.selections.efficiency_fit import Measurement, fit_efficiency, predicted_vs_measured
from apps.selections.estimator import (
    AcceleratorSpec,
    Efficiency,
    ModelArch,
    Parallelism,
    estimate_latency,
)

MODEL = ModelArch(8.03, 8.03, 32, 4096, 32, 8, 128)
H100 = AcceleratorSpec("h100", 80, 3.35, 989, 1979, interconnect_gbps=450)
TRUE = Efficiency(compute=0.35, bandwidth=0.55)


def _measured(isl: int, osl: int, cached: float = 0.0, concurrency: int = 1) -> Measurement:
    """A run 'measured' on a device that really has the TRUE factors, `cached` prompt tokens
    of each request served by its prefix cache."""
    truth = estimate_latency(
        model=MODEL,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(),
        isl=isl,
        osl=osl,
        concurrency=concurrency,
        efficiency=TRUE,
        cached_tokens=cached,
    )
    return Measurement(
        model=MODEL,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(),
        isl=isl,
        osl=osl,
        concurrency=concurrency,
        ttft_ms=truth.ttft_ms,
        tpot_ms=truth.tpot_ms,
        cached_tokens=cached,
    )


def test_it_recovers_the_bandwidth_and_compute_factors_of_synthetic_measurements():
    measurements = [_measured(4096, 128), _measured(8192, 256), _measured(2048, 512)]

    fitted = fit_efficiency(measurements, base=Efficiency())

    assert fitted.bandwidth == pytest.approx(TRUE.bandwidth, rel=0.02)
    assert fitted.compute == pytest.approx(TRUE.compute, rel=0.05)
    assert fitted.overhead_ms == Efficiency().overhead_ms


def test_runs_whose_prompts_hit_a_prefix_cache_are_fitted_with_the_hits_counted():
    measurements = [_measured(4096, 128, 3072, 16), _measured(8192, 256, 6144, 16)]

    fitted = fit_efficiency(measurements, base=Efficiency())
    blind = fit_efficiency([replace(m, cached_tokens=0.0) for m in measurements], base=Efficiency())

    assert fitted.compute == pytest.approx(TRUE.compute, rel=0.05)
    # read as if every prompt token were computed, the cache's saving looks like a faster GPU
    assert blind.compute > 1.5 * TRUE.compute


def test_a_metric_without_measurements_keeps_its_base_factor():
    only_tpot = [
        Measurement(
            model=MODEL,
            accel=H100,
            precision="bf16",
            parallelism=Parallelism(),
            isl=1024,
            osl=128,
            concurrency=1,
            tpot_ms=9.0,
        )
    ]

    fitted = fit_efficiency(only_tpot)

    assert fitted.compute == Efficiency().compute
    assert fitted.bandwidth != Efficiency().bandwidth


def test_fitting_nothing_is_an_error_naming_the_measurements():
    with pytest.raises(ValueError, match="measurements"):
        fit_efficiency([])


def test_predicted_and_measured_are_paired_only_where_both_exist():
    rows = predicted_vs_measured(
        {"ttft_ms": 100.0, "tpot_ms": 10.0}, {"tpot_ms": 12.0, "goodput_per_gpu_rps": 3.0}
    )

    assert rows == [{"metric": "tpot_ms", "predicted": 10.0, "measured": 12.0, "ratio": 1.2}]
