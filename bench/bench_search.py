"""Adaptive max-rate search vs a real 10-point sweep, both against one simulated engine.

Runs, on the scenario of tests/runner/test_search_scenario.py (the simulated engine in a
subprocess, the same request schedule at every rate, the runner's SLO verdict), against ONE
engine process:

1. the runner's search (stackselect_domain.ratesearch.RateSearch), probe by probe;
2. a 10-point linear sweep over the search's bounds; its answer is the highest passing point
   below the first failing one;
3. the true highest rate: a fine sweep of the same engine over the bracket the 10-point sweep
   left (its highest pass to its first failure, both measured again), in steps of at most
   FINE_STEP, read with the same rule.

Every load point is measured on the engine in this run; nothing comes from the simulator. It
prints each point, the load points and wall time of each, and both answers' error against the
fine sweep's.

    .venv/bin/python bench/bench_search.py
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runner"), str(ROOT / "domain")]

from stackselect_domain.ratesearch import RateSearch, SearchSpec  # noqa: E402
from stackselect_runner.engines import LaunchSpec, SimulatedEngineAdapter  # noqa: E402

from tests.runner.test_search_scenario import (  # noqa: E402
    SEARCH_BOUNDS,
    engine_launch,
    engine_verdict,
    search_section,
)

SWEEP_POINTS = 10
# The true max's resolution: consecutive rates of the fine sweep are at most 1% apart.
FINE_STEP = 0.01


def measure(
    launch: LaunchSpec, rates: Iterable[float], points: RateSearch, label: str
) -> tuple[RateSearch, float]:
    """Measure each rate on the engine into `points`; return them and the wall time.

    The points are recorded in a RateSearch so that every set of them is read with the
    search's own rule (`bracket`: highest pass below the lowest failure). `rates` may be
    lazy, as the search's `next_rate` is.
    """
    started = time.perf_counter()
    for rate in rates:
        verdict = engine_verdict(launch, rate)
        if verdict.passed is None:
            sys.exit(f"the SLO verdict is undefined at {rate:g} req/s")
        print(f"{label}{points.record(rate, verdict).describe()}", flush=True)
    return points, time.perf_counter() - started


def sweep_rates() -> list[float]:
    low, high = SEARCH_BOUNDS["min_rate_rps"], SEARCH_BOUNDS["max_rate_rps"]
    return [low + index * (high - low) / (SWEEP_POINTS - 1) for index in range(SWEEP_POINTS)]


def fine_rates(low: float, high: float) -> list[float]:
    """Geometric steps of at most FINE_STEP from `low` to `high`, both ends included."""
    steps = math.ceil(math.log(high / low) / math.log1p(FINE_STEP))
    return [low * (high / low) ** (index / steps) for index in range(steps + 1)]


def passes_above_first_failure(points: RateSearch) -> int:
    """How many passes lie above the lowest failure: the noise the bracket rule ignores."""
    _, high = points.bracket()
    assert high is not None
    return sum(probe.passed and probe.rate_rps > high for probe in points.probes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-probes", type=int, default=12)
    args = parser.parse_args()

    spec = SearchSpec.from_dict(search_section(args.max_probes))
    search = RateSearch(spec)
    with tempfile.TemporaryDirectory() as workdir:
        launch = engine_launch(Path(workdir))
        with SimulatedEngineAdapter().start(launch) as engine:
            engine.wait_ready(timeout_s=30)
            _, search_s = measure(launch, iter(search.next_rate, None), search, "")
            result = search.result()
            print(result.describe(), flush=True)
            sweep, sweep_s = measure(launch, sweep_rates(), RateSearch(spec), "sweep ")
            sweep_low, sweep_high = sweep.bracket()
            if sweep_low is None or sweep_high is None:
                sys.exit(f"the 10-point sweep does not bracket the max rate: {sweep.bracket()}")
            print(f"sweep: highest pass {sweep_low:.4g} req/s, first failure {sweep_high:.4g}")
            grid = fine_rates(sweep_low, sweep_high)
            fine, fine_s = measure(launch, grid, RateSearch(spec), "fine ")

    truth, fine_high = fine.bracket()
    if truth is None or fine_high is None:
        sys.exit(f"the fine sweep does not bracket the max rate this time: {fine.bracket()}")
    step = (sweep_high / sweep_low) ** (1 / (len(grid) - 1)) - 1
    print(
        f"true max rate         {truth:.4g} req/s (fine sweep of the engine: {len(grid)} points "
        f"{step:.2%} apart over [{sweep_low:.4g}, {sweep_high:.4g}] req/s; "
        f"{passes_above_first_failure(fine)} pass(es) above its first failure)"
    )
    phases = (("search", search, search_s), ("sweep", sweep, sweep_s), ("fine sweep", fine, fine_s))
    print("load points           " + ", ".join(f"{n} {len(p.probes)}" for n, p, _ in phases))
    print("wall time             " + ", ".join(f"{n} {s:.1f} s" for n, _, s in phases))
    print(
        "time per verdict      " + ", ".join(f"{n} {s / len(p.probes):.2f} s" for n, p, s in phases)
    )
    probes, points = len(search.probes), len(sweep.probes)
    print(
        f"search / sweep        load points {probes / points:.2f}x ({probes} against {points}), "
        f"wall time {search_s / sweep_s:.2f}x ({search_s:.1f} s against {sweep_s:.1f} s)"
    )
    errors = [
        f"{name} {(answer - truth) / truth:+.2%} ({answer:.4g} req/s)"
        if answer is not None
        else f"{name} none"
        for name, answer in (("search", result.rate_rps), ("sweep", sweep_low))
    ]
    print(f"answer error          {', '.join(errors)}, against {truth:.4g} req/s")


if __name__ == "__main__":
    main()
