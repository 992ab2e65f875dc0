"""Harness overhead: CPU seconds this process spends per request, at concurrency 1.

The simulated engine runs in a subprocess so only the harness's own work is counted
(resource.getrusage of this process: user + system). Compare the figure with other load
generators (guidellm, vLLM's benchmark_serving) on the same schedule.

    .venv/bin/python bench/bench_harness_cpu.py --requests 200 --output-tokens 128
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "runner"))

from stackselect_runner.engines import LaunchSpec, SimulatedEngineAdapter, free_loopback_port
from stackselect_runner.harness import HarnessSpec, LoadPoint, run_load_point

MODEL = "bench-model"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--input-tokens", type=int, default=256)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--time-scale", type=float, default=0.2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        launch = LaunchSpec(
            model=MODEL,
            port=free_loopback_port(),
            log_path=Path(workdir) / "engine.log",
            options={"time_scale": args.time_scale},
        )
        with SimulatedEngineAdapter().start(launch) as engine:
            engine.wait_ready(timeout_s=30)
            requests = [
                {
                    "index": i,
                    "arrival_s": float(i),
                    "input_tokens": args.input_tokens,
                    "output_tokens": args.output_tokens,
                }
                for i in range(args.requests)
            ]
            job_spec = {"engine": {"model": MODEL}, "requests": requests}
            spec = HarnessSpec.from_job_spec(job_spec, launch.base_url)
            before = cpu_seconds()
            result = run_load_point(spec, LoadPoint(concurrency=1))
            spent = cpu_seconds() - before

    summary = result.summary()
    tokens = sum(record.output_tokens for record in result.records)
    print(f"requests            {summary['completed']}/{summary['requests']} ok")
    print(f"wall time           {result.duration_s:.2f} s")
    print(f"harness CPU         {spent:.3f} s")
    print(f"CPU per request     {spent / args.requests * 1e3:.3f} ms")
    print(f"CPU per token       {spent / max(tokens, 1) * 1e6:.1f} us")
    print(f"CPU share of wall   {spent / result.duration_s:.1%}")


if __name__ == "__main__":
    main()
