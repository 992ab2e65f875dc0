"""Adaptive max-rate search vs a 10-point sweep, against the simulated engine.

Runs the runner's search (runner/stackselect_runner/search.py) on the scenario of
tests/runner/test_search_scenario.py: the simulated engine in a subprocess, the same request
schedule at every rate. It prints each probe, how many load points the search measured against
a 10-point sweep of the same range, and the error of its answer against the true highest rate.
The truth is the request-level simulator on the same schedule and step cost (cheap and
noise-free); the script also measures the engine 3% below and 4% above it to show that the
engine agrees there.

    .venv/bin/python bench/bench_search.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runner"), str(ROOT / "domain")]

from stackselect_domain.ratesearch import RateSearch, SearchSpec  # noqa: E402
from stackselect_runner.engines import SimulatedEngineAdapter  # noqa: E402

from tests.runner.test_search_scenario import (  # noqa: E402
    SEARCH_BOUNDS,
    SLO,
    engine_attainment,
    engine_launch,
    engine_verdict,
    reference_max_rate,
    search_section,
)

SWEEP_POINTS = 10


def sweep_step_error(reference: float) -> float:
    """Worst relative error of a 10-point linear sweep over the same range (its grid step)."""
    low, high = SEARCH_BOUNDS["min_rate_rps"], SEARCH_BOUNDS["max_rate_rps"]
    return (high - low) / (SWEEP_POINTS - 1) / reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-probes", type=int, default=12)
    args = parser.parse_args()

    reference = reference_max_rate()
    search = RateSearch(SearchSpec.from_dict(search_section(args.max_probes)))
    with tempfile.TemporaryDirectory() as workdir:
        launch = engine_launch(Path(workdir))
        with SimulatedEngineAdapter().start(launch) as engine:
            engine.wait_ready(timeout_s=30)
            started = time.perf_counter()
            while (rate := search.next_rate()) is not None:
                verdict = engine_verdict(launch, rate)
                if verdict.passed is None:
                    sys.exit(f"the SLO verdict is undefined at {rate:g} req/s")
                print(search.record(rate, verdict).describe(), flush=True)
            elapsed = time.perf_counter() - started
            below = engine_attainment(launch, reference * 0.97)
            above = engine_attainment(launch, reference * 1.04)

    result = search.result()
    print(result.describe())
    print(f"true highest rate     {reference:.3f} req/s (simulator, same schedule)")
    print(f"engine at -3% / +4%   {below:.3f} / {above:.3f} (target {SLO.attainment})")
    print(f"load points           search {len(result.probes)}, sweep {SWEEP_POINTS}")
    print(f"search wall time      {elapsed:.1f} s")
    if result.rate_rps is not None:
        error = (result.rate_rps - reference) / reference
        print(
            f"answer error          {error:+.2%} (the sweep's grid step alone: "
            f"{sweep_step_error(reference):.0%})"
        )


if __name__ == "__main__":
    main()
