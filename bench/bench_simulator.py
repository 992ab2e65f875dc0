"""Time a 10,000-request simulation and print how fast the simulator runs.

Run from the repository root: `python bench/bench_simulator.py [requests]`. The scenario is an
8B dense model in BF16 on one H100 (shapes and specs from shared/data/reference-facts) under a
Poisson load near its capacity, with chunked prefill, prefix sharing and some KV pressure.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stackselect_domain.slo import SLO
from stackselect_domain.workload import Workload, generate_requests

from apps.selections.estimator import (
    AcceleratorSpec,
    ModelArch,
    Parallelism,
    build_step_cost,
    estimate_memory,
)
from apps.selections.simulator import EngineConfig, simulate

LLAMA_8B = ModelArch(
    params_total_b=8.03,
    params_active_b=8.03,
    layers=32,
    hidden_size=4096,
    attention_heads=32,
    kv_heads=8,
    head_dim=128,
)
H100 = AcceleratorSpec("H100 SXM", 80, 3.35, 989, 1979, None, 450)
WORKLOAD = {
    "isl": {"kind": "lognormal", "median": 1000, "sigma": 0.6, "min": 16, "max": 8000},
    "osl": {"kind": "lognormal", "median": 250, "sigma": 0.5, "min": 8, "max": 2000},
    "arrival": {"process": "gamma", "rate_rps": 9, "burstiness": 0.7},
    "prefix_share": 0.3,
    "prefix_tokens": 512,
    "prefix_groups": 8,
}


def main(n: int) -> None:
    memory = estimate_memory(
        model=LLAMA_8B, accel=H100, precision="bf16", parallelism=Parallelism(), isl=1100, osl=300
    )
    cost = build_step_cost(
        model=LLAMA_8B,
        accel=H100,
        precision="bf16",
        parallelism=Parallelism(),
        decode_batch=64,
        context=1250,
    )
    config = EngineConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=256,
        kv_capacity_tokens=memory.kv_capacity_tokens // 4,  # a quarter, to exercise preemption
    )
    requests = generate_requests(Workload.from_dict(WORKLOAD), n, seed=1)
    started = time.perf_counter()
    summary = simulate(requests, cost, config, slo=SLO(ttft_ms=500, tpot_ms=50)).summary
    wall = time.perf_counter() - started
    print(f"requests simulated:     {n}")
    print(f"wall time:              {wall:.2f} s")
    print(f"requests/s simulated:   {n / wall:,.0f}")
    print(f"engine steps/s:         {summary.steps / wall:,.0f} ({summary.steps} steps)")
    print(f"simulated duration:     {summary.duration_s:.1f} s")
    print(f"throughput:             {summary.throughput_rps:.2f} req/s")
    print(f"preemptions:            {summary.preemptions}")
    print(f"TTFT p50/p99 ms:        {summary.ttft_ms.p50:.1f} / {summary.ttft_ms.p99:.1f}")
    print(f"TPOT p50/p99 ms:        {summary.tpot_ms.p50:.2f} / {summary.tpot_ms.p99:.2f}")
    print(f"SLO attainment:         {summary.attainment:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
