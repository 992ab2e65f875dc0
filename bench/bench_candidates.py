"""Time candidate generation over the whole curated catalog and print the figures.

Run from the repository root: `python bench/bench_candidates.py [--max-gpus 8]`. It migrates a
throw-away in-memory SQLite database, loads fixtures/catalog/*.json, then, for every model in
the catalog, evaluates every engine release x backend x accelerator x GPU count x parallelism
layout (BF16 weights, a chat-like workload) and prints the time split into catalog loading,
filtering + estimating + simulating, and the counts. Nothing is written but the throw-away DB.

First it times the typical goal (Llama-3.1-8B, every accelerator, up to 8 GPUs) twice: cold,
then again in the same process, where the steady-state searches come from the prediction
cache (keyed by every input). `--typical-only` stops there (what bench/run prints).
"""

from __future__ import annotations

import argparse
import time

from django_env import setup_django  # bench/django_env.py, beside this script

setup_django(DATABASE_URL="sqlite://:memory:", DEBUG="true", LOG_LEVEL="WARNING")

from django.core.management import call_command  # noqa: E402

from apps.catalog.models import ModelSpec  # noqa: E402
from apps.selections.candidates import evaluate  # noqa: E402
from apps.selections.candidates.goal import goal_from_documents  # noqa: E402
from apps.selections.catalog_adapter import CatalogSnapshot  # noqa: E402
from tests.selections.catalog_fixture import load_catalog  # noqa: E402

WORKLOAD = {
    "precision": ["bf16"],
    "isl": {"kind": "lognormal", "median": 1024, "sigma": 0.6},
    "osl": {"kind": "fixed", "value": 256},
    "arrival": {"process": "poisson", "rate_rps": 4},
}
TYPICAL_MODEL = "llama-3.1-8b"
SLO = {"ttft_ms": 1000, "tpot_ms": 60, "percentile": 99, "attainment": 0.95}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-gpus", type=int, default=8)
    parser.add_argument("--typical-only", action="store_true")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    load_catalog()
    constraints = {"max_gpus": args.max_gpus}
    typical = ModelSpec.objects.get(slug=TYPICAL_MODEL)
    for run in ("cold", "cached"):
        start = time.perf_counter()
        goal = goal_from_documents(
            model=typical, workload=WORKLOAD, slo=SLO, constraints=constraints
        )
        evaluation = evaluate(CatalogSnapshot.load(), goal)
        elapsed = time.perf_counter() - start
        simulated = sum(v.estimate["comparison"] == "simulated" for v in evaluation.kept)
        print(
            f"typical goal {run}: {elapsed:.2f} s ({TYPICAL_MODEL}, {len(evaluation.kept)} kept, "
            f"{simulated} ranked by simulation)"
        )
    if args.typical_only:
        return
    total_start = time.perf_counter()
    stacks = kept_total = 0
    for model in ModelSpec.objects.order_by("slug"):
        start = time.perf_counter()
        snapshot = CatalogSnapshot.load()
        loaded = time.perf_counter()
        goal = goal_from_documents(model=model, workload=WORKLOAD, slo=SLO, constraints=constraints)
        evaluation = evaluate(snapshot, goal)
        done = time.perf_counter()
        kept, dropped = len(evaluation.kept), len(evaluation.dropped)
        stacks += kept + dropped
        kept_total += kept
        print(
            f"{model.slug:18} {kept + dropped:6} stacks ({kept:5} kept)  "
            f"catalog {1e3 * (loaded - start):6.0f} ms  evaluate {done - loaded:6.2f} s"
        )
    elapsed = time.perf_counter() - total_start
    print(
        f"all models: {stacks} stacks ({kept_total} kept) in {elapsed:.2f} s, "
        f"{1e6 * elapsed / max(stacks, 1):.0f} us per stack (up to {args.max_gpus} GPUs)"
    )


if __name__ == "__main__":
    main()
