"""The rate-search scenario shared by the search tests and bench/bench_search.py, and its check.

The true highest rate of the simulated engine comes from the request-level simulator
(apps/selections/simulator.py) run on the SAME request schedule and step cost, bisected to
0.1%. That is affordable (milliseconds per rate, no noise) where a fine sweep of the real-time
engine would cost a minute of two busy cores. It is only valid because the engine follows the
simulator closely on this scenario; the test below checks that just around the answer:
the engine passes 3% below it and fails 4% above it. (Measured while writing this: at a time
scale of 0.2, engine vs simulator attainment was 1.000/1.000 at 35 req/s, 0.917/0.933 at 36 and
0.717/0.717 at 37, with evenly spaced arrivals.)

The schedule has evenly spaced arrivals and seeded random lengths: without Poisson bursts the
attainment falls steeply once the engine saturates, so one request of timing noise moves the
crossing by well under 1% instead of several percent.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from stackselect_domain.slo import SLO as SearchSLO
from stackselect_domain.slo import SLOVerdict
from stackselect_domain.stepcost import StepCost as SimulatorStepCost
from stackselect_domain.workload import Request
from stackselect_runner.engines import LaunchSpec, SimulatedEngineAdapter, free_loopback_port
from stackselect_runner.harness import HarnessSpec, LoadPoint, records_verdict, run_load_point

from apps.selections import simulator

from .conftest import FAST_STEP_COST, MODEL

# Real seconds per modelled second: the engine runs five times faster than modelled.
TIME_SCALE = 0.2
REQUESTS = 48
SEED = 11
MODELLED_TTFT_MS = 400.0
TARGET_ATTAINMENT = 0.9
SEARCH_BOUNDS = {"start_rate_rps": 24.0, "min_rate_rps": 4.0, "max_rate_rps": 160.0}
REFERENCE_TOLERANCE = 0.001
# Measured on the engine's real clock, so the modelled target shrinks with the time scale.
# The percentile equals the attainment, so attainment alone decides (docs/domain.md section 7).
SLO = SearchSLO(ttft_ms=MODELLED_TTFT_MS * TIME_SCALE, attainment=TARGET_ATTAINMENT, percentile=90)
# Effectively unbounded KV memory: the simulated engine does not model memory at all.
SIMULATOR_ENGINE = simulator.EngineConfig(
    max_num_batched_tokens=8192, max_num_seqs=256, kv_capacity_tokens=10**8
)


def schedule(count: int = REQUESTS, seed: int = SEED) -> list[dict[str, Any]]:
    """The job spec's requests: one per second at unit rate, lengths drawn with `seed`."""
    draw = random.Random(seed)
    return [
        {
            "index": index,
            "arrival_s": float(index),
            "input_tokens": draw.randint(96, 160),
            "output_tokens": draw.randint(12, 20),
        }
        for index in range(count)
    ]


def search_section(max_probes: int = 12) -> dict[str, Any]:
    return {
        "slo": {"ttft_ms": SLO.ttft_ms, "attainment": SLO.attainment, "percentile": 90.0},
        **SEARCH_BOUNDS,
        "tolerance": 0.05,
        "max_probes": max_probes,
        "requests_per_probe": REQUESTS,
    }


def simulated_attainment(rate_rps: float) -> float:
    """Attainment the simulator predicts for the schedule at `rate_rps` real requests/s."""
    modelled_rate = rate_rps * TIME_SCALE
    requests = [
        Request(
            item["index"],
            item["arrival_s"] / modelled_rate,
            item["input_tokens"],
            item["output_tokens"],
        )
        for item in schedule()
    ]
    slo = simulator.SLO(ttft_ms=MODELLED_TTFT_MS, attainment=TARGET_ATTAINMENT)
    cost = SimulatorStepCost(**FAST_STEP_COST.as_dict())
    summary = simulator.simulate(requests, cost, SIMULATOR_ENGINE, slo=slo).summary
    assert summary.attainment is not None
    return summary.attainment


def reference_max_rate() -> float:
    """The highest passing rate of the simulator, bisected to REFERENCE_TOLERANCE."""
    low, high = SEARCH_BOUNDS["min_rate_rps"], SEARCH_BOUNDS["max_rate_rps"]
    assert simulated_attainment(low) >= TARGET_ATTAINMENT > simulated_attainment(high)
    while high - low > REFERENCE_TOLERANCE * high:
        middle = (low + high) / 2
        if simulated_attainment(middle) >= TARGET_ATTAINMENT:
            low = middle
        else:
            high = middle
    return low


def engine_launch(work_dir: Path) -> LaunchSpec:
    return LaunchSpec(
        model=MODEL,
        port=free_loopback_port(),
        log_path=work_dir / "engine.log",
        options={"step_cost": FAST_STEP_COST.as_dict(), "time_scale": TIME_SCALE},
    )


def engine_verdict(launch: LaunchSpec, rate_rps: float) -> SLOVerdict:
    """One load point of the schedule on a running engine, as the runner's search judges it."""
    job_spec = {
        "engine": {"model": MODEL},
        "requests": schedule(),
        "harness": {"warmup_requests": 2, "timeout_s": 30},
    }
    spec = HarnessSpec.from_job_spec(job_spec, launch.base_url)
    records = run_load_point(spec, LoadPoint(rate_rps=rate_rps)).records
    return records_verdict(records, SLO)


def engine_attainment(launch: LaunchSpec, rate_rps: float) -> float | None:
    return engine_verdict(launch, rate_rps).attainment


def _best_of_two(launch: LaunchSpec, rate_rps: float) -> float | None:
    """The engine runs on the real clock, and a loaded machine can stall it for a whole load
    point (seen once in CI: 0.10 at 3% below the answer), so a miss is measured once more.
    A stall only lowers attainment, so it can never make the check above the answer pass."""
    first = engine_attainment(launch, rate_rps)
    if first is not None and first >= TARGET_ATTAINMENT:
        return first
    return engine_attainment(launch, rate_rps)


def test_the_simulator_reference_matches_the_simulated_engine_around_the_answer(
    tmp_path: Path,
) -> None:
    reference = reference_max_rate()
    assert SEARCH_BOUNDS["min_rate_rps"] < reference < SEARCH_BOUNDS["max_rate_rps"]
    launch = engine_launch(tmp_path)
    with SimulatedEngineAdapter().start(launch) as engine:
        engine.wait_ready(timeout_s=20)
        below = _best_of_two(launch, reference * 0.97)
        above = engine_attainment(launch, reference * 1.04)
    assert below is not None and below >= TARGET_ATTAINMENT
    assert above is not None and above < TARGET_ATTAINMENT
