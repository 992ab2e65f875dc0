"""How fast mixture-of-experts layers compute next to dense GEMMs, in AIConfigurator's kernel data.

Run from the repository root: `python bench/expert_gemm_share.py`. The roofline has one compute
rate (`Efficiency.compute`, the share of peak that large dense GEMMs reach) and counts a routed
expert's FLOPs at `Efficiency.expert_compute` of it. This prints where that share comes from:
AIConfigurator's measured kernel tables, shipped in the `aiconfigurator-core` wheel
(systems/data/<system>/{moe,gemm}/<engine>/<version>/*_perf.parquet). For each system and
precision it takes, at a prompt-sized step of TOKENS tokens, the median TFLOPS of the MoE
kernels (balanced routing, the expert shapes of the catalog's MoE models, split over 4 or 8
GPUs) and of the dense GEMMs (M = TOKENS, N and K at least 1,024), and prints their ratio and
the median ratio over the systems and precisions, all computed in this run from the tables.
"""

from __future__ import annotations

import statistics
import sys

import pandas as pd
from django_env import setup_django  # bench/django_env.py, beside this script

setup_django()

from apps.catalog import aiconfigurator_wheel  # noqa: E402
from apps.catalog.loading import fixture_instances  # noqa: E402
from apps.catalog.models import ModelSpec  # noqa: E402

TOKENS = 8192  # the token budget most engines give a prompt-carrying step
SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm")
DTYPES = ("bfloat16", "fp8", "fp8_block")
GPUS = (4, 8)


def moe_tflops(table: pd.DataFrame, shapes: set[tuple[int, int, int]]) -> pd.Series:
    """TFLOPS per GPU of each MoE measurement: routed tokens x (gate, up and down, or up and
    down for a non-gated kernel) x hidden x intermediate, over the GPUs that share it."""
    gated = ~table.kernel_source.str.contains("nongated")
    matrices = gated.map({True: 3, False: 2})
    flops = (
        2 * table.num_tokens * table.topk * matrices * table.hidden_size * table.inter_size
    ) / (table.moe_tp_size * table.moe_ep_size)
    kept = (
        (table.distribution == "balanced")
        & (table.num_tokens == TOKENS)
        & (table.moe_tp_size * table.moe_ep_size).isin(GPUS)
        & pd.Series(
            [
                (h, k, e) in shapes
                for h, k, e in zip(table.hidden_size, table.topk, table.num_experts, strict=True)
            ],
            index=table.index,
            dtype=bool,
        )
    )
    return (flops / (table.latency * 1e-3) / 1e12)[kept]


def gemm_tflops(table: pd.DataFrame) -> pd.Series:
    kept = (table.m == TOKENS) & (table.n >= 1024) & (table.k >= 1024)
    return (2 * table.m * table.n * table.k / (table.latency * 1e-3) / 1e12)[kept]


def _tables(system: str, op: str) -> pd.DataFrame:
    root = aiconfigurator_wheel.package_dir() / "systems" / "data" / system / op
    frames = [pd.read_parquet(path) for path in sorted(root.glob(f"*/*/{op}_perf.parquet"))]
    return pd.concat(frames) if frames else pd.DataFrame()


def main() -> int:
    if not aiconfigurator_wheel.AVAILABLE:
        print(f"cannot run: {aiconfigurator_wheel.UNAVAILABLE_REASON}", file=sys.stderr)
        return 2
    models = fixture_instances(ModelSpec, "models").values()
    shapes = {(m.hidden_size, m.experts_active, m.experts_total) for m in models if m.is_moe}
    version = aiconfigurator_wheel.installed_version()
    print(f"{aiconfigurator_wheel.PACKAGE} {version}, {TOKENS} tokens per step; median TFLOPS")
    print("| system | precision | MoE kernels | dense GEMMs | MoE / dense |")
    print("| --- | --- | --- | --- | --- |")
    ratios = []
    for system in SYSTEMS:
        moe, gemm = _tables(system, "moe"), _tables(system, "gemm")
        for dtype in DTYPES:
            expert = moe_tflops(moe[moe.moe_dtype == dtype], shapes)
            dense = gemm_tflops(gemm[gemm.gemm_dtype == dtype])
            if expert.empty or dense.empty:
                continue
            ratio = expert.median() / dense.median()
            ratios.append(ratio)
            print(
                f"| {system} | {dtype} | {expert.median():.0f} ({len(expert)}) "
                f"| {dense.median():.0f} ({len(dense)}) | {ratio:.2f} |"
            )
    if not ratios:
        print("no system had both tables", file=sys.stderr)
        return 1
    median = statistics.median(ratios)
    print(f"\nmedian MoE / dense over {len(ratios)} system-precisions: {median:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
